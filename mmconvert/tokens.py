"""Text tokens with a real tokenizer, for compression ratios (text tokens over vision tokens).

``--tokenizer`` takes a Hugging Face tokenizer: a ``tokenizer.json`` file, a folder holding one,
or a hub id whose ``tokenizer.json`` is already in the local Hugging Face cache (nothing is
fetched: a hub id not in the cache is a one-line error). It is read with Hugging Face's
``tokenizers`` library, the Rust tokenizer that transformers' fast tokenizers wrap, so a count
is the one the model's own tokenizer gives; special tokens are not counted (the text an image
replaces carries none of its own).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError, first_line

FILE = "tokenizer.json"


@dataclass
class TextTokenizer:
    """A loaded tokenizer: what ``--tokenizer`` named, the file read and its sha256."""

    name: str
    path: Path
    sha256: str
    tokenizer: Any

    def count(self, text: str | None) -> int:
        """Tokens of ``text``, without special tokens."""
        if not text:
            return 0
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def record(self) -> dict[str, str]:
        return {"name": self.name, "file": str(self.path), "sha256": self.sha256}


def _cached(repo_id: str) -> Path | None:
    """The hub id's ``tokenizer.json`` in the local Hugging Face cache, or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, FILE)
    except Exception:  # noqa: BLE001 - an id the hub library refuses: not in the cache
        return None
    return Path(found) if isinstance(found, str) else None


def load_tokenizer(spec: str) -> TextTokenizer:
    """The tokenizer ``spec`` names (a file, a folder, or a cached hub id); one line for one
    that cannot be found or read."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError("--tokenizer needs Hugging Face's tokenizers: pip install "
                         "'mmconvert[tokens]'") from None
    given = Path(spec)
    if given.is_dir():
        path = given / FILE
        if not path.is_file():
            raise UsageError(f"--tokenizer {spec}: the folder holds no {FILE}")
    elif given.is_file():
        path = given
    elif given.exists() or spec.endswith(".json") or spec.startswith((".", "/")):
        raise UsageError(f"--tokenizer {spec}: no such file or folder")
    else:
        path = _cached(spec)
        if path is None:
            raise UsageError(f"--tokenizer {spec}: not a file or folder, and no {FILE} of a "
                             f"hub model {spec!r} is in the local Hugging Face cache (nothing "
                             "is downloaded; give a local tokenizer.json)")
    data = path.read_bytes()
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as err:  # noqa: BLE001 - any file tokenizers cannot read is one line
        raise UsageError(f"--tokenizer {spec}: {path} is not a tokenizer.json "
                         f"({first_line(err, 160)})") from None
    # a tokenizer.json may carry a model's padding and truncation (all-MiniLM-L6-v2's pads
    # and cuts at 128): a count is of the whole text, neither padded nor cut
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return TextTokenizer(spec, path, hashlib.sha256(data).hexdigest(), tokenizer)
