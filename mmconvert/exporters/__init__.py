"""Exports of a run folder for evaluation harnesses: ``hf`` (parquet shards and a dataset card),
``hf-disk`` (``save_to_disk``), ``vlmevalkit`` (TSV), ``lmms-eval`` (parquet and a task YAML),
``jsonl`` (the manifest). Every export leaves out the items QA rejected (and, with
``accepted_only``, the pending ones), says how many, and carries each item's text-only twin.

The export is written into a hidden staging folder beside ``out`` and moved into place when it
is complete, so ``out`` never holds half an export.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import MMConvertError, UsageError, first_line
from ..locks import locked
from ..manifest import JsonlLog, write_json
from ..registry import Registry
from .source import RunSource

# each exporter: ``export(source: RunSource, staging: Path, out: Path, name: str, **options)
# -> items written``, writing into ``staging`` (moved to ``out`` when it is complete)
EXPORTERS: Registry = Registry("export format", "mmconvert.exporters")
EXPORTERS.register("hf", "mmconvert.exporters.hf:export_hf")
EXPORTERS.register("hf-disk", "mmconvert.exporters.hf:export_hf_disk")
EXPORTERS.register("lmms-eval", "mmconvert.exporters.hf:export_lmms_eval")
EXPORTERS.register("vlmevalkit", "mmconvert.exporters.vlmevalkit_tsv:export_vlmevalkit")
EXPORTERS.register("jsonl", "mmconvert.exporters.jsonl:export_jsonl")
SKIPPED = "export-skipped.jsonl"


@dataclass
class ExportSummary:
    format: str
    out: Path
    exported: int = 0
    left_out: Counter = field(default_factory=Counter)
    skipped: int = 0
    awaiting_review: int = 0  # kept, but an OCR check flagged them and no reviewer has looked

    def line(self) -> str:
        line = f"{self.exported} item(s) exported as {self.format} to {self.out}; {self.left()}"
        if self.awaiting_review:
            line += (f"; {self.awaiting_review} exported item(s) await review (an OCR check "
                     "flagged them: mmconvert qa review)")
        return line

    def left(self, listed: bool = True) -> str:
        """What QA and the checks left out (``listed``: the skips are in SKIPPED)."""
        left = ", ".join(f"{n} {status}" for status, n in sorted(self.left_out.items()))
        text = f"left out by QA: {left}" if left else "QA left none out"
        if self.skipped:
            text += f"; {self.skipped} skipped" + (f" (see {self.out / SKIPPED})" if listed
                                                   else "")
        return text


def export(run: Path | str, fmt: str, out: Path | str, *, on_error: str = "fail",
           reject_votes: int = 1, accepted_only: bool = False, paths: str = "relative",
           name: str | None = None, overwrite: bool = False) -> ExportSummary:
    """Export the run folder ``run`` as ``fmt`` into the folder ``out``."""
    run, out = Path(run), Path(out)
    writer = EXPORTERS.get(fmt)  # an unknown format: one line with a did-you-mean
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise UsageError(f"{out} exists and is not empty; use --overwrite to replace it")
    if out.resolve() == run.resolve() or run.resolve() in out.resolve().parents:
        raise UsageError(f"--out {out} is inside the run folder; export somewhere else")
    if out.resolve() in run.resolve().parents:
        raise UsageError(f"--out {out} holds the run folder {run}; an export never replaces "
                         "the folder of its source: export somewhere else")
    if overwrite and out.is_dir() and any(out.iterdir()) and not (out / "export.json").is_file():
        raise UsageError(f"{out} is not an mmconvert export (no export.json), so --overwrite "
                         "will not replace it; choose another --out")
    source = RunSource(run, on_error=on_error, reject_votes=reject_votes,
                       accepted_only=accepted_only)
    name = name or run.resolve().name
    # one export at a time into ``out`` (the staging folder beside it is shared)
    with locked(out.with_name(f".{out.name}.lock"), out):
        staging = out.with_name(f".{out.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            count = _written(fmt, writer, source, staging, out, name, paths)
            summary = ExportSummary(fmt, out, count, source.left_out, len(source.skipped),
                                    source.awaiting_review)
            if not count:  # an empty dataset is not a success: nothing is written
                first = (f" (the first: {source.skipped[0].get('reason')})"
                         if source.skipped else "")
                raise MMConvertError(f"nothing to export from {run}: "
                                     f"{summary.left(listed=False)}{first}; no export written "
                                     f"to {out}")
            if source.skipped:
                JsonlLog(staging / SKIPPED).append(*source.skipped)
            if source.scoring:
                write_scorer(staging, source.scoring)
            write_json(staging / "export.json", _record(source, summary, name, paths))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        staging.rename(out)
        return summary


SCORER_FILES = {"mmconvert_answers.py": ("mmconvert.scoring", "answers.py"),
                "vcr_official.py": ("mmconvert.scoring", "vcr_official.py"),
                "lm_eval_scoring.py": ("mmconvert.scoring", "lm_eval_scoring.py"),
                "score.py": ("mmconvert.exporters", "templates/score.py")}


def write_scorer(staging: Path, specs: list[tuple[str, dict[str, Any]]]) -> None:
    """What scores the export's items as ``mmconvert eval`` does, in any environment: the
    scorer itself (``scoring/answers.py`` as ``mmconvert_answers.py``, VCR's
    ``vcr_official.py`` and lm-eval's ``lm_eval_scoring.py``), each item's spec
    (``scoring.jsonl``) and ``score.py``, which scores a file of predictions with them."""
    from importlib import resources

    for name, (package, rel) in SCORER_FILES.items():
        text = resources.files(package).joinpath(rel).read_text("utf-8")
        (staging / name).write_text(text, encoding="utf-8")
    JsonlLog(staging / "scoring.jsonl").append(*({"id": key, "scoring": spec}
                                                 for key, spec in specs))


def _written(fmt: str, writer, source: RunSource, staging: Path, out: Path, name: str,
             paths: str) -> int:
    """The exporter's count of items written; a count that is not a whole number, or (a
    plugin's) a failure other than mmconvert's own error, is one line naming the format and
    its package."""
    label = f"export format {fmt!r} from package {EXPORTERS.provider(fmt)!r}"
    try:
        count = writer(source, staging, out, name, paths=paths)
    except MMConvertError:
        raise
    except Exception as err:  # noqa: BLE001 - a plugin's failure is its one line
        if EXPORTERS.provider(fmt) == "mmconvert":
            raise
        raise MMConvertError(f"{label} failed ({first_line(err, 200, kind=True)}); nothing "
                             f"was written to {out}") from None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise MMConvertError(f"{label} gave {count!r:.40} where a count of the items written "
                             f"is due; nothing was written to {out}")
    return count


def _record(source: RunSource, summary: ExportSummary, name: str,
            paths: str) -> dict[str, Any]:
    return {"format": summary.format, "name": name, "run": str(source.run.resolve()),
            "mmconvert": __version__, "items": summary.exported,
            "left_out": dict(sorted(summary.left_out.items())),
            "qa": {"reject_votes": source.reject_votes, "accepted_only": source.accepted_only,
                   "awaiting_review": summary.awaiting_review},
            "skipped": summary.skipped,
            # the options the format takes (``takes`` on its function), as given
            **({"paths": paths} if "paths" in getattr(EXPORTERS.get(summary.format), "takes",
                                                        ()) else {})}
