"""Text tokens with a real tokenizer, for compression ratios (text tokens over vision tokens).

``--tokenizer`` takes a Hugging Face tokenizer: a ``tokenizer.json`` file, a folder holding one,
or a hub id whose ``tokenizer.json`` is already in the local Hugging Face cache (nothing is
fetched: a hub id not in the cache is a one-line error). It is read with Hugging Face's
``tokenizers`` library, the Rust tokenizer that transformers' fast tokenizers wrap, so a count
is the one the model's own tokenizer gives; special tokens are not counted (the text an image
replaces carries none of its own).

``tiktoken:NAME`` takes one of OpenAI's tiktoken encodings (``o200k_base``: gpt-4o, gpt-4.1,
o-series; ``cl100k_base``: gpt-4, gpt-3.5), read by tiktoken from its cache
(``TIKTOKEN_CACHE_DIR``) only: tiktoken would download a missing BPE file, and here a missing
one is a one-line error naming the file to put there.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError, did_you_mean, first_line, needs
from .manifest import atomic_write, user_cache

FILE = "tokenizer.json"
# the largest tokenizer.json read (the largest models' are about 30 MB)
MAX_TOKENIZER_BYTES = 256 << 20
TIKTOKEN = "tiktoken:"
CUT_MARK = " [...] "  # where ``TextTokenizer.cut`` took out a text's middle


@dataclass
class TextTokenizer:
    """A loaded tokenizer: what ``--tokenizer`` named, the file read and its sha256."""

    name: str
    path: Path
    sha256: str
    tokenizer: Any

    def count(self, text: str | None) -> int:
        """Tokens of ``text``, without special tokens; a tokenizer that fails (or panics: a
        Rust panic is a ``BaseException``, not an ``Exception``) is one line naming it."""
        if not text:
            return 0
        try:
            if self.name.startswith(TIKTOKEN):  # special tokens' text is counted as text
                return len(self.tokenizer.encode_ordinary(text))
            return len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as err:  # noqa: BLE001 - PanicException included
            raise UsageError(f"--tokenizer {self.name}: the tokenizer failed on a text of "
                             f"{len(text):,} characters ({first_line(err, 160, kind=True)})") \
                from None

    def starts(self, text: str) -> list[int]:
        """The character offset in ``text`` where each of its tokens starts."""
        if self.name.startswith(TIKTOKEN):
            return list(self.tokenizer.decode_with_offsets(
                self.tokenizer.encode_ordinary(text))[1])
        return [start for start, _ in
                self.tokenizer.encode(text, add_special_tokens=False).offsets]

    def cut(self, text: str, keep: int, where: str = "head") -> str:
        """``text`` cut, on its own token boundaries, to at most ``keep`` tokens: its first
        ones (``head``), its last ones (``tail``), or both ends around a cut middle
        (``ends``, joined by ``CUT_MARK``, whose tokens count). The cut string is counted
        again (a boundary may tokenize otherwise) and cut shorter until it fits."""
        if keep <= 0 or not text:
            return ""
        starts = self.starts(text)
        if len(starts) <= keep:
            return text
        mark = self.count(CUT_MARK) if where == "ends" else 0
        budget = keep
        while budget > 0:
            if where == "tail":
                out = text[starts[len(starts) - budget]:]
            elif where == "ends" and budget > mark + 1:
                head = (budget - mark + 1) // 2
                tail = budget - mark - head
                out = text[:starts[head]] + CUT_MARK + (text[starts[len(starts) - tail]:]
                                                       if tail else "")
            else:
                out = text[:starts[budget]]
            if self.count(out) <= keep:
                return out
            budget -= 1
        return ""

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


class _NotCached(Exception):
    """tiktoken asked to download a file (it is not in its cache)."""


_TIKTOKEN_LOCK = threading.Lock()
_TIKTOKEN_FILES: dict[str, Path] = {}  # each encoding's cache file, once read


def _load_tiktoken(spec: str) -> TextTokenizer:
    """A tiktoken encoding from tiktoken's cache; its download refused while it loads."""
    name = spec[len(TIKTOKEN):]
    try:
        import tiktoken
        import tiktoken.load
        import tiktoken.registry
    except ImportError:
        raise UsageError(needs(f"--tokenizer {spec}", "tiktoken", "tokens")) from None
    known = tiktoken.list_encoding_names()
    if name not in known:
        raise UsageError(f"--tokenizer {spec}: no tiktoken encoding {name!r} (known: "
                         f"{', '.join(known)}){did_you_mean(name, known)}")
    cache = (os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
             or str(Path(tempfile.gettempdir()) / "data-gym-cache"))
    read: list[str] = []  # the files tiktoken reads from its cache, by URL
    cached, fetch = tiktoken.load.read_file_cached, tiktoken.load.read_file

    def reading(blobpath: str, expected_hash: str | None = None) -> bytes:
        read.append(blobpath)
        return cached(blobpath, expected_hash)

    def refusing(blobpath: str) -> bytes:
        raise _NotCached(blobpath)

    # an encoding tiktoken holds in this process already is taken from it, as below; else
    # the one kept by an earlier process, when it still holds
    kept = None if name in tiktoken.registry.ENCODINGS else _kept_tiktoken(name, cache,
                                                                            tiktoken)
    if kept is not None:
        return TextTokenizer(spec, *kept)
    with _TIKTOKEN_LOCK:  # tiktoken's module functions, swapped while it loads
        tiktoken.load.read_file_cached, tiktoken.load.read_file = reading, refusing
        try:
            encoding = tiktoken.get_encoding(name)
        except _NotCached as missing:
            url = missing.args[0]
            key = hashlib.sha1(url.encode()).hexdigest()
            raise UsageError(f"--tokenizer {spec}: its file {url} is not in tiktoken's cache "
                             f"{cache} (nothing is downloaded: put it there as {key}, or set "
                             "TIKTOKEN_CACHE_DIR to a folder holding it)") from None
        finally:
            tiktoken.load.read_file_cached, tiktoken.load.read_file = cached, fetch
    if read:  # none when tiktoken had the encoding loaded already in this process
        _TIKTOKEN_FILES[name] = Path(cache) / hashlib.sha1(read[0].encode()).hexdigest()
    # the encoding's fingerprint: its ranks in order, however (and whenever) they were read
    ranks = sorted(encoding._mergeable_ranks.items(), key=lambda pair: pair[1])
    digest = hashlib.sha256(b"\n".join(token.hex().encode() for token, _ in ranks))
    source = _TIKTOKEN_FILES.get(name, Path(cache))
    if read:  # read from its file just now: kept for the next process
        _keep_tiktoken(name, source, digest.hexdigest(), encoding, tiktoken)
    return TextTokenizer(spec, source, digest.hexdigest(), encoding)


