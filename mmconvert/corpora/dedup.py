"""Near-duplicate removal, as LogicOCR does it: exact duplicates by a hash of the normalised
text first, then sentence-embedding cosine similarity (BGE-M3 by default).

Greedy in source order: an item is removed when its nearest *kept* earlier item is at least
``threshold`` similar, so the first item of each cluster survives and every removal names the
kept item it duplicates. The exact search compares blocks of rows with blocks of earlier rows
(memory O(N·d), never an N×N matrix); ``index="faiss"`` searches an inverted-file index of the
kept items instead, for corpora where N² products take too long.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..config import DedupField, DedupOptions
from ..errors import UsageError, needs
from ..executors import executor_for
from ..items import Item
from .sources import hub_reachable, offline

if TYPE_CHECKING:
    import numpy as np

@dataclass
class Removal:
    id: str
    kind: Literal["exact", "near"]
    nearest: str  # the kept item it duplicates
    score: float

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "nearest": self.nearest,
                "score": round(self.score, 6)}


@dataclass
class DedupReport:
    options: dict
    items: int = 0
    kept: list[str] = field(default_factory=list)
    removed: list[Removal] = field(default_factory=list)
    no_text: list[str] = field(default_factory=list)  # kept, never compared

    def as_dict(self) -> dict:
        exact = sum(r.kind == "exact" for r in self.removed)
        return {"options": self.options, "items": self.items, "kept_count": len(self.kept),
                "removed_count": len(self.removed), "exact": exact,
                "near": len(self.removed) - exact, "no_text": self.no_text,
                "kept": self.kept, "removed": [r.as_dict() for r in self.removed]}

    @staticmethod
    def summary_line(data: dict) -> str:
        """One line for the summary, from ``as_dict()`` (also read back from dedup.json)."""
        return (f"dedup: kept {data['kept_count']} of {data['items']} item(s); removed "
                f"{data['exact']} exact and {data['near']} near duplicate(s) (cosine >= "
                f"{data['options']['threshold']} on {data['options']['field']})")


def text_of(item: Item, which: DedupField) -> str:
    if which == "context":
        return item.context or ""
    if which == "question":
        return item.question or ""
    if which == "options":
        return "\n".join(item.options)
    return "\n".join(p for p in (item.context, item.question, *item.options) if p)


def dedup_text(text: str) -> str:
    """What an exact duplicate ignores: Unicode form, case and runs of white space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


def dedup_positions(items: Iterable[Item], options: DedupOptions, *, progress: bool = False,
                    log=None) -> tuple[DedupReport, set[int]]:
    """Greedy dedup of ``items``, read once as they come (a corpus is not held): the report,
    and the positions removed. What is held is one id and one hash an item, the texts of
    the block being embedded, and the embeddings, which the search compares all together."""
    report = DedupReport(options=options.identity())
    ids: list[str] = []
    first_of: dict[bytes, int] = {}
    removed: dict[int, tuple[int, float, Literal["exact", "near"]]] = {}
    candidates: list[int] = []

    def texts() -> Iterator[str]:
        for i, item in enumerate(items):
            ids.append(item.id)
            text = text_of(item, options.field)
            key = dedup_text(text)
            if not key:
                report.no_text.append(item.id)
                continue
            digest = hashlib.sha256(key.encode()).digest()
            if digest in first_of:
                removed[i] = (first_of[digest], 1.0, "exact")
            else:
                first_of[digest] = i
                candidates.append(i)
                yield text

    vectors = embed(texts(), options, progress=progress)
    report.items = len(ids)
    if report.no_text and len(report.no_text) == len(ids) and log:
        log(f"dedup: no item has a {options.field}; choose another --dedup-field")
    if len(candidates) > 1:
        search = near_duplicates_faiss if options.index == "faiss" else near_duplicates
        for local, (nearest, score) in search(vectors, options.threshold,
                                              progress=progress).items():
            removed[candidates[local]] = (candidates[nearest], score, "near")
    for i, item_id in enumerate(ids):
        if i in removed:
            nearest, score, kind = removed[i]
            report.removed.append(Removal(item_id, kind, ids[nearest], score))
        else:
            report.kept.append(item_id)
    return report, set(removed)


# --- embeddings ----------------------------------------------------------------------------


# texts an embedding task: the blocks are cut in item order, the same for every executor, so
# a run embeds the same batches on this machine as on a cluster (the model batches within one)
EMBED_BLOCK = 4096


