"""``mmconvert transform RUN --apply STEP …``: a chain of registered transforms applied to
every image of a run, written as a new run folder with the same item ids, prompts and answers;
each row's ``postprocess`` history gains the steps. Resumable and locked like a run."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import resuming
from ..errors import ItemError, MMConvertError, UsageError
from ..executors import executor_for
from ..imaging import decode
from ..progress import progress_bar
from ..rows import SCHEMA, Row
from ..runfolder import Failed, Made, RunFolder, identity_of, source_prints
from .sweep import post, read_entry, read_run
from .transforms import parse_step
from .transforms.base import Transform


@dataclass
class ChainSummary:
    out: Path
    items: int = 0
    made: int = 0
    already_done: int = 0
    skipped: int = 0

    def line(self) -> str:
        if not self.items:
            return f"nothing to do: the run has no items; nothing written to {self.out}"
        text = f"{self.made} item(s) transformed into {self.out}"
        if self.already_done:
            text += f"; {self.already_done} already done"
        if self.skipped:
            text += f"; {self.skipped} skipped (see skipped.jsonl)"
        return text


def chain_row(base: Path, steps: list[Transform], row: Row) -> Made | Failed:
    """One row through the chain."""
    try:
        pictures = [(entry, decode(read_entry(base, row, entry, f"images[{i}].path",
                                              stage="transform")))
                    for i, entry in enumerate(row.images)]
        return Made(post(row.raw, steps, pictures))
    except ItemError as err:
        return Failed(err, row.source_sha256)


def _worker(base: Path, steps: list[Transform]):
    return functools.partial(chain_row, base, steps)


def transform_run(base: Path, out: Path, specs: list[str], *, workers: int = 1,
                  overwrite: bool = False, on_error: str = "fail",
                  progress: bool = False) -> ChainSummary:
    if not specs:
        raise UsageError("give at least one --apply STEP (e.g. --apply blur:1.5)")
    steps = [parse_step(spec) for spec in specs]
    base, out = Path(base), Path(out)
    if out.resolve() == base.resolve():
        raise UsageError(f"--out {out} is the run itself; write the result somewhere else")
    info, rows = read_run(base)
    summary = ChainSummary(out=out, items=len(rows))
    if not rows:
        return summary
    identity = {**identity_of(info.get("config") or {}), "transform": {
        "of": str(base.resolve()), "steps": [step.step({}) for step in steps]}}
    folder = RunFolder(out)
    folder.check(identity, overwrite)
    with folder.lock():
        folder.check(identity, overwrite)
        folder.create(overwrite)

        def info_of(status: str) -> dict[str, Any]:
            return {"status": status, "schema": SCHEMA, "config": identity,
                    "transform": identity["transform"],
                    "base": Path(os.path.relpath(base, out)).as_posix(),
                    "versions": info.get("versions"), "fonts": info.get("fonts"),
                    "items": len(folder.manifest.read())}

        folder.write_info(info_of("running"))
        _, done, _ = resuming.take_stock(folder, {row.id for row in rows})
        # a row of the base run drawn again since (its source changed) is transformed again
        changed = resuming.refresh(folder, source_prints(rows))
        done -= set(changed)
        todo = [row for row in rows if row.id not in done]
        summary.already_done = len(rows) - len(todo)
        try:
            for row, result in zip(todo, _results(base, steps, todo, workers, progress),
                                   strict=True):
                if folder.take(result, on_error, item_id=row.id, stage="transform") == \
                        "made":
                    summary.made += 1
                else:
                    summary.skipped += 1
        except (MMConvertError, OSError):
            folder.mark_failed(info_of("failed"))
            raise
        if changed:
            resuming.reorder(folder, {row.id: n for n, row in enumerate(rows)})
        folder.write_info(info_of("complete"))
    return summary


def _results(base, steps, rows, workers: int, progress: bool):
    executor = executor_for(workers, len(rows))
    yield from progress_bar(executor.map(functools.partial(_worker, base, steps), rows),
                            len(rows), progress)
