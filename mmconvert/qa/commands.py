"""``mmconvert qa``: check, review, summary."""

from __future__ import annotations

from pathlib import Path

import click

from ..command_base import reject_votes_option, reports_errors
from ..command_options import backend_options, use_backend
from ..config import show_progress
from .checks import Checker, ocr_statistics
from .events import check_reviewer
from .review import ReviewServer, ReviewState
from .summary import review_summary, review_text


@click.group()
def qa():
    """Quality assurance of a run folder: automatic checks, a review page, a summary.

    Every verdict is an event in the run's qa.jsonl; exports leave rejected items out.
    """


@qa.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--checks", default=",".join(("ocr", "options", "text_layer", "image")),
              show_default=True,
              help="Comma-separated checks: ocr (Tesseract round trip), options (generated "
                   "images show the question and every option), text_layer (page PDFs), "
                   "image (present, unchanged, not blank, no text at the edge).")
@click.option("--jobs", "-j", type=int, default=0,
              help="Tesseract processes at once (default: one per core).")
@click.option("--max-cer", type=float, default=None,
              help="Reject above this OCR error rate instead of the calibrated threshold of "
                   "the renderer and language (mmconvert/qa/thresholds.json).")
@click.option("--thresholds", type=click.Path(exists=True, dir_okay=False),
              help="A thresholds file of your own, in the shipped one's form.")
@click.option("--recheck", is_flag=True,
              help="Check items again that were checked before (a changed result is appended; "
                   "an unchanged one is not).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
@backend_options
@reports_errors
def qa_check(run_dir, checks, jobs, max_cer, thresholds, recheck, progress, executor, address):
    """Run automatic checks on every item of RUN_DIR and append their verdicts to qa.jsonl.

    Items already checked are not checked again (use --recheck), so an interrupted check
    resumes where it stopped.

    \b
    Examples:
      mmconvert qa check runs/demo
      mmconvert qa check runs/logicocr --checks ocr,options --jobs 4
    """
    import os
    import sys

    from tqdm import tqdm

    use_backend(executor, address)
    names = tuple(c.strip() for c in checks.split(",") if c.strip())
    checker = Checker(run_dir, checks=names, jobs=jobs or os.cpu_count() or 1, max_cer=max_cer,
                      thresholds=thresholds, recheck=recheck)
    with tqdm(total=len(checker.rows), unit="item", file=sys.stderr,
              disable=not show_progress(progress)) as bar:
        report = checker.run_all(bar.update)
    flagged = ", ".join(f"{k} {v}" for k, v in sorted(report.flagged.items())) or "none"
    line = (f"{report.checked} item(s) checked, {report.skipped} already checked; flagged: "
            f"{flagged}; {report.appended} event(s) appended to {run_dir / 'qa.jsonl'}")
    if report.ocr_seconds:
        stats = ocr_statistics(report.ocr_seconds)
        line += f"; OCR {stats['mean']:.2f} s/image (mean of {len(report.ocr_seconds)})"
    click.echo(line, err=True)


@qa.command("review")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. There is no login: keep it on this machine.")
@click.option("--port", type=int, default=0, help="Port (default: a free one, printed).")
@click.option("--reviewer", help="Your name, filled in on the page (each browser remembers its "
                                 "own).")
@reject_votes_option
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@reports_errors
def qa_review(run_dir, host, port, reviewer, reject_votes, open_browser):
    """Serve a review page for RUN_DIR: each item's images beside the text they should show and
    the automatic results; accept or reject by button or key (a, r, j/k).

    Each verdict is appended to qa.jsonl at once; several reviewers may work at the same time.
    Stop the server with Ctrl-C.

    \b
    Examples:
      mmconvert qa review runs/demo --reviewer ana
      mmconvert qa review runs/vistw --reject-votes 3
    """
    if reviewer:
        check_reviewer(reviewer)
    server = ReviewServer(ReviewState(run_dir, reject_votes), host, port, reviewer)
    click.echo(f"reviewing {run_dir} ({len(server.state.rows)} items) at {server.url}  "
               "(Ctrl-C stops)", err=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: listening on {host}: anyone who can reach it can vote", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@qa.command("summary")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@reject_votes_option
@reports_errors
def qa_summary(run_dir, as_json, reject_votes):
    """Counts by status and reason, the acceptance rate and per-check figures of RUN_DIR."""
    import json

    result = review_summary(run_dir, reject_votes)
    click.echo(json.dumps(result, ensure_ascii=False, indent=1) if as_json else review_text(result))


def qa_command() -> click.Command:
    return qa
