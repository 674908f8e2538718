"""``mmconvert stats``, the command (its figures are ``stats``'), built when it is used."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from .command_base import reports_errors
from .errors import UsageError, needs
from .stats import as_text, gather, plot
from .tokens import load_tokenizer


@functools.cache
def stats_command() -> click.Command:
    """The ``stats`` command (``cli.LAZY``)."""

    @click.command("stats")
    @click.argument("run_dir", type=click.Path(path_type=Path))
    @click.option("--out", "-o", type=click.Path(path_type=Path),
                  help="Folder for the PNG plots (default: RUN_DIR/stats).")
    @click.option("--json", "as_json", is_flag=True,
                  help="Print the figures as JSON (with per-item and per-image rows).")
    @click.option("--no-plots", is_flag=True, help="Print only; draw no plots.")
    @click.option("--tokenizer", metavar="TOKENIZER",
                  help="A Hugging Face tokenizer (a tokenizer.json, a folder holding one, or a hub "
                       "id already in the local cache) or tiktoken:NAME (o200k_base, from "
                       "tiktoken's cache); nothing is downloaded. Adds each item's "
                       "text tokens and its compression ratio, text tokens / vision tokens, per "
                       "model.")
    @click.option("--models", metavar="M1,M2",
                  help="The models to count vision tokens for, comma-separated, by rule name or "
                       "alias (default: the main families' nine rules, qwen2-vl, qwen3-vl, "
                       "glm-4.1v, internvl2.5, idefics3, pixtral, llava-1.5, gpt-4o and claude; "
                       "name others, such as llava-onevision, llama-4, gemma-3, deepseek-ocr-base "
                       "or gpt-5, to count them too).")
    @reports_errors
    def stats(run_dir, out, as_json, no_plots, tokenizer, models):
        """Pages per item, words per image (LogicOCR's density buckets), image sizes and estimated
        vision tokens per item for common processors (the rules are printed), with PNG plots.

        \b
        Examples:
          mmconvert stats runs/demo
          mmconvert stats runs/logicocr --json > stats.json
          mmconvert stats runs/demo --tokenizer path/to/tokenizer.json
        """
        wanted = [m.strip() for m in models.split(",") if m.strip()] if models else None
        figures = gather(run_dir, load_tokenizer(tokenizer) if tokenizer else None, wanted)
        click.echo(json.dumps(figures, ensure_ascii=False, indent=1) if as_json
                   else as_text(figures))
        if not no_plots:
            try:
                written = plot(figures, out or run_dir / "stats")
            except ImportError:
                raise UsageError(needs("drawing the plots", "matplotlib", "stats",
                                       then=" (or --no-plots)")) from None
            click.echo(f"plots: {', '.join(str(p) for p in written)}", err=True)

    return stats
