"""A VLMEvalKit dataset that draws each item with a recipe as the kit asks for it.

``mmconvert export --format vlmevalkit`` writes a static TSV of a rendered run. This class is
its on-the-fly twin: the items come from any corpus mmconvert reads (a name, ``lm-eval:TASK``,
a file in the generic schema, or a list of dicts), each is drawn with the recipe when the kit
calls ``build_prompt`` or ``dump_image`` for it, and the kit's predictions are scored with
mmconvert's own scorer, as ``mmconvert eval`` scores them. In a VLMEvalKit run::

    from mmconvert.harness.vlmevalkit import RenderedDataset
    dataset = RenderedDataset("mmlu-redux", recipe="readbench", source="data/mmlu-redux",
                              limit=200)
    # the kit's infer loop: dataset.data rows -> dataset.build_prompt(row) -> model
    dataset.evaluate("predictions.xlsx")   # {"score": ..., "n": ..., "unscored": ...}

The pages go to ``cache_dir`` (the kit's models take image paths) under their content's hash,
so a changed recipe or item never reuses another's file. ``build_prompt`` sends the item's own
prompt (``prompt="image"``), or its text twin without images (``prompt="text"``). With
VLMEvalKit installed the class is the kit's ``ImageBaseDataset``; without it, the same methods
on a plain object.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config import Selection
from ..errors import UsageError
from ..manifest import atomic_write
from ..recipes import Drawer, load_recipe
from ..scoring.spec import score_row, unscorable

if TYPE_CHECKING:
    from ..recipes import Drawn

try:  # VLMEvalKit's base class, when the kit is installed
    from vlmeval.dataset.image_base import ImageBaseDataset as _Base
except ImportError:
    _Base = object
else:  # a kit other than the tested one is said once, in one line
    import sys

    import vlmeval

    from . import untested

    _line = untested("vlmeval", getattr(vlmeval, "__version__", None))
    if _line:
        print(_line, file=sys.stderr)


class RenderedDataset(_Base):
    """``corpus``'s items (a selection of them: ``source``, ``subsets``, ``split``, ``sample``,
    ``limit``, ``seed``, as ``mmconvert render`` takes them) drawn with ``recipe`` on demand,
    as a VLMEvalKit image dataset named ``name``."""

    TYPE = "VQA"
    MODALITY = "IMAGE"

    def __init__(self, corpus: str | list[dict[str, Any]], recipe: str | Path, *,
                 name: str | None = None, cache_dir: str | Path | None = None,
                 prompt: Literal["image", "text"] = "image", source: str | Path | None = None,
                 subsets: list[str] | None = None, split: str | None = None,
                 sample: int | None = None, limit: int | None = None, seed: int = 0,
                 **selection: Any):
        import pandas

        from ..corpora import resolve
        from ..corpora.files import InMemory
        from ..selection import load_selection

        if prompt not in ("image", "text"):
            raise UsageError(f"prompt: 'image' or 'text', not {prompt!r}")
        found = load_recipe(recipe)
        if isinstance(corpus, list):
            reader: Any = InMemory(corpus)
            label = "items"
        else:
            reader, label = resolve(corpus), corpus
        # named, not only in **selection: VLMEvalKit's run.py passes a --config dataset's
        # keys that the class's signature names, and drops the rest
        chosen = {"source": source, "subsets": subsets, "split": split, "sample": sample,
                  "limit": limit}
        selection.update({k: v for k, v in chosen.items() if v is not None}, seed=seed)
        items, _ = load_selection(Selection(corpus=label, **selection), reader,
                                  log=lambda message: None)
        if not items:
            raise UsageError(f"{label}: no items selected")
        self.corpus, self.recipe, self.prompt = reader, found, prompt
        self.dataset_name = name or f"mmconvert-{Path(label).stem}-{found.name}"
        self.drawer = Drawer(found)
        self.items = {item.id: item for item in items}
        self.cache_dir = Path(cache_dir) if cache_dir else \
            Path(tempfile.gettempdir()) / "mmconvert-vlmevalkit"
        self._rows: dict[str, Drawn] = {}
        self.data = pandas.DataFrame([
            {"index": number, "id": item.id, "question": item.question or "",
             "answer": _answer(item), "category": item.subset}
            for number, item in enumerate(items)])

    @classmethod
    def supported_datasets(cls) -> list[str]:
        return []  # made by name: RenderedDataset(corpus, recipe)

    def _line(self, line: Any) -> Any:
        return self.data.iloc[line] if isinstance(line, int) else line

    def drawn(self, line: Any) -> Drawn:
        """The item of ``line`` drawn with the recipe (kept: the kit asks for the prompt and
        the images apart)."""
        item_id = str(self._line(line)["id"])
        found = self._rows.get(item_id)
        if found is None:
            found = self.drawer.draw(self.items[item_id], corpus=self.corpus)
            self._rows[item_id] = found
        return found

    def dump_image(self, line: Any) -> list[str]:
        """The item's pages as PNG files under ``cache_dir``, named by their content's hash
        (written atomically; a file already there is that same content)."""
        paths = []
        for page in self.drawn(line).pages:
            path = self.cache_dir / f"{hashlib.sha256(page).hexdigest()}.png"
            if not path.is_file():
                atomic_write(path, page)
            paths.append(os.fspath(path))
        return paths

    def build_prompt(self, line: Any) -> list[dict[str, str]]:
        """The kit's message: the pages and the item's own prompt, or its text twin."""
        row = self.drawn(line).row
        if self.prompt == "text":
            return [{"type": "text", "value": row.text_prompt}]
        return [*({"type": "image", "value": path} for path in self.dump_image(line)),
                {"type": "text", "value": row.prompt}]

    def evaluate(self, eval_file: str | Path, **judge_kwargs: Any) -> dict[str, Any]:
        """The kit's predictions file (xlsx, tsv, csv or jsonl: ``index`` or ``id``, and
        ``prediction``) scored as ``mmconvert eval`` scores each item: the score (percent)
        over the items scored; an item that cannot be scored is counted as unscored."""
        table = _table(Path(eval_file))
        by_index = {str(row["index"]): str(row["id"]) for _, row in self.data.iterrows()}
        items: dict[str, dict[str, Any]] = {}
        unscored = 0
        for _, line in table.iterrows():
            key = str(line["id"]) if "id" in line and str(line["id"]) in self.items else \
                by_index.get(str(line.get("index")))
            if key is None:
                continue
            row = self.drawn({"id": key}).row
            if unscorable(row):
                unscored += 1
                continue
            reply = line.get("prediction")
            reply = "" if reply is None or reply != reply else str(reply)
            scored = score_row(row, reply)
            items[key] = {"score": scored.value, "parsed": scored.parsed}
        values = [entry["score"] for entry in items.values()]
        return {"score": round(100 * sum(values) / len(values), 4) if values else None,
                "n": len(values), "unscored": unscored,
                "unparsed": sum(not entry["parsed"] for entry in items.values()),
                "items": items}


def _answer(item) -> str:
    answer = item.answer
    if isinstance(answer, list):
        return answer[0] if answer else ""
    return "" if answer is None else str(answer)


def _table(path: Path):
    import pandas

    fallback = path.with_suffix(".pkl")
    if path.suffix != ".pkl" and not path.exists() and fallback.is_file():
        # the kit's dump writes a .pkl beside the name it was given when that format fails
        # (an .xlsx without openpyxl), and passes on the name it was given
        path = fallback
    if not path.is_file():
        raise UsageError(f"{path}: no predictions file there")
    if path.suffix == ".pkl":
        return pandas.read_pickle(path)
    if path.suffix == ".xlsx":
        return pandas.read_excel(path)
    if path.suffix == ".jsonl":
        return pandas.read_json(path, lines=True, dtype=False)
    return pandas.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",",
                           keep_default_na=False, dtype=str)
