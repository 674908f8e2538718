"""The ``mmconvert`` command: a thin click layer over the library."""

from __future__ import annotations

import errno
import functools
import sys
from pathlib import Path

import click

from . import __version__
from .api.prices import BudgetReached
from .errors import MMConvertError, UsageError
from .postprocess.imaging import RESAMPLING


def one_line(text: str) -> str:
    """``text`` safe for a terminal, on one line: newlines become spaces, and control
    characters from the data (an escape sequence in a CSV header can retitle a terminal) are
    shown as escapes instead of being sent."""
    text = text.replace("\r\n", " ").replace("\n", " ")
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class OneLineError(click.ClickException):
    """A domain error printed as ``Error: <one line>`` with its own exit code."""

    def __init__(self, error: MMConvertError):
        super().__init__(one_line(str(error)))
        self.exit_code = error.exit_code


def reports_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MMConvertError as err:
            raise OneLineError(err) from None
        except OSError as err:  # a read-only folder, a full disk: one line, not a traceback
            raise OneLineError(MMConvertError(disk_error(err))) from None
    return wrapper


def disk_error(err: OSError) -> str:
    where = f"{err.filename}: " if err.filename else ""
    hint = {errno.ENOSPC: " (the disk is full)", errno.EROFS: " (the file system is read-only)",
            errno.EACCES: " (no permission)"}.get(err.errno or 0, "")
    return f"{where}cannot write: {err.strerror or err}{hint}"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mmconvert")
def main():
    """Turn text benchmarks and corpora into image benchmarks for vision-language models."""
    from .executors import use

    use("local")  # each invocation starts local; --executor ray says otherwise



