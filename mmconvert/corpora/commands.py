"""``mmconvert dedup``: the selection's flags, made from ``config.Selection``."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from ..command_base import progress_option
from ..command_options import CONFIG, command, read_config
from ..config import Selection, build, show_progress
from ..flags import corpus_flags, fill, flag_names, model_flags
from ..manifest import write_json
from ..selection import load_selection


@functools.cache
def dedup_command(corpus_options=None) -> click.Command:
    """``dedup``, with the flags of CORPUS's options (``corpus_options``, its options model)."""
    flags = model_flags(Selection) + corpus_flags(corpus_options)

    def dedup(out, progress, corpus, config_file, **given):
        """Find exact and near-duplicate items of CORPUS and write a report.

        Exact duplicates by a hash of the normalised text, then near duplicates by the cosine
        similarity of sentence embeddings; the first item of each cluster is kept. The report
        lists kept and removed ids, and each removal's nearest kept item and score.
        ``--dedup`` on other commands applies the same removal before sampling.

        \b
        Examples:
          mmconvert dedup logiqa --source LogiQA-dataset
          mmconvert dedup logiqa2 --source LogiQA2.0 --embedding-model path/to/bge-m3
        """
        values, origin = read_config(config_file)
        values = fill(flags, given, {**values, "corpus": corpus})
        values["dedup"] = dict(values.get("dedup") or {})
        config = build(Selection, values, origin, flags=flag_names(flags))
        _, report = load_selection(config, log=lambda m: click.echo(m, err=True),
                                   progress=show_progress(progress))
        out = out or Path("runs") / f"{Path(corpus).stem}-dedup.json"
        write_json(out, {"corpus": config.identity(), **(report.dedup or {})}, indent=1)
        click.echo(f"report written to {out}", err=True)

    return command("dedup", dedup, flags, [
        click.Argument(["corpus"]), CONFIG,
        click.Option(["--out", "-o"], type=click.Path(path_type=Path),
                     help="Report file to write (default: runs/<corpus>-dedup.json)."),
        progress_option("Progress bars (default: when stderr is a terminal).")],
        corpus=(corpus_options, dedup_command))
