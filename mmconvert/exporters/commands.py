"""``mmconvert export``: its formats are the registered exporters, built-in and plugin."""

from __future__ import annotations

from pathlib import Path

import click

from ..command_base import reject_votes_option, reports_errors
from . import EXPORTERS
from . import export as run_export


@click.command("export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", required=True, metavar="FORMAT",
              help=f"A registered export format: {', '.join(EXPORTERS.built_in())}, or a "
                   "plugin's (mmconvert list exporters says what each writes).")
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Folder to write (it must not exist or be empty, unless --overwrite).")
@click.option("--name", help="Dataset, TSV and task name (default: the run folder's name).")
@click.option("--accepted-only", is_flag=True,
              help="Leave out pending items too: keep only those a reviewer accepted.")
@reject_votes_option
@click.option("--paths", type=click.Choice(["relative", "absolute"]), default="relative",
              show_default=True, help="jsonl: image paths relative to --out, or absolute.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail",
              show_default=True,
              help="A manifest row that does not parse, or a missing or changed image: stop "
                   "naming it (fail), or record it in export-skipped.jsonl and go on (skip).")
@click.option("--overwrite", is_flag=True, help="Replace what --out holds.")
@reports_errors
def export_cli(run_dir, fmt, out, name, accepted_only, reject_votes, paths, on_error,
               overwrite):
    """Export RUN_DIR for an evaluation harness, leaving out the items rejected in its
    qa.jsonl; every format carries each item's text-only twin (text_prompt).

    \b
    Examples:
      mmconvert export runs/demo --format hf --out exports/demo
      mmconvert export runs/vistw --format vlmevalkit --out exports/vistw --reject-votes 3
      mmconvert export runs/logicocr --format lmms-eval --out tasks/logicocr --accepted-only
    """
    summary = run_export(run_dir, fmt, out, on_error=on_error, reject_votes=reject_votes,
                     accepted_only=accepted_only, paths=paths, name=name, overwrite=overwrite)
    click.echo(summary.line(), err=True)


def export_command() -> click.Command:
    """The command; its ``--format`` names every registered exporter, a plugin's too (the
    module is imported when the command is used, ``cli.lazy_command``)."""
    return export_cli