def selection_options(fn):
    """The options that choose items, shared by every command that reads a corpus."""
    options = [
        click.argument("corpus"),
        click.option("--source", type=click.Path(path_type=Path),
                     help="Local copy of the corpus: a file, or a folder with a file per subset "
                          "(hub parquet, save_to_disk, or the original release files)."),
        click.option("--subset", "subsets", multiple=True,
                     help="Subset (config) to load; repeatable."),
        click.option("--split", help="Split to load (default: the corpus' own, e.g. test)."),
        click.option("--keep-flagged", is_flag=True, default=None,
                     help="MMLU-Redux: keep rows whose error_type is not ok."),
        click.option("--language", help="logiqa, logiqa2: en or zh; longbench: en, zh or all; "
                                        "captions: the captions' language."),
        click.option("--max-length", type=int,
                     help="LongBench: keep rows whose length is below this (default 8192, "
                          "through the 4k-8k bin)."),
        click.option("--all-captions", is_flag=True, default=None,
                     help="captions: every caption of an image, not only the first."),
        click.option("--shuffle-options", is_flag=True, default=None,
                     help="Reorder each item's options with a seed from --seed and its id "
                          "(the manifest keeps the original order and answer)."),
        click.option("--dedup", is_flag=True, default=None,
                     help="Remove exact and near-duplicate items before sampling."),
        click.option("--dedup-threshold", type=float,
                     help="Cosine similarity at or above which items are duplicates "
                          "(default 0.85)."),
        click.option("--dedup-field", type=click.Choice(["context", "question", "options", "all"]),
                     help="Text compared for duplicates (default context)."),
        click.option("--embedding-model",
                     help="sentence-transformers model name or local folder "
                          "(default BAAI/bge-m3)."),
        click.option("--dedup-index", type=click.Choice(["exact", "faiss"]),
                     help="exact (default): a blocked search; faiss: an index for large corpora."),
        click.option("--batch-size", type=int, help="Embedding batch size (default 32)."),
        click.option("--device", help="Embedding device (default: cuda or mps when present)."),
        click.option("--sample", type=int,
                     help="Items per subset, sampled with --seed (ReadBench: 35)."),
        click.option("--limit", type=int, help="Items overall, after sampling."),
        click.option("--seed", type=int, help="Run seed (default 0)."),
        click.option("--on-error", type=click.Choice(["fail", "skip"]),
                     help="On a bad row: stop (fail, default) or record it and go on (skip)."),
        click.option("--config", "config_file", type=click.Path(path_type=Path),
                     help="YAML file of options (the config's fields); flags override it."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


SELECTION_FLAGS = ("source", "split", "keep_flagged", "language", "max_length", "all_captions",
                   "shuffle_options", "sample", "limit", "seed", "on_error", "store",
                   "shard_rows")
DEDUP_FLAGS = {"dedup_threshold": "threshold", "dedup_field": "field",
               "embedding_model": "model", "dedup_index": "index", "batch_size": "batch_size",
               "device": "device"}


def selection_values(flags: dict, *, dedup_default: bool = False) -> tuple[dict, str]:
    """Config values from a YAML file and the flags (flags win); the origin for messages."""
    from .config import load_yaml

    config_file = flags.pop("config_file", None)
    values = load_yaml(config_file) if config_file else {}
    origin = f"--config {config_file}" if config_file else "options"
    values["corpus"] = flags.pop("corpus")
    subsets = flags.pop("subsets", ())
    if subsets:
        values["subsets"] = list(subsets)
    values.update({k: flags.pop(k) for k in SELECTION_FLAGS if flags.get(k) is not None})
    dedup = {DEDUP_FLAGS[k]: flags.pop(k) for k in list(DEDUP_FLAGS) if flags.get(k) is not None}
    wanted = flags.pop("dedup", None)
    if wanted or dedup or dedup_default or values.get("dedup"):
        values["dedup"] = {**(values.get("dedup") or {}), **dedup}
    return values, origin


def run_options(fn):
    """Where and how a run is carried out (none of it changes the output)."""
    options = [
        click.option("--workers", type=click.IntRange(min=0), default=1, show_default=True,
                     help="Processes to render with; 0 = one per core. Output is the same for "
                          "any N."),
        click.option("--overwrite", is_flag=True,
                     help="Replace a run folder made with other options."),
        click.option("--progress/--no-progress", default=None,
                     help="Progress bar (default: when stderr is a terminal)."),
        *backend_options(),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def store_options(fn):
    """How a run that makes images stores its files."""
    options = [
        click.option("--store", type=click.Choice(["files", "shards"]), default=None,
                     help="files (default): one file per image, under images/; shards: "
                          "Parquet shards under shards/ (images as Hugging Face Image values, "
                          "readable by datasets.load_dataset('parquet')), the same manifest."),
        click.option("--shard-rows", type=click.IntRange(min=1), default=None,
                     help="Rows a shard, with --store shards (default 1000)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def backend_options():
    """``--executor`` and ``--ray-address``: where the work runs (the output is the same)."""
    def choose(ctx, param, value):
        if param.name == "executor":
            ctx.meta["mmconvert.executor"] = value
        else:
            ctx.meta["mmconvert.ray_address"] = value
        if "mmconvert.executor" in ctx.meta and "mmconvert.ray_address" in ctx.meta:
            from .executors import use

            address = ctx.meta["mmconvert.ray_address"]
            name = ctx.meta["mmconvert.executor"]
            if address and name == "local":
                raise click.UsageError("--ray-address needs --executor ray")
            use(name, address)
        return value

    return [
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
                     show_default=True, expose_value=False, callback=choose,
                     help="local: this machine's processes; ray: Ray Data on a local Ray "
                          "cluster of --workers CPUs, or the one at --ray-address (pip install "
                          "'mmconvert[ray]'). Output is the same."),
        click.option("--ray-address", metavar="HOST:PORT", default=None, expose_value=False,
                     callback=choose, help="Join this Ray cluster (with --executor ray)."),
    ]


def run_and_report(config, out: Path, workers: int, overwrite: bool, progress, api=None):
    """Carry out a run; its notes and summary line go to stderr."""
    from .converter import convert

    summary = convert(config, out=out, workers=workers, overwrite=overwrite, progress=progress,
                      log=lambda m: click.echo(one_line(m), err=True), api=api)
    click.echo(summary.line(), err=True)
    if not summary.selected:  # nothing to do is not a success
        load = summary.load
        dropped = ", ".join(f"{n} {why}" for why, n in load.get("dropped", {}).items())
        raise OneLineError(MMConvertError(
            f"nothing to do: no item of the {load.get('rows', 0)} row(s) read was selected"
            + (f" (dropped: {dropped})" if dropped else "")
            + (f"; {load['skipped']} skipped (see {out / 'skipped.jsonl'})"
               if load.get("skipped") else "")))
    return summary


def set_given(target: dict, **values) -> dict:
    """``target`` updated with the values that were given (not None)."""
    target.update({k: v for k, v in values.items() if v is not None})
    return target


def page_options(ppi: str = "--ppi", prefix: str = ""):
    """The page renderer's options (``render``, and ``sweep`` of a corpus, where the PPI is
    the base's)."""
    def decorate(fn):
        options = [
            click.option(ppi, "ppi", type=float,
                         help=prefix + "Pixels per inch of the page images (default 92.9)."),
            click.option("--render", "render_part",
                         type=click.Choice(["options", "context", "all"]),
                         help=prefix + "What becomes image (default: the corpus' render "
                                       "policy)."),
            click.option("--color", type=click.Choice(["gray", "rgb"]),
                         help=prefix + "PNG colour (default gray)."),
            click.option("--pdf", is_flag=True, default=None,
                         help=prefix + "Keep each item's vector PDF in pdf/."),
            click.option("--crop", type=click.Choice(["content", "bottom", "none"]),
                         help=prefix + "How pages are cut (default content, as ReadBench: each "
                                       "page four margins right of its widest line and the "
                                       "last one below its text; bottom: only the last page's "
                                       "bottom; none: whole A4 pages)."),
            click.option("--line-spacing", type=float,
                         help=prefix + "Line pitch as a multiple of the font's ascent + "
                                       "descent (default 1.2, ReadBench's: 16.09 pt at 12 pt)."),
            click.option("--line-pitch", type=float,
                         help=prefix + "Line pitch in points, in place of --line-spacing "
                                       "(14.4 is 1.2 x the type size)."),
            click.option("--indent", type=click.Choice(["none", "hanging"]),
                         help=prefix + "Where wrapped option lines start (default none, "
                                       "as ReadBench: at the margin; hanging: under the "
                                       "option's text)."),
            click.option("--prompt-style", type=click.Choice(["cot", "direct"]),
                         help=prefix + "Prompt style of the manifest's prompts (default cot)."),
            click.option("--prompt-dir", type=click.Path(path_type=Path),
                         help=prefix + "Folder of prompt templates that replace the shipped "
                                       "ones by name."),
        ]
        for option in reversed(options):
            fn = option(fn)
        return fn
    return decorate


PAGE_GEOMETRY_FLAGS = ("crop", "line_spacing", "line_pitch", "indent")


def page_values(values: dict, ppi, render_part, color, pdf, prompt_style, prompt_dir,
                flags: dict) -> dict:
    """``values`` with the page options that were given (flags over the YAML's); the geometry
    flags are taken out of ``flags``."""
    set_given(values, pdf=pdf, prompt_style=prompt_style, prompt_dir=prompt_dir)
    values["page"] = set_given(dict(values.get("page") or {}), ppi=ppi, render=render_part,
                               color=color, **{k: flags.pop(k, None)
                                               for k in PAGE_GEOMETRY_FLAGS})
    return values


@main.command()
@selection_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Run folder to write (default: runs/<corpus>).")
@page_options()
@store_options
@run_options
@reports_errors
def render(out, ppi, render_part, color, pdf, prompt_style, prompt_dir, workers, overwrite,
           progress, **flags):
    """Render CORPUS (a registered name, or a JSONL/CSV/Parquet file) as page images.

    \b
    Examples:
      mmconvert render mmlu-redux --ppi 92.9 --sample 35
      mmconvert render mmlu-redux --source path/to/mmlu_redux --out runs/redux
      mmconvert render babilong --source tasks_1-20_v1-2 --subset qa1
      mmconvert render logiqa --source LogiQA-dataset --language zh --dedup
      mmconvert render items.jsonl --render all --pdf
    """
    from .config import RenderConfig, build

    corpus = flags["corpus"]
    values, origin = selection_values(flags)
    config = build(RenderConfig, page_values(values, ppi, render_part, color, pdf, prompt_style,
                                             prompt_dir, flags), origin)
    run_and_report(config, out or Path("runs") / Path(corpus).stem, workers, overwrite,
                   progress)


@main.command()
@selection_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Run folder to write (default: runs/<corpus>-occlude).")
@click.option("--difficulty", type=click.Choice(["easy", "hard", "mixed"]),
              help="Band height: easy, hard, or drawn per item (default easy; hidden style: "
                   "mixed).")
@click.option("--style", type=click.Choice(["standard", "hidden"]),
              help="standard (default): caption below, fixed width and font. hidden: caption "
                   "above or below, width 600-1000 px and font drawn per item.")
@click.option("--width", type=int, help="Image and caption width in px (default 300).")
@click.option("--font", help="Caption face: Liberation Sans (default), Liberation Serif, "
                             "Comic Neue, Ubuntu, FiraGO, Noto Sans, Droid Sans Fallback.")
@click.option("--font-size", type=int, help="Type size in px (default 20).")
@click.option("--max-lines", type=int, help="Caption lines kept (default 5).")
@click.option("--max-height", type=int,
              help="Drop pairs whose stacked image is taller (default 900 px).")
@click.option("--ngram", type=int, help="Words per covered span (default 5).")
@click.option("--mask-ratio", type=float,
              help="Most of a caption's tokens covered (default 0.5).")
@click.option("--no-ner", "no_ner", is_flag=True, default=None,
              help="English: choose spans without an entity model (the manifest says ner: "
                   "none).")
@click.option("--prompt-dir", type=click.Path(path_type=Path),
              help="Folder of prompt templates that replace the shipped ones by name.")
@store_options
@run_options
@reports_errors
def occlude(out, difficulty, style, width, font, font_size, max_lines, max_height, ngram,
            mask_ratio, no_ner, prompt_dir, workers, overwrite, progress, **flags):
    """Make VCR-style items of CORPUS (image-caption pairs): each image stacked over its
    caption, 5-word spans of the caption partly covered by white bands, and a text-only image
    of the same size.

    \b
    Examples:
      mmconvert occlude captions --source path/to/coco --split val2017 --difficulty hard
      mmconvert occlude captions --source pairs.tsv --language zh
      mmconvert occlude captions --source wit.parquet --style hidden --workers 0
    """
    from .config import OccludeConfig, build

    corpus = flags["corpus"]
    values, origin = selection_values(flags)
    set_given(values, prompt_dir=prompt_dir)
    values["occlude"] = set_given(
        dict(values.get("occlude") or {}), difficulty=difficulty, style=style, width=width,
        font=font, font_size=font_size, max_lines=max_lines, max_height=max_height,
        ngram=ngram, mask_ratio=mask_ratio, ner=False if no_ner else None)
    config = build(OccludeConfig, values, origin)
    run_and_report(config, out or Path("runs") / f"{Path(corpus).stem}-occlude", workers,
                   overwrite, progress)


@main.command()
@selection_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Run folder to write (default: runs/<corpus>-generate).")
@click.option("--image-model", help="Image-generation model (default gpt-image-1).")
@click.option("--chat-model", help="Chat model that chooses the layout and writes background "
                                   "depictions (default gpt-4o-mini).")
@click.option("--layout", help="auto (the chat model chooses, default), background, "
                               "interleaved, or tokens:N (background for items over N tokens, "
                               "LogicOCR: tokens:250).")
@click.option("--font", type=click.Choice(["random", "handwritten", "standard"]),
              help="Font style; random (default) draws it per item from --seed.")
@click.option("--size", type=click.Choice(["auto", "1536x1024", "1024x1536", "1024x1024"]),
              help="Image size; auto (default): 1536x1024 for items over 250 tokens, else "
                   "1024x1536.")
@click.option("--quality", type=click.Choice(["low", "medium", "high", "auto"]),
              help="Image quality (default high).")
@click.option("--max-side", type=int, help="Longer side of the benchmark JPEG (default 1024).")
@click.option("--jpeg-quality", type=int, help="Benchmark JPEG quality (default 95).")
@click.option("--prompt-style", type=click.Choice(["cot", "direct"]),
              help="Style of the manifest's evaluation prompts (default cot).")
@click.option("--prompt-dir", type=click.Path(path_type=Path),
              help="Folder of prompt templates that replace the shipped ones by name "
                   "(generate_<layout>_<font>.txt, generate_layout.txt, "
                   "generate_depiction.txt, ...).")
@click.option("--image-base-url", help="Image API base URL (default: OPENAI_BASE_URL, else "
                                       "OpenAI's).")
@click.option("--chat-base-url", help="Chat API base URL, any OpenAI-compatible server "
                                      "(e.g. a local vLLM).")
@click.option("--api-key-env", help="Environment variable holding the API key (default "
                                    "OPENAI_API_KEY). Keys are never written anywhere.")
@click.option("--chat-api-key-env", help="Variable holding the chat server's key (default: "
                                         "--api-key-env; a local server needs none).")
@click.option("--concurrency", type=int, help="Requests in flight at once (default 8).")
@click.option("--budget", type=float,
              help="USD this invocation may spend; it stops before a request would pass it.")
@click.option("--price-table", type=click.Path(path_type=Path),
              help="JSON price table whose models replace the shipped prices.")
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="Response cache (default $MMCONVERT_CACHE, else "
                   "~/.cache/mmconvert/responses).")
@click.option("--max-tries", type=int, help="Tries per request (default 5).")
@click.option("--timeout", type=float, help="Seconds per try (default 300).")
@click.option("--retry-failed", is_flag=True, default=None,
              help="Try again the items whose requests failed, were refused or came back "
                   "malformed.")
@click.option("--dry-run", is_flag=True,
              help="Print the prompts, counts and estimated cost; call nothing, write nothing.")
@click.option("--overwrite", is_flag=True, help="Replace a run folder made with other options "
                                                "(the response cache is kept).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
@store_options
@reports_errors
@backend_options()[0]
@backend_options()[1]
def generate(out, image_model, chat_model, layout, font, size, quality, max_side, jpeg_quality,
             prompt_style, prompt_dir, image_base_url, chat_base_url, api_key_env,
             chat_api_key_env, concurrency, budget, price_table, cache_dir, max_tries, timeout,
             retry_failed, dry_run, overwrite, progress, **flags):
    """Draw each item of CORPUS (context, question and options) with an image-generation API,
    LogicOCR-style: a background scene or text beside an illustration, handwritten or printed.

    Every response is cached before it is used, so a re-run, a crash or --overwrite never pays
    for a response twice. The returned image is kept in originals/; the benchmark copy is a JPEG
    in images/.

    \b
    Examples:
      mmconvert generate logiqa --source LogiQA-dataset --dedup --dry-run
      mmconvert generate logiqa --source LogiQA-dataset --layout tokens:250 --budget 20
      mmconvert generate logiqa2 --chat-base-url http://localhost:8000/v1 \\
          --chat-model Qwen/Qwen2.5-14B-Instruct
    """
    from .config import ApiOptions, GenerateConfig, build
    from .converter import preview

    corpus = flags["corpus"]
    values, origin = selection_values(flags)
    api_values = set_given(dict(values.pop("api", None) or {}), image_base_url=image_base_url,
                           chat_base_url=chat_base_url, api_key_env=api_key_env,
                           chat_api_key_env=chat_api_key_env, concurrency=concurrency,
                           budget=budget, price_table=price_table, cache_dir=cache_dir,
                           max_tries=max_tries, timeout=timeout, retry_failed=retry_failed)
    set_given(values, prompt_style=prompt_style, prompt_dir=prompt_dir)
    values["generate"] = set_given(
        dict(values.get("generate") or {}), image_model=image_model, chat_model=chat_model,
        layout=layout, font=font, size=size, quality=quality, max_side=max_side,
        jpeg_quality=jpeg_quality)
    config = build(GenerateConfig, values, origin)
    api = build(ApiOptions, api_values, origin)
    if dry_run:
        blocks, summary = preview(config, api, log=lambda m: click.echo(m, err=True))
        click.echo("\n".join(blocks))
        click.echo(summary, err=True)
        return
    summary = run_and_report(config, out or Path("runs") / f"{Path(corpus).stem}-generate",
                             0, overwrite, progress, api=api)
    if summary.stopped:
        raise OneLineError(BudgetReached(
            f"{summary.stopped}: {summary.rendered + summary.already_done} of "
            f"{summary.selected} item(s) done, {summary.not_done} not started; re-run with a "
            "higher --budget to go on (finished work is kept)"))


@main.command()
@selection_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Report file to write (default: runs/<corpus>-dedup.json).")
@click.option("--progress/--no-progress", default=None,
              help="Progress bars (default: when stderr is a terminal).")
@reports_errors
def dedup(out, progress, **flags):
    """Find exact and near-duplicate items of CORPUS and write a report.

    Exact duplicates by a hash of the normalised text, then near duplicates by the cosine
    similarity of sentence embeddings; the first item of each cluster is kept. The report lists
    kept and removed ids, and each removal's nearest kept item and score. ``--dedup`` on other
    commands applies the same removal before sampling.

    \b
    Examples:
      mmconvert dedup logiqa --source LogiQA-dataset
      mmconvert dedup logiqa2 --source LogiQA2.0 --embedding-model path/to/bge-m3
    """
    from .config import Selection, build, show_progress
    from .converter import load_selection
    from .manifest import write_json

    corpus = flags["corpus"]
    values, origin = selection_values(flags, dedup_default=True)
    config = build(Selection, values, origin)
    _, report = load_selection(config, log=lambda m: click.echo(m, err=True),
                               progress=show_progress(progress))
    out = out or Path("runs") / f"{Path(corpus).stem}-dedup.json"
    data = {"corpus": config.identity(), **report.dedup}
    write_json(out, data, indent=1)
    click.echo(f"report written to {out}", err=True)


def number_list(text: str | None, flag: str, kind=float) -> list | None:
    """``"72,92.9,150"`` as numbers; a one-line error naming the flag otherwise."""
    if text is None:
        return None
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}",
                                 param_hint=flag) from None


@main.command("sweep")
@selection_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Folder of the sweep: sweep.json and one run folder per variant (default: "
                   "runs/<source>-sweep).")
@click.option("--ppi", "ppis", help="PPIs to re-draw page runs at, e.g. 72,92.9,150,300.")
@click.option("--scale", "scales",
              help="Factors to resize every image by, e.g. 0.125,0.25,0.5,2,4 (plain "
                   "resampling, also upward).")
@click.option("--rotate", "rotations", help="Clockwise degrees to turn every image, e.g. 90,180.")
@click.option("--jpeg-quality", "qualities", help="JPEG qualities to re-encode at, e.g. 95,75.")
@click.option("--vary", "varied", multiple=True, metavar="NAME:V1,V2",
              help="Any registered transform's main option, e.g. blur:0.5,1,2 or "
                   "noise:4,8 or augraphy:ink,scanner; repeatable (mmconvert list "
                   "transforms).")
@click.option("--resample", type=click.Choice(RESAMPLING),
              help="Resampling filter for --scale (default lanczos; recorded in each row).")
@click.option("--jpeg-subsampling", type=click.Choice(["4:4:4", "4:2:2", "4:2:0"]),
              help="Chroma subsampling of --jpeg-quality variants (default 4:2:0, Pillow's).")
@page_options(ppi="--base-ppi", prefix="A corpus SOURCE: ")
@run_options
@reports_errors
def sweep_command(out, ppis, scales, rotations, qualities, varied, resample, jpeg_subsampling, ppi,
                  render_part, color, pdf, prompt_style, prompt_dir, workers, overwrite,
                  progress, **flags):
    """Make ablation variants of SOURCE: a run folder, or a corpus (rendered once as pages
    into OUT/base, then swept). Each axis is varied alone against the base; every variant is a
    run folder with the same item ids, listed in OUT/sweep.json.

    \b
    Examples:
      mmconvert sweep mmlu-redux --source data/mmlu_redux --ppi 72,92.9,150,300
      mmconvert sweep runs/vistw --scale 0.125,0.25,0.5,2,4
      mmconvert sweep runs/logicocr --rotate 90,180 --jpeg-quality 95,75
      mmconvert sweep runs/demo --config sweep.yaml   (sweep: {ppi: [72, 150], rotate: [90]})
    """
    from .config import RenderConfig, build, show_progress
    from .postprocess.sweep import SweepOptions, sweep

    source = Path(flags["corpus"])
    values, origin = selection_values(flags)
    axes = dict(values.pop("sweep", None) or {})
    set_given(axes, ppi=number_list(ppis, "--ppi"), scale=number_list(scales, "--scale"),
              rotate=number_list(rotations, "--rotate"),
              jpeg_quality=number_list(qualities, "--jpeg-quality", int), resample=resample,
              jpeg_subsampling=jpeg_subsampling)
    for text in varied:
        name, _, listed = text.partition(":")
        if not listed:
            raise UsageError(f"--vary {text}: expected NAME:V1,V2 (e.g. blur:0.5,1,2)")
        axes.setdefault("vary", {})[name.strip()] = [
            _number_or_text(v.strip()) for v in listed.split(",") if v.strip()]
    options = build(SweepOptions, axes, origin)
    out = out or Path("runs") / f"{source.stem}-sweep"
    if (source / "run.json").is_file():
        given = sorted(k for k in values if k not in ("corpus", "on_error")) + [
            f"--{name.replace('_', '-')}" for name, value in (
                ("base_ppi", ppi), ("render", render_part), ("color", color), ("pdf", pdf),
                ("prompt_style", prompt_style), ("prompt_dir", prompt_dir),
                *((k, flags.get(k)) for k in PAGE_GEOMETRY_FLAGS)) if value is not None]
        if given:
            raise UsageError(f"{source} is a run folder: corpus and render options "
                             f"({', '.join(given)}) do not apply; sweep its corpus instead")
        base = source
    else:
        config = build(RenderConfig, page_values(values, ppi, render_part, color, pdf,
                                                 prompt_style, prompt_dir, flags), origin,
                       flags={"ppi": "--base-ppi"})
        base = out / "base"
        run_and_report(config, base, workers, overwrite, progress)
    summary = sweep(base, out, options, workers=workers, overwrite=overwrite,
                    on_error=values.get("on_error", "fail"), progress=show_progress(progress))
    click.echo(summary.line(), err=True)


@main.group()
def score():
    """Score a model's answers against a run."""


@score.command("vcr")
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
    import json

    from .scoring.vcr import as_json as json_figures
    from .scoring.vcr import score_run, table

    result = score_run(source, predictions, protocol)
    click.echo(json.dumps(json_figures(result), ensure_ascii=False, indent=1) if as_json
               else table(result))


@main.group()
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
@reports_errors
@backend_options()[0]
@backend_options()[1]
def qa_check(run_dir, checks, jobs, max_cer, thresholds, recheck, progress):
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

    from .config import show_progress
    from .qa.checks import Checker, ocr_statistics

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


def reject_votes_option(fn):
    return click.option("--reject-votes", type=click.IntRange(min=1), default=1,
                        show_default=True,
                        help="Reviewers who must reject an item before it counts as rejected "
                             "(VisTW removes a submission after more than two down-votes: 3)."
                        )(fn)


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
    from .qa.events import check_reviewer
    from .qa.review import ReviewServer, ReviewState

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

    from .qa.summary import as_text, summarise

    result = summarise(run_dir, reject_votes)
    click.echo(json.dumps(result, ensure_ascii=False, indent=1) if as_json else as_text(result))


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


@main.command("transform")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--apply", "steps", multiple=True, metavar="STEP",
              help="A registered transform, applied in order; repeatable. NAME:VALUE sets its "
                   "main option (blur:1.5, jpeg:75, rotate:90, scale:0.5, noise:8, "
                   "augraphy:scanner), NAME:key=value,... any option "
                   "(noise:level=0.05,kind=salt-pepper).")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="The new run folder (default: <run>-<steps>, beside the run).")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail",
              show_default=True, help="A missing or changed image: stop, or record it in "
                                      "skipped.jsonl and go on.")
