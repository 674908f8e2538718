"""Hugging Face exports: parquet shards with an Image feature and a dataset card (``hf``), the
``save_to_disk`` form (``hf-disk``), and the parquet dataset plus an lmms-eval task
(``lmms-eval``).

Rows are written in row groups as they are read, so memory holds one row group of images, not
the dataset.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from .._version import __version__
from ..rows import QuestionRow
from .source import Record, RunSource

SPLIT = "test"
ROW_GROUP_BYTES = 64 << 20
ROW_GROUP_ROWS = 1000
SHARD_BYTES = 512 << 20


def features():
    import datasets
    from datasets import Features, Image, Value

    listed = getattr(datasets, "List", None) or datasets.Sequence
    text = Value("string")
    return Features({
        "id": text, "corpus": text, "subset": text, "split": text, "language": text,
        "category": text, "renderer": text,
        "images": listed(Image()), "text_only_images": listed(Image()),
        "prompt": text, "text_prompt": text, "question": text, "context": text,
        "options": listed(text), "answer": text, "answers": listed(text),
        "metadata": text, "manifest_row": text, "scoring": text,
    })


def flat(record: Record, files: dict[int, bytes]) -> dict[str, Any]:
    """One record as a dataset row; ``metadata`` and ``manifest_row`` are JSON text (their
    shape differs between corpora)."""
    row = record.row

    shown, twins = record.split({i: {"bytes": files[i], "path": Path(entry.path).name}
                                 for i, entry in enumerate(row.images)})
    question = row if isinstance(row, QuestionRow) else None

    answers = record.answers
    return {
        "id": record.id, "corpus": row.corpus, "subset": row.subset,
        "split": row.split, "language": row.language,
        "category": record.category, "renderer": row.renderer.name,
        "images": shown, "text_only_images": twins,
        "prompt": row.prompt, "text_prompt": row.text_prompt,
        "question": question and question.question, "context": question and question.context,
        "options": record.options, "answer": answers[0] if answers else None,
        "answers": answers,
        "metadata": json.dumps(row.metadata, ensure_ascii=False, sort_keys=True),
        "manifest_row": json.dumps({k: v for k, v in row.raw.items() if k != "images"},
                                   ensure_ascii=False, sort_keys=True),
        # what mmconvert_answers.py (beside the data) scores a reply to the item by
        "scoring": json.dumps(record.scoring, ensure_ascii=False, sort_keys=True),
    }


class ParquetShards:
    """Rows appended one at a time, written as row groups of about ``ROW_GROUP_BYTES``, in
    shards of about ``SHARD_BYTES``, named ``<split>-0000i-of-0000n.parquet`` at the end."""

    def __init__(self, folder: Path, schema, shard_bytes: int = SHARD_BYTES):
        self.folder, self.schema, self.shard_bytes = folder, schema, shard_bytes
        self.folder.mkdir(parents=True, exist_ok=True)
        self.paths: list[Path] = []
        self.writer: Any = None  # a pyarrow ParquetWriter, while a shard is open
        self.batch: list[dict[str, Any]] = []
        self.batch_bytes = 0
        self.shard_written = 0
        self.rows = 0

    def add(self, record: dict[str, Any]) -> None:
        size = sum(len(i["bytes"]) for i in record["images"] + record["text_only_images"])
        self.batch.append(record)
        self.batch_bytes += size + 1024
        self.rows += 1
        if self.batch_bytes >= ROW_GROUP_BYTES or len(self.batch) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.batch:
            return
        if self.writer is None:
            path = self.folder / f".shard-{len(self.paths):05d}.parquet"
            self.paths.append(path)
            # image files are compressed already, and rarely repeat: their bytes are stored as
            # they are, without compression or a dictionary
            leaves = [leaf for name in self.schema.names for leaf in _leaves(self.schema, name)]
            self.writer = pq.ParquetWriter(
                path, self.schema,
                compression={leaf: "none" if leaf.endswith(".bytes") else "zstd"
                             for leaf in leaves},
                use_dictionary=[leaf for leaf in leaves if not leaf.endswith(".bytes")])
            self.shard_written = 0
        self.writer.write_table(pa.Table.from_pylist(self.batch, schema=self.schema))
        self.shard_written += self.batch_bytes
        self.batch, self.batch_bytes = [], 0
        if self.shard_written >= self.shard_bytes:
            self.writer.close()
            self.writer = None

    def close(self) -> list[Path]:
        import pyarrow.parquet as pq

        self._flush()
        if self.writer is not None:
            self.writer.close()
        if not self.paths:  # no rows: one empty shard, so the dataset still loads
            path = self.folder / ".shard-00000.parquet"
            pq.write_table(self.schema.empty_table(), path)
            self.paths.append(path)
        named = []
        for index, path in enumerate(self.paths):
            target = self.folder / f"{SPLIT}-{index:05d}-of-{len(self.paths):05d}.parquet"
            path.rename(target)
            named.append(target)
        return named


def _leaves(schema, name: str) -> list[str]:
    """Parquet column paths under a top-level field (``images.list.element.bytes``)."""
    import pyarrow as pa

    def walk(prefix: str, kind) -> list[str]:
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return walk(prefix + ".list.element", kind.value_type)
        if pa.types.is_struct(kind):
            return [leaf for i in range(kind.num_fields)
                    for leaf in walk(f"{prefix}.{kind.field(i).name}", kind.field(i).type)]
        return [prefix]

    return walk(name, schema.field(name).type)


def write_parquet(source: RunSource, folder: Path, shard_bytes: int = SHARD_BYTES) -> int:
    schema = features().arrow_schema
    shards = ParquetShards(folder, schema, shard_bytes)
    for record in source.records():
        files = source.checked(record)
        if files is not None:
            shards.add(flat(record, files))
            source.note_params(record.row)
    shards.close()
    return shards.rows


def export_hf(source: RunSource, staging: Path, out: Path, name: str, **_) -> int:
    """parquet shards with an Image feature and a dataset card (datasets.load_dataset)"""
    count = write_parquet(source, staging / "data")
    (staging / "README.md").write_text(card(source, name, count, out), encoding="utf-8")
    write_template(staging, "inspect_task.py")
    return count


def write_template(staging: Path, name: str, text: str | None = None) -> None:
    """A file of ``exporters/templates`` into the export (``text`` in place of its own)."""
    if text is None:
        text = resources.files("mmconvert.exporters").joinpath("templates").joinpath(
            name).read_text("utf-8")
    (staging / name).write_text(text, encoding="utf-8")


def export_hf_disk(source: RunSource, staging: Path, out: Path, name: str, **_) -> int:
    """the save_to_disk form (datasets.load_from_disk)"""
    import datasets

    work = staging.with_name(staging.name + ".parquet")
    shutil.rmtree(work, ignore_errors=True)
    try:
        count = write_parquet(source, work / "data")
        shards = sorted(str(p) for p in (work / "data").glob("*.parquet"))
        was_enabled = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()
        try:
            dataset = datasets.Dataset.from_parquet(shards, features=features(),
                                                    cache_dir=str(work / "cache"))
            dataset.save_to_disk(str(staging))
        finally:
            if was_enabled:
                datasets.enable_progress_bars()
        del dataset
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (staging / "README.md").write_text(card(source, name, count, out, disk=True),
                                       encoding="utf-8")
    return count


ACCURACY = ("  - metric: accuracy\n    aggregation: mean\n    higher_is_better: true\n"
            "  - metric: parsed\n    aggregation: mean\n    higher_is_better: true")
SPAN_METRICS = "\n".join(f"  - metric: {name}\n    aggregation: !function utils.span_mean\n"
                          "    higher_is_better: true" for name in ("exact_match", "jaccard"))


def export_lmms_eval(source: RunSource, staging: Path, out: Path, name: str, **_) -> int:
    """hf plus lmms-eval task YAMLs (images; text-only twins) and their utils.py"""
    count = export_hf(source, staging, out, name)
    task = "mmconvert_" + "".join(c if c.isalnum() else "_" for c in name).strip("_").lower()
    style = ((source.info.get("config") or {}).get("prompt_style")) or "cot"
    template = resources.files("mmconvert.exporters").joinpath("templates")
    folder = out.resolve()
    data_files = (folder / "data" / f"{SPLIT}-*.parquet").as_posix()
    spans = source.renderer.profile.answer_spans
    tasks = [("", "doc_to_visual", "doc_to_text", "the images and the multimodal prompt"),
             ("_text", "doc_to_visual_none", "doc_to_text_twin",
              "the text-only twin: the same items as text, no image")]
    if source.renderer.profile.twins:
        tasks.append(("_text_image", "doc_to_visual_twin", "doc_to_text",
                      "the text-only image (the text without the picture) with the image "
                      "prompt"))
    for suffix, visual, text, what in tasks:
        yaml = template.joinpath("lmms_eval_task.yaml").read_text("utf-8").format(
            task=task + suffix, what=what, data_files=json.dumps(data_files), split=SPLIT,
            visual=visual, text=text, max_new_tokens=1024 if style == "cot" else 64,
            process="process_spans" if spans else "process_results",
            metrics=SPAN_METRICS if spans else ACCURACY, version=__version__)
        (staging / f"{task}{suffix}.yaml").write_text(yaml, encoding="utf-8")
    utils = template.joinpath("lmms_eval_utils.py").read_text("utf-8")
    marker = "EXPORTED_TO = None  # the folder mmconvert exported to; set by the export"
    utils = utils.replace(marker, f"EXPORTED_TO = {str(folder)!r}  # the folder mmconvert "
                                  "exported to")
    (staging / "utils.py").write_text(utils, encoding="utf-8")
    return count


def card(source: RunSource, name: str, count: int, out: Path, disk: bool = False) -> str:
    """The dataset card: what the images are, how they were made, what QA left out, and how
    to load the export (from the folder it was written to)."""
    config = source.info.get("config") or {}
    renderer = source.renderer.name
    # the renderer's options as its rows recorded them (the config leaves some to the corpus,
    # such as what becomes image)
    params = {**(config.get(renderer) or {}), **(source.params or {})}
    variant = source.info.get("variant")
    left_out = ", ".join(f"{n} {status}" for status, n in sorted(source.left_out.items()))
    load = (f"datasets.load_from_disk({str(out)!r})" if disk else
            f"datasets.load_dataset({str(out)!r})")
    header = "" if disk else (
        "---\nconfigs:\n- config_name: default\n  data_files:\n"
        f"  - split: {SPLIT}\n    path: data/{SPLIT}-*\ntags:\n- mmconvert\n- image-text\n---\n\n")
    lines = [
        f"# {name}", "",
        f"Made with mmconvert {__version__} from the run folder `{source.run.name}`: the "
        f"`{config.get('corpus', '?')}` corpus, drawn by the `{renderer}` renderer"
        + (f", variant {variant['axis']} = {variant['value']}" if variant else "") + ".", "",
        f"- items: {count}" + (f" (left out by QA: {left_out})" if left_out else
                               " (QA left none out)"),
        f"- skipped (missing or damaged in the run): {len(source.skipped)}",
        f"- renderer options: `{json.dumps(params, ensure_ascii=False, sort_keys=True)}`",
        f"- seed: {config.get('seed', 0)}", "",
        "Score replies as `mmconvert eval` does with `score.py PREDICTIONS` (or "
        "`mmconvert_answers.score(row['scoring'], reply)`; `inspect_task.py` is an inspect_ai "
        "task over the export): each row's `scoring` is what it is scored by.", "",
        "Each row holds `images` (what the model is shown), `prompt` (the multimodal prompt) "
        "and its text-only twin `text_prompt` (with `text_only_images` for occlusions), so text "
        "and image runs compare item by item. `answer` is the option letter or the first "
        "accepted answer; `answers` lists all. `metadata` and `manifest_row` (the full recipe) "
        "are JSON text.", "",
        "The text comes from the source corpus, whose license applies.", "",
        "```python", "import datasets", "", f"dataset = {load}", "```", ""]
    return header + "\n".join(lines)
