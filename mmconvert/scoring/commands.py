"""``mmconvert score``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..command_base import reports_errors
from .vcr import as_json as json_figures
from .vcr import score_run, table


@click.group("score")
def score_group():
    """Score a model's answers against a run."""


@score_group.command("vcr")
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("predictions", type=click.Path(path_type=Path))
@click.option("--protocol", type=click.Choice(["official", "strict"]), default="official",
              show_default=True,
              help="official: VCR's evaluation code (best n-gram by difflib ratio, white-space "
                   "tokens, refusals score 0, mean over spans, items without a prediction left "
                   "out), as its tables, VLMEvalKit and lmms-eval; strict: mmconvert's "
                   "corrected scorer (README).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the scores as JSON (percentages; per item and span in [0, 1]).")
@reports_errors
def score_vcr(source, predictions, protocol, as_json):
    """Exact match and Jaccard index of PREDICTIONS (JSONL rows {"id", "prediction"}) for the
    covered spans of SOURCE, overall and by language and difficulty.

    SOURCE is an ``occlude`` run folder, or an answer-key JSONL (rows {"id", "answers": [span,
    ...], "language": "en"|"zh", "difficulty"?}) for VCR-style sets made elsewhere. A prediction
    is the model's answer as one string; under --protocol strict also a list with one string
    per span, in order.
    """
    result = score_run(source, predictions, protocol)
    click.echo(json.dumps(json_figures(result), ensure_ascii=False, indent=1) if as_json
               else table(result))


def score_command() -> click.Command:
    return score_group