@run_options
@reports_errors
def transform_command(run_dir, steps, out, on_error, workers, overwrite, progress):
    """Apply a chain of transforms to every image of RUN_DIR, writing a new run folder with
    the same items (the rows' postprocess history records each step and its parameters).

    \b
    Examples:
      mmconvert transform runs/demo --apply blur:1.5 --apply jpeg:75
      mmconvert transform runs/vcr --apply augraphy:scanner --out runs/vcr-scanned
    """
    from .config import show_progress
    from .postprocess.chain import transform_run

    if out is None:
        label = "-".join(s.replace(":", "").replace("=", "").replace(",", "") for s in steps)
        out = run_dir.with_name(f"{run_dir.name}-{label or 'transform'}")
    summary = transform_run(run_dir, out, list(steps), workers=workers, overwrite=overwrite,
                            on_error=on_error, progress=show_progress(progress))
    click.echo(summary.line(), err=True)
    if not summary.items:
        sys.exit(1)


@main.command("export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", required=True, metavar="FORMAT",
              help="A registered export format (mmconvert list exporters). hf: parquet "
                   "shards with an Image feature and a dataset card; hf-disk: save_to_disk; "
                   "vlmevalkit: one TSV; lmms-eval: hf plus task YAMLs; jsonl: the manifest.")
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
def export_command(run_dir, fmt, out, name, accepted_only, reject_votes, paths, on_error,
                   overwrite):
    """Export RUN_DIR for an evaluation harness, leaving out the items rejected in its
    qa.jsonl; every format carries each item's text-only twin (text_prompt).

    \b
    Examples:
      mmconvert export runs/demo --format hf --out exports/demo
      mmconvert export runs/vistw --format vlmevalkit --out exports/vistw --reject-votes 3
      mmconvert export runs/logicocr --format lmms-eval --out tasks/logicocr --accepted-only
    """
    from .exporters import export

    summary = export(run_dir, fmt, out, on_error=on_error, reject_votes=reject_votes,
                     accepted_only=accepted_only, paths=paths, name=name, overwrite=overwrite)
    click.echo(summary.line(), err=True)


