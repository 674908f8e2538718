"""JSONL export: the kept manifest rows, with file paths made relative to the export folder
(default) or absolute. The images stay where they are."""

from __future__ import annotations

import os
from pathlib import Path

from ..manifest import dumps
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

    count = 0
    staging.mkdir(parents=True, exist_ok=True)
    with open(staging / "manifest.jsonl", "w", encoding="utf-8") as handle:
        for record in source.records():
            if source.checked(record, read=False) is None:
                continue
            row = dict(record.row)
            row["images"] = [{**img, "path": moved(img["path"])} for img in row["images"]]
            for key in ("layout", "original"):
                if isinstance(row.get(key), dict) and row[key].get("path"):
                    row[key] = {**row[key], "path": moved(row[key]["path"])}
            if row.get("pdf"):
                row["pdf"] = moved(row["pdf"])
            handle.write(dumps(row) + "\n")
            count += 1
    return count