def _tiktoken_kept(name: str) -> Path:
    return user_cache() / "tiktoken" / f"{name}.marshal"


def _file_key(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns] if path.is_file() else None


def _kept_tiktoken(name: str, cache: str, tiktoken) -> tuple[Path, str, Any] | None:
    """The encoding ``name`` as ``_keep_tiktoken`` kept it (its file, fingerprint and the
    encoding made from its ranks: tiktoken's own parse of its file takes 0.4 s for
    o200k_base, this 0.15 s), when kept by this tiktoken from the same file, unchanged, in
    the same cache folder; else None."""
    import gc
    import marshal

    collecting = gc.isenabled()
    gc.disable()  # 200,000 ranks of bytes and ints, none of them a cycle to look for
    try:
        kept = marshal.loads(_tiktoken_kept(name).read_bytes())
        source = Path(kept["source"])
        if (kept["tiktoken"] != tiktoken.__version__ or source.parent != Path(cache)
                or _file_key(source) != kept["file"]):
            return None
        encoding = tiktoken.Encoding(name, pat_str=kept["pattern"],
                                     mergeable_ranks=kept["ranks"],
                                     special_tokens=kept["special"])
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        return None  # none kept yet, or unreadable: tiktoken reads its file again
    finally:
        if collecting:
            gc.enable()
    _TIKTOKEN_FILES[name] = source
    tiktoken.registry.ENCODINGS.setdefault(name, encoding)  # for the process's next load
    return source, kept["digest"], encoding


def _keep_tiktoken(name: str, source: Path, digest: str, encoding, tiktoken) -> None:
    """Keep the encoding's ranks in mmconvert's cache folder for the next process."""
    import marshal

    key = _file_key(source)
    if key is None:
        return
    try:
        atomic_write(_tiktoken_kept(name), marshal.dumps({
            "tiktoken": tiktoken.__version__, "source": str(source), "file": key,
            "digest": digest, "pattern": encoding._pat_str,
            "ranks": encoding._mergeable_ranks, "special": encoding._special_tokens}),
            durable=False)
    except OSError:
        pass  # a read-only home: tiktoken reads its file each time


def load_tokenizer(spec: str, flag: str = "--tokenizer") -> TextTokenizer:
    """The tokenizer ``spec`` names (a file, a folder, a cached hub id, or ``tiktoken:NAME``);
    one line naming ``flag`` for one that cannot be found or read."""
    try:
        return _load_tokenizer(spec)
    except UsageError as err:
        if flag == "--tokenizer":
            raise
        raise UsageError(str(err).replace("--tokenizer", flag, 1)) from None


def _load_tokenizer(spec: str) -> TextTokenizer:
    if spec.startswith(TIKTOKEN):
        return _load_tiktoken(spec)
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError(needs("--tokenizer", "Hugging Face's tokenizers", "tokens")) from None
    given = Path(spec)
    if given.is_dir():
        path = given / FILE
        if not path.is_file():
            raise UsageError(f"--tokenizer {spec}: the folder holds no {FILE}")
    elif given.is_file():
        path = given
    elif given.exists():
        raise UsageError(f"--tokenizer {spec}: not a regular file (a {FILE}, or a folder "
                         "holding one)")
    elif given.is_symlink():
        raise UsageError(f"--tokenizer {spec}: a symbolic link that leads nowhere, or back to "
                         "itself")
    elif spec.endswith(".json") or spec.startswith((".", "/")):
        raise UsageError(f"--tokenizer {spec}: no such file or folder")
    else:
        cached = _cached(spec)
        if cached is None:
            raise UsageError(f"--tokenizer {spec}: not a file or folder, and no {FILE} of a "
                             f"hub model {spec!r} is in the local Hugging Face cache (nothing "
                             "is downloaded; give a local tokenizer.json)")
        path = cached
    with open(path, "rb") as handle:
        data = handle.read(MAX_TOKENIZER_BYTES + 1)
    if len(data) > MAX_TOKENIZER_BYTES:
        raise UsageError(f"--tokenizer {spec}: {path} is over {MAX_TOKENIZER_BYTES >> 20} MiB, "
                         f"more than any {FILE}")
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