@main.command("eval")
@click.argument("targets", nargs=-1, required=True)
@click.option("--model", help="Model name the endpoint serves (required, except for compare).")
@click.option("--base-url", help="OpenAI-compatible endpoint (default https://api.openai.com/v1; "
                                 "vLLM, SGLang and others: http://host:port/v1).")
@click.option("--api-key-env", help="Environment variable holding the key (default "
                                    "OPENAI_API_KEY); the key is never written anywhere.")
@click.option("--out", "-o", type=click.Path(path_type=Path),
              help="Folder for results.json, responses.jsonl, logs/ and cache/ (default: "
                   "<run>-eval-<model>).")
@click.option("--modality", help="Conditions, comma-separated: image, text, text-image "
                                 "(default image,text; text-image: occlusions' text-only "
                                 "image).")
@click.option("--protocol", type=click.Choice(["official", "strict"]),
              help="VCR scoring protocol (default official; see score vcr).")
@click.option("--limit", type=int, help="Evaluate the first N items of the run.")
@click.option("--subset", "subsets", multiple=True, help="Only this subset; repeatable.")
@click.option("--concurrency", type=int, help="Requests in flight (default 16).")
@click.option("--max-tokens", type=int, help="Reply length (default 1024 for cot prompts, 64 "
                                             "for direct).")