def embed(texts: Iterable[str], options: DedupOptions, *,
          progress: bool = False) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, made in blocks of ``EMBED_BLOCK``
    (``texts`` is read a block at a time) through the run's executor: in this process (the
    model uses every core, or the GPU), or on a cluster's actors, one per GPU when it has
    GPUs (``executor_for(gpu=True)``). Fewer than two texts load no model: nothing to
    compare."""
    import functools

    import numpy as np

    texts = iter(texts)
    blocks = iter(lambda: list(itertools.islice(texts, EMBED_BLOCK)), [])
    first = next(blocks, [])
    if len(first) < 2:
        return np.zeros((len(first), 0), dtype=np.float32)
    executor = executor_for(0, 2, gpu=True)
    parts = list(executor.map(functools.partial(embedder, options, progress),
                              itertools.chain([first], blocks)))
    # one array, each block let go once copied (a concatenation would hold all twice)
    vectors = np.empty((sum(len(part) for part in parts), parts[0].shape[1]), dtype=np.float32)
    row = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        vectors[row:row + len(part)] = part
        row += len(part)
    return vectors


def embedder(options: DedupOptions, progress: bool = False):
    """A worker that embeds a block of texts (its model loaded once)."""
    import numpy as np

    model = load_model(options.model, options.device, progress=progress)

    def encode(texts: list[str]) -> np.ndarray:
        vectors = model.encode(texts, batch_size=options.batch_size, show_progress_bar=progress,
                               convert_to_numpy=True, normalize_embeddings=True)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    return encode


def default_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def load_model(name: str, device: str | None, *, progress: bool = False):
    """The sentence-transformers model ``name`` (a local folder, or a hub name: from the cache
    at once when the hub does not answer). Without ``progress`` its loading bars are off."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise UsageError(needs("deduplication", "sentence-transformers", "dedup",
                               then=" (install torch first: pip install torch)")) from None
    from contextlib import nullcontext

    if not progress:
        import transformers
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
        transformers.utils.logging.disable_progress_bar()
    local = Path(name).expanduser().exists()
    try:
        with nullcontext() if local or hub_reachable() else offline():
            return SentenceTransformer(name, device=device or default_device())
    except Exception as err:  # noqa: BLE001 - hub, file and model errors come in many classes
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UsageError(f"cannot load embedding model {name!r} ({first[:160]}); pass "
                         "--embedding-model with a local sentence-transformers folder") from None


# --- search ------------------------------------------------------------------------------


def near_duplicates(vectors: np.ndarray, threshold: float, *, block: int = 2048,
                    column_block: int = 4096, progress: bool = False
                    ) -> dict[int, tuple[int, float]]:
    """Exact greedy search: {removed row: (nearest kept earlier row, cosine)}."""
    import numpy as np


    def nearest_earlier(rows, start, removed, best, arg):
        for c_start in range(0, start, column_block):  # earlier blocks, already decided
            c_stop = min(start, c_start + column_block)
            sims = rows @ vectors[c_start:c_stop].T
            sims[:, removed[c_start:c_stop]] = -np.inf
            _merge(sims, c_start, best, arg)

    return _greedy(vectors, threshold, block, progress, nearest_earlier)


def near_duplicates_faiss(vectors: np.ndarray, threshold: float, *, block: int = 2048,
                          lists_per_sqrt_n: float = 3.0, nprobe: int = 20,
                          progress: bool = False) -> dict[int, tuple[int, float]]:
    """Approximate greedy search: the kept items go into a faiss inverted-file index (inner
    product on unit vectors = cosine) of ~3√N lists, ``nprobe`` of which are searched."""
    import numpy as np

    try:
        import faiss
    except ImportError:
        raise UsageError(needs("--dedup-index faiss", "faiss", install="faiss-cpu")) from None
    n, dim = vectors.shape
    nlist = max(1, min(n, int(lists_per_sqrt_n * np.sqrt(n))))  # k-means needs n >= lists
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    train = vectors[:: max(1, n // (40 * nlist))][: 40 * nlist]  # spread over the corpus
    index.train(train)
    index.nprobe = min(nprobe, nlist)

    def nearest_earlier(rows, start, removed, best, arg):
        if index.ntotal:
            scores, ids = index.search(rows, 1)
            found = ids[:, 0] >= 0
            best[found], arg[found] = scores[found, 0], ids[found, 0]

    def add_kept(rows, start, removed):
        kept = np.flatnonzero(~removed[start:start + len(rows)])
        index.add_with_ids(rows[kept], (kept + start).astype(np.int64))

    return _greedy(vectors, threshold, block, progress, nearest_earlier, add_kept)


def _greedy(vectors, threshold, block, progress, nearest_earlier, after_block=None
            ) -> dict[int, tuple[int, float]]:
    """Blocks in order: ``nearest_earlier`` fills each row's best earlier kept match, the block
    is decided against itself, then ``after_block`` sees the decisions."""
    import numpy as np

    n = len(vectors)
    removed = np.zeros(n, dtype=bool)
    out: dict[int, tuple[int, float]] = {}
    bar = _bar(n, progress)
    for start in range(0, n, block):
        rows = vectors[start:start + block]
        best = np.full(len(rows), -np.inf, dtype=np.float32)
        arg = np.full(len(rows), -1, dtype=np.int64)
        nearest_earlier(rows, start, removed, best, arg)
        _resolve_block(rows, start, threshold, best, arg, removed, out)
        if after_block is not None:
            after_block(rows, start, removed)
        bar.update(len(rows))
    bar.close()
    return out


def _merge(sims: np.ndarray, offset: int, best: np.ndarray, arg: np.ndarray) -> None:
    import numpy as np

    j = sims.argmax(axis=1)
    value = sims[np.arange(len(j)), j]
    better = value > best
    best[better] = value[better]
    arg[better] = j[better] + offset


def _resolve_block(rows, start, threshold, best, arg, removed, out) -> None:
    """Decide a block in order: a row is a duplicate of the nearest kept row before it."""
    import numpy as np

    inner = rows @ rows.T
    for i in range(len(rows)):
        if i:
            earlier = inner[i, :i].copy()
            earlier[removed[start:start + i]] = -np.inf
            j = int(earlier.argmax())
            if earlier[j] > best[i]:
                best[i], arg[i] = earlier[j], start + j
        if best[i] >= threshold:
            removed[start + i] = True
            out[start + i] = (int(arg[i]), float(best[i]))


def _bar(total: int, show: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="item", desc="dedup", disable=not show, file=sys.stderr)
