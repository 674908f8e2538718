"""The ``mmconvert`` command: a thin click layer over the library."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from . import __version__
from .errors import MMConvertError


class OneLineError(click.ClickException):
    """A domain error printed as ``Error: <one line>`` with its own exit code."""

    def __init__(self, error: MMConvertError):
        super().__init__(str(error).replace("\n", " "))
        self.exit_code = error.exit_code


def reports_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MMConvertError as err:
            raise OneLineError(err) from None
    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mmconvert")
def main():
    """Turn text benchmarks and corpora into image benchmarks for vision-language models."""



@main.command()
@click.argument("corpus")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Run folder to write (default: runs/<corpus>).")
@click.option("--source", type=click.Path(path_type=Path),
              help="Local copy of the corpus: a file, or a folder with a file per subset "
                   "(hub parquet, save_to_disk, or the original release files).")
@click.option("--subset", "subsets", multiple=True, help="Subset (config) to load; repeatable.")
@click.option("--split", help="Split to load (default: the corpus' own, e.g. test).")
@click.option("--keep-flagged", is_flag=True, default=None,
              help="MMLU-Redux: keep rows whose error_type is not ok.")
@click.option("--sample", type=int, help="Items per subset, sampled with --seed (ReadBench: 35).")
@click.option("--limit", type=int, help="Items overall, after sampling.")
@click.option("--seed", type=int, help="Run seed (default 0).")
@click.option("--ppi", type=float, help="Pixels per inch of the page images (default 92.9).")
@click.option("--render", "render_part", type=click.Choice(["options", "context", "all"]),
              help="What becomes image (default: the corpus' render policy).")
@click.option("--color", type=click.Choice(["gray", "rgb"]), help="PNG colour (default gray).")
@click.option("--pdf", is_flag=True, default=None, help="Keep each item's vector PDF in pdf/.")
@click.option("--prompt-style", type=click.Choice(["cot", "direct"]),
              help="Prompt style of the manifest's prompts (default cot).")
@click.option("--prompt-dir", type=click.Path(path_type=Path),
              help="Folder of prompt templates that replace the shipped ones by name.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]),
              help="On a bad row: stop (fail, default) or record it in skipped.jsonl (skip).")
@click.option("--workers", type=int, default=1, show_default=True,
              help="Processes to render with; 0 = one per core. Output is the same for any N.")
@click.option("--overwrite", is_flag=True, help="Replace a run folder made with other options.")
@click.option("--config", "config_file", type=click.Path(path_type=Path),
              help="YAML file of options (the render config's fields); flags override it.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
@reports_errors
def render(corpus, out, source, subsets, split, keep_flagged, sample, limit, seed, ppi,
           render_part, color, pdf, prompt_style, prompt_dir, on_error, workers, overwrite,
           config_file, progress):
    """Render CORPUS (a registered name, or a JSONL/CSV/Parquet file) as page images.

    \b
    Examples:
      mmconvert render mmlu-redux --ppi 92.9 --sample 35
      mmconvert render mmlu-redux --source path/to/mmlu_redux --out runs/redux
      mmconvert render items.jsonl --render all --pdf
    """
    from .config import RenderConfig, build, load_yaml
    from .converter import convert

    values = load_yaml(config_file) if config_file else {}
    origin = f"--config {config_file}" if config_file else "options"
    values["corpus"] = corpus
    flags = {"source": source, "subsets": list(subsets) or None, "split": split,
             "keep_flagged": keep_flagged, "sample": sample, "limit": limit, "seed": seed,
             "pdf": pdf, "prompt_style": prompt_style, "prompt_dir": prompt_dir,
             "on_error": on_error}
    values.update({k: v for k, v in flags.items() if v is not None})
    page = dict(values.get("page") or {})
    page.update({k: v for k, v in {"ppi": ppi, "render": render_part, "color": color}.items()
                 if v is not None})
    values["page"] = page
    config = build(RenderConfig, values, origin)
    if out is None:
        out = Path("runs") / Path(corpus).stem
    summary = convert(config, out=out, workers=workers, overwrite=overwrite, progress=progress,
                      log=lambda m: click.echo(m, err=True))
    click.echo(summary.line(), err=True)


@main.command("list")
@click.argument("kind", type=click.Choice(["corpora", "renderers"]), required=False)
def list_parts(kind):
    """List the registered corpora and renderers."""
    from .corpora import CORPORA
    from .renderers import RENDERERS

    if kind in (None, "corpora"):
        click.echo("corpora:")
        for name in CORPORA.names():
            cls = CORPORA.get(name)
            click.echo(f"  {name:<14} {cls.hub_id or '':<34} {cls.description}")
        click.echo(f"  {'PATH':<14} {'(a local .jsonl/.csv/.parquet)':<34} generic item schema")
    if kind in (None, "renderers"):
        click.echo("renderers:")
        for name in RENDERERS.names():
            cls = RENDERERS.get(name)
            doc = (cls.__doc__ or "").strip().splitlines()[0]
            click.echo(f"  {name:<14} v{cls.version:<5} {doc}")


if __name__ == "__main__":  # pragma: no cover
    main()