@click.option("--timeout", type=int, help="Seconds per request (default 120).")
@click.option("--max-retries", type=int, help="Retries of a failed request: 429, 5xx, time-outs, "
                                              "malformed answers (default 6).")
@click.option("--budget", type=float, help="USD the evaluation may spend at most (models in "
                                           "the price table).")
@click.option("--seed", type=int, help="Seed of the paired bootstrap and the requests "
                                       "(default 0).")
@click.option("--judge-model", help="Score free-form answers (no options, spans or paper's "
                                    "scorer) with this model on the same endpoint and a 0-10 "
                                    "rubric; named in results.json.")
@click.option("--dry-run", is_flag=True, help="Print requests, vision tokens and the estimated "
                                              "cost; send nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of a table.")
@click.option("--progress/--no-progress", default=None,
              help="inspect's progress display (default: when stderr is a terminal).")
@reports_errors
def eval_command(targets, out, dry_run, as_json, progress, **flags):
    """Evaluate RUN_DIR's items through an OpenAI-compatible endpoint, each as its image prompt
    and as its text-only twin, on inspect_ai; score them by family and compare them item by item
    (paired bootstrap interval of the difference, exact McNemar p for right/wrong scores).

    \b
    mmconvert eval RUN_DIR --model MODEL [--base-url URL] [--out DIR]
    mmconvert eval SWEEP_DIR --model MODEL     every variant, and a plot against the axis
    mmconvert eval compare DIR DIR...          models side by side, with the mismatch analysis

    \b
    Examples:
      mmconvert eval runs/demo --model Qwen/Qwen2.5-VL-7B-Instruct --base-url http://localhost:8000/v1
      mmconvert eval runs/demo --model gpt-4o-mini --limit 50 --dry-run
      mmconvert eval compare runs/demo-eval-a runs/demo-eval-b
    """
    import json

    from .config import build, show_progress

    if targets[0] == "compare":
        from .evaluation.compare import compare, compare_table

        result = compare([Path(t) for t in targets[1:]])
        click.echo(json.dumps(result, indent=1) if as_json else compare_table(result))
        return
    if len(targets) != 1:
        raise UsageError("mmconvert eval takes one RUN_DIR or SWEEP_DIR (or: compare DIR...)")
    from .evaluation.run import EvalOptions, evaluate, plan, table

    source = Path(targets[0])
    values = {k: v for k, v in flags.items() if v not in (None, ())}
    if "modality" in values:
        values["modality"] = [m.strip() for m in values["modality"].split(",") if m.strip()]
    if "subsets" in values:
        values["subsets"] = list(values["subsets"])
    if "model" not in values:
        raise UsageError("--model: required (the model name the endpoint serves)")
    options = build(EvalOptions, values, flags={"subsets": "--subset"})
    label = "".join(c if c.isalnum() or c in ".-" else "_" for c in options.model)
    out = out or source.with_name(f"{source.name}-eval-{label}")
    display = "full" if show_progress(progress) else "none"
    from .postprocess.sweep import SWEEP

    if (source / SWEEP).is_file():
        from .evaluation.sweeps import evaluate_sweep, sweep_table

        result = evaluate_sweep(source, out, options, dry_run=dry_run, display=display)
        click.echo(json.dumps(result, indent=1) if as_json else sweep_table(result))
        return
    if dry_run:
        todo = plan(source, options)
        cost = (f"${todo.estimate_usd:.4f} at most (every reply at its max tokens; vision "
                "tokens by the gpt-4o rule)" if todo.estimate_usd is not None
                else f"unknown: {options.model} is not in the price table")
        tokens = ", ".join(f"{name} {count:,}" for name, count in todo.vision_tokens.items())
        unscored = (f"; {len(todo.unscored)} item(s) have no gold answer and are left out "
                    "(unscored)" if todo.unscored else "")
        click.echo(f"{len(todo.rows)} item(s) x {len(todo.conditions)} condition(s) "
                   f"({', '.join(todo.conditions)}) = {todo.requests} request(s); vision "
                   f"tokens: {tokens}; cost: {cost}{unscored}; nothing sent")
        return
    results = evaluate(source, out, options, display=display)
    click.echo(json.dumps(results, indent=1) if as_json else table(results))
    click.echo(f"results in {out / 'results.json'}, responses in {out / 'responses.jsonl'}; "
               f"inspect view --log-dir {out / 'logs'}", err=True)


