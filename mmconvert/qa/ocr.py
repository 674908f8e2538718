"""OCR round trip with Tesseract: read a page image back and measure the character error rate
(CER) against the text that should be in it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..errors import MMConvertError

LANGS = {"en": "eng", "zh-tw": "chi_tra", "zh-hant": "chi_tra", "zh": "chi_sim",
         "zh-cn": "chi_sim", "zh-hans": "chi_sim"}


def tesseract_path() -> str:
    path = shutil.which("tesseract")
    if path is None:
        raise MMConvertError("tesseract is not installed (Debian: scripts/install-debian.sh, "
                             "or apt-get install tesseract-ocr)")
    return path


def read_image(image: Path, language: str = "en", *, psm: int = 6) -> str:
    """Tesseract's text for ``image``; ``psm`` 6 reads it as one block of text."""
    lang = LANGS.get(language.lower(), language)
    result = subprocess.run([tesseract_path(), str(image), "stdout", "-l", lang, "--psm",
                             str(psm)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise MMConvertError(f"tesseract failed on {image}: {result.stderr.strip()[:200]}")
    return result.stdout


def cer(reference: str, hypothesis: str, *, ignore_space: bool = True) -> float:
    """Character error rate: edit distance / reference length (white space dropped by default,
    since OCR line breaks never match the source's)."""
    from rapidfuzz.distance import Levenshtein

    if ignore_space:
        reference = "".join(reference.split())
        hypothesis = "".join(hypothesis.split())
    if not reference:
        return 0.0 if not hypothesis else 1.0
    return Levenshtein.distance(reference, hypothesis) / len(reference)
