"""JSONL export: the kept manifest rows, with file paths made relative to the export folder
(default) or absolute. The images stay where they are; a sharded run's (``--store shards``)
are written out into the export under the names its rows record."""

from __future__ import annotations

import os
from pathlib import Path

from ..manifest import dumps
from ..runfolder import read_run_file, write_file
from ..shards import is_sharded
from .source import RunSource


def export_jsonl(source: RunSource, staging: Path, out: Path, name: str, *,
                 paths: str = "relative", **_) -> int:
    """the kept manifest rows, image paths relative to the export (or absolute)"""
    run = source.run.resolve()
    target = out.resolve()

    def moved(rel: str) -> str:
        path = run / rel
        return path.as_posix() if paths == "absolute" else Path(
            os.path.relpath(path, target)).as_posix()

    sharded = is_sharded(source.run)
    if sharded:  # the files come out of the shards, next to the exported manifest
        run = target

    count = 0
    staging.mkdir(parents=True, exist_ok=True)
    with open(staging / "manifest.jsonl", "w", encoding="utf-8") as handle:
        for record in source.records():
            files = source.checked(record)  # read: every image's hash is checked
            if files is None:
                continue
            if sharded:
                for index, data in files.items():
                    write_file(staging, record.row.images[index].path, data)
                for _role, rel in other_files(record.row.raw):
                    write_file(staging, rel, read_run_file(source.run, rel,
                                                           where=f"item {record.id}"))
            row = dict(record.row.raw)  # the line's own JSON, its paths moved
            row["images"] = [{**img, "path": moved(img["path"])} for img in row["images"]]
            for key, rel in other_files(row):
                row[key] = moved(rel) if key == "pdf" else {**row[key], "path": moved(rel)}
            handle.write(dumps(row) + "\n")
            count += 1
    return count


setattr(export_jsonl, "takes", ("paths",))  # noqa: B010 - recorded in export.json


def other_files(row: dict) -> list[tuple[str, str]]:
    """The files a row names besides its images, as (key, path): its layout and original
    (``{"path": …}`` entries) and its PDF (a path)."""
    found = [(key, row[key]["path"]) for key in ("layout", "original")
             if isinstance(row.get(key), dict) and row[key].get("path")]
    return found + ([("pdf", row["pdf"])] if row.get("pdf") else [])