@main.command("stats")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path),
              help="Folder for the PNG plots (default: RUN_DIR/stats).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the figures as JSON (with per-item and per-image rows).")
@click.option("--no-plots", is_flag=True, help="Print only; draw no plots.")
@reports_errors
def stats_command(run_dir, out, as_json, no_plots):
    """Pages per item, words per image (LogicOCR's density buckets), image sizes and estimated
    vision tokens per item for common processors (the rules are printed), with PNG plots.

    \b
    Examples:
      mmconvert stats runs/demo
      mmconvert stats runs/logicocr --json > stats.json
    """
    import json

    from .stats import as_text, gather, plot

    figures = gather(run_dir)
    click.echo(json.dumps(figures, ensure_ascii=False, indent=1) if as_json
               else as_text(figures))
    if not no_plots:
        try:
            written = plot(figures, out or run_dir / "stats")
        except ImportError:
            raise UsageError("plots need matplotlib: pip install 'mmconvert[stats]' (or "
                             "--no-plots)") from None
        click.echo(f"plots: {', '.join(str(p) for p in written)}", err=True)


@main.command("list")
@click.argument("kind", type=click.Choice(["corpora", "renderers", "transforms", "exporters",
                                           "executors"]), required=False)
def list_parts(kind):
    """List the registered corpora, renderers, transforms, exporters and executors, with the
    package that provides each plugin (entry points: mmconvert.corpora, .renderers,
    .transforms, .exporters; see docs/plugins.md)."""
    from .corpora import CORPORA
    from .executors import EXECUTORS
    from .exporters import EXPORTERS
    from .postprocess.transforms import TRANSFORMS
    from .registry import BUILT_IN
    from .renderers import RENDERERS

    def first(part) -> str:
        return ((part.__doc__ or "").strip().splitlines() or [""])[0]

    def parts(registry, describe):
        """Each part's line; a plugin that cannot be loaded is its one line, the rest go on."""
        for name in registry.names():
            package = registry.provider(name)
            origin = "" if package == BUILT_IN else f"  [from {package}]"
            try:
                line = describe(name, registry.get(name))
            except UsageError as err:
                line = f"  {name:<14} cannot be used: {err}"
            click.echo(line + origin)
        for line in registry.broken:
            click.echo(f"  ! {line}")

    if kind in (None, "corpora"):
        click.echo("corpora:")
        parts(CORPORA, lambda name, cls: f"  {name:<14} {cls.hub_id or '':<34} "
                                         f"{cls.description}")
        click.echo(f"  {'PATH':<14} {'(a local .jsonl/.csv/.parquet)':<34} generic item schema")
    if kind in (None, "renderers"):
        click.echo("renderers:")
        parts(RENDERERS, lambda name, cls: f"  {name:<14} v{cls.version:<5} {first(cls)}")
    if kind in (None, "transforms"):
        click.echo("transforms (--apply NAME:VALUE, sweep --vary NAME:V1,V2):")
        parts(TRANSFORMS, lambda name, cls: f"  {name:<14} {cls.primary + ' ' + cls.example:<18} "
                                            f"{cls.description}")
    if kind in (None, "exporters"):
        click.echo("exporters (export --format NAME):")
        parts(EXPORTERS, lambda name, fn: f"  {name:<14} {first(fn)}")
    if kind in (None, "executors"):
        click.echo("executors:")
        parts(EXECUTORS, lambda name, cls: f"  {name:<14} {cls.description}")


if __name__ == "__main__":  # pragma: no cover
    main()
