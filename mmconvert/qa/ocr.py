"""OCR round trip with Tesseract: read a page image back and measure the character error rate
(CER) against the text that should be in it."""

from __future__ import annotations

import os
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import MMConvertError
from ..renderers.fonts import IGNORABLE
from ..renderers.scripts import script_of

LANGS = {"en": "eng", "zh-tw": "chi_tra", "zh-hant": "chi_tra", "zh": "chi_sim",
         "zh-cn": "chi_sim", "zh-hans": "chi_sim", "ar": "ara", "fa": "fas", "ur": "urd",
         "he": "heb", "hi": "hin", "bn": "ben", "ta": "tam", "th": "tha", "el": "ell",
         "ru": "rus"}
# the Tesseract language that reads each script (``renderers.scripts``; a script not here, Lao
# or emoji, is read by none), and the script each language reads
READ_BY = {"LATIN": "eng", "GREEK": "ell", "CYRILLIC": "rus", "HEBREW": "heb", "ARABIC": "ara",
           "DEVANAGARI": "hin", "BENGALI": "ben", "TAMIL": "tam", "THAI": "tha",
           "HAN": "chi_sim"}
_SCRIPT_OF_LANG = {**{lang: script for script, lang in READ_BY.items()},
                   "fas": "ARABIC", "urd": "ARABIC", "chi_tra": "HAN"}


@dataclass(frozen=True)
class Word:
    text: str
    left: int
    top: int
    width: int
    height: int
    conf: float


@dataclass
class OcrResult:
    text: str
    words: list[Word]
    seconds: float = 0.0
    psm: int = 6
    scale: int = 1


def tesseract_lang(language: str) -> str:
    return LANGS.get(language.lower(), language)


def ocr_languages(language: str, text: str) -> str:
    """The Tesseract languages that read ``text`` of an item in ``language``: the item's own
    first, then one for each other script among its letters (``eng+chi_sim`` for English
    options with Chinese in them), so that every letter is read by a model that knows it."""
    own = tesseract_lang(language)
    langs = [own]
    seen = {_SCRIPT_OF_LANG.get(own)}
    if own.startswith("chi"):
        # Chinese models read Latin letters and digits themselves (measured: adding eng made
        # CMMLU read worse, 0.021 to 0.085 mean error)
        seen.add("LATIN")
    for char in dict.fromkeys(text):
        if not char.isalpha():
            continue
        script = script_of(char)
        if script not in READ_BY or script in seen:
            continue
        seen.add(script)
        langs.append(READ_BY[script])
    return "+".join(langs)


@lru_cache(maxsize=1)
def installed_languages() -> frozenset[str]:
    out = subprocess.run([tesseract_path(), "--list-langs"], capture_output=True, text=True,
                         check=False).stdout
    return frozenset(line.strip() for line in out.splitlines()[1:] if line.strip())


def require_languages(langs: str) -> None:
    """A one-line error naming the traineddata package of each language Tesseract lacks."""
    missing = [lang for lang in langs.split("+") if lang not in installed_languages()]
    if missing:
        packages = " ".join("tesseract-ocr-" + lang.replace("_", "-") for lang in missing)
        raise MMConvertError(f"Tesseract has no traineddata for {', '.join(missing)}; install "
                             f"{packages} (scripts/install-debian.sh installs them)")


@lru_cache(maxsize=1)
def tesseract_version() -> str:
    out = subprocess.run([tesseract_path(), "--version"], capture_output=True, text=True,
                         check=False).stdout
    return out.split("\n", 1)[0].strip() or "tesseract"


def ocr(image: Path | bytes, language: str = "en", *, psm: int = 6,
        scale: int = 1) -> OcrResult:
    """Tesseract's words (with boxes and confidences, in the image's pixels) and text, lines
    joined by newlines. ``scale`` > 1 enlarges the image first (Lanczos): Tesseract reads
    12 pt type far better at about 300 pixels per inch than at 92.9 (docs/design/qa.md).

    Tesseract runs single-threaded (``OMP_THREAD_LIMIT=1``): callers run several at once."""
    import io
    import time

    from PIL import Image

    lang = tesseract_lang(language)  # an item's language, or Tesseract's own ("eng+chi_sim")
    require_languages(lang)
    start = time.perf_counter()
    # an image file, or its bytes (a sharded run's), which Tesseract reads from stdin
    source, data = (str(image), None) if not isinstance(image, bytes) else ("stdin", image)
    if scale > 1:
        with Image.open(io.BytesIO(image) if isinstance(image, bytes) else image) as opened:
            big = opened.resize((opened.width * scale, opened.height * scale),
                                Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        big.save(buffer, "PNG", compress_level=1)
        source, data = "stdin", buffer.getvalue()
    result = subprocess.run([tesseract_path(), source, "stdout", "-l", lang, "--psm",
                             str(psm), "tsv"], input=data, capture_output=True, check=False,
                            env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    stdout = result.stdout.decode("utf-8", "replace")
    if result.returncode != 0:
        what = "an image" if isinstance(image, bytes) else str(image)
        raise MMConvertError(f"tesseract failed on {what}: "
                             f"{result.stderr.decode('utf-8', 'replace').strip()[:200]}")
    words: list[Any] = []
    lines: list[Any] = []
    key = None
    for row in stdout.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        left, top, width, height = (int(cols[n]) // scale for n in range(6, 10))
        word = Word(cols[11], left, top, width, height, float(cols[10]))
        words.append(word)
        line = tuple(cols[1:5])  # page, block, paragraph, line
        if line != key:
            lines.append([])
            key = line
        lines[-1].append(word.text)
    text = "\n".join(" ".join(line) for line in lines)
    return OcrResult(text, words, time.perf_counter() - start, psm, scale)


def tesseract_path() -> str:
    path = shutil.which("tesseract")
    if path is None:
        raise MMConvertError("tesseract is not installed (Debian: scripts/install-debian.sh, "
                             "or apt-get install tesseract-ocr)")
    return path


# what an OCR engine cannot tell apart in print: curly and straight quotes, the dashes
_LOOKALIKE = str.maketrans({**dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
                            **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
                            **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212",
                                            "-")})


def comparable(text: str, *, fold: bool = True) -> str:
    """``text`` without white space (OCR line breaks never match the source's); with ``fold``
    also NFKC (full-width punctuation) and look-alike quotes and dashes made one."""
    if fold:
        text = unicodedata.normalize("NFKC", text).translate(_LOOKALIKE)
    return "".join(text.split())


def readable(text: str, language: str = "en") -> str:
    """What an OCR check can hold the engine to: NFKC, case folded, the letters, digits and
    combining marks (Indic and Thai vowel signs, viramas, Arabic harakat) of every script;
    not variation selectors or enclosing marks (a keycap), which are no letters.
    Tesseract misreads mathematical and logical symbols, super- and subscripts, number forms
    (Roman numerals, circled digits) and punctuation on perfect pages (see docs/design/qa.md),
    so these are left out of both sides. ``language`` is kept for callers; every script
    counts whatever the item's language."""
    text = "".join(c for c in text if unicodedata.category(c) not in ("Nl", "No")
                   and not unicodedata.decomposition(c).startswith(("<super>", "<sub>")))
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in text if c.isalnum() or (
        unicodedata.category(c) in ("Mn", "Mc") and c not in IGNORABLE))


def errors(reference: str, hypothesis: str, *, free_insertions: bool = False) -> int:
    """Edit distance from ``reference`` to ``hypothesis``; with ``free_insertions`` only what
    the hypothesis lacks or got wrong counts."""
    from rapidfuzz.distance import Levenshtein

    weights = (0, 1, 1) if free_insertions else (1, 1, 1)
    return Levenshtein.distance(reference, hypothesis, weights=weights)


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate: edit distance / reference length, white space dropped."""
    reference, hypothesis = comparable(reference, fold=False), comparable(hypothesis, fold=False)
    if not reference:
        return 0.0 if not hypothesis else 1.0
    return errors(reference, hypothesis) / len(reference)
