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


class Main(click.Group):
    """The commands: the fixed ones, ``render`` (the default renderer, or ``--renderer NAME``)
    and one per other registered renderer (``occlude``, ``generate``, a plugin's), each built
    from its renderer's models when it is used."""

    def list_commands(self, ctx):
        from .renderers import DEFAULT, RENDERERS

        return sorted({*self.commands, *LAZY, "render",
                       *(n for n in RENDERERS.names() if n != DEFAULT)})

    def get_command(self, ctx, name):
        from .renderers import DEFAULT, RENDERERS

        if name in self.commands:
            return self.commands[name]
        if name in LAZY:
            return LAZY[name]()
        if name == "render" or (name in RENDERERS and name != DEFAULT):
            return run_command(DEFAULT if name == "render" else name, name)
        return None

    def resolve_command(self, ctx, args):
        """``render --renderer NAME ...``: the command of renderer NAME, under ``render``."""
        if args and args[0] == "render":
            for position, arg in enumerate(args[1:-1], start=1):
                if arg == "--renderer":
                    return "render", run_command(args[position + 1], "render"), args[1:]
            for arg in args[1:]:
                if arg.startswith("--renderer="):
                    return "render", run_command(arg.split("=", 1)[1], "render"), args[1:]
        if args and self.get_command(ctx, args[0]) is None and not args[0].startswith("-"):
            import difflib

            close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1)
            ctx.fail(f"No such command {args[0]!r}" + (f"; did you mean {close[0]!r}?"
                                                       if close else "."))
        return super().resolve_command(ctx, args)


@click.group(cls=Main,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mmconvert")
def main():
    """Turn text benchmarks and corpora into image benchmarks for vision-language models."""
    from .executors import LOCAL, use

    use(LOCAL)  # each invocation starts local; --executor says otherwise


CONFIG = click.Option(["--config", "config_file"], type=click.Path(path_type=Path),
                      help="YAML file of options (the config's fields); flags override it.")


def backend_options(fn):
    """``--executor`` and ``--ray-address`` of a command that reads a run (``config.Backend``
    checks them; ``use_backend``)."""
    fn = click.option("--ray-address", "address", metavar="HOST:PORT", default=None,
                      help="Join this cluster (with --executor ray).")(fn)
    return click.option("--executor", default="local", show_default=True,
                        help="local: this machine's processes; ray: Ray Data on a local "
                             "cluster, or the one at --ray-address. Output is the same.")(fn)


def use_backend(executor: str, address: str | None) -> None:
    from .config import Backend, build

    build(Backend, {"executor": executor, "address": address}).use()


def read_config(config_file: Path | None) -> tuple[dict, str]:
    """A ``--config`` file's values and the origin its messages name."""
    from .config import FLAGS, load_yaml

    if config_file is None:
        return {}, FLAGS
    return load_yaml(config_file), f"--config {config_file}"


def run_and_report(config, execution, api=None):
    """Carry out a run; its notes and summary line go to stderr."""
    from .converter import convert

    summary = convert(config, execution=execution, api=api,
                      log=lambda m: click.echo(one_line(m), err=True))
    click.echo(summary.line(), err=True)
    if not summary.selected:  # nothing to do is not a success
        load = summary.load
        dropped = ", ".join(f"{n} {why}" for why, n in load.get("dropped", {}).items())
        raise OneLineError(MMConvertError(
            f"nothing to do: no item of the {load.get('rows', 0)} row(s) read was selected"
            + (f" (dropped: {dropped})" if dropped else "")
            + (f"; {load['skipped']} skipped (see {execution.out / 'skipped.jsonl'})"
               if load.get("skipped") else "")))
    if summary.stopped:
        raise OneLineError(BudgetReached(
            f"{summary.stopped}: {summary.rendered + summary.already_done} of "
            f"{summary.selected} item(s) done, {summary.not_done} not started; re-run with a "
            "higher --budget to go on (finished work is kept)"))
    return summary


def execution_flags(default_out: str, skip=()):
    from .config import ExecutionOptions
    from .flags import model_flags

    flags = model_flags(ExecutionOptions, skip=skip)
    for flag in flags:
        if flag.path == ("out",):
            flag.option.help = f"Folder to write (default: {default_out})."
    return flags


@functools.cache
def run_command(renderer_name: str, name: str) -> click.Command:
    """The command of a renderer: CORPUS, its config's flags (the selection's, its options'),
    where and how it runs, and for a paid renderer the API's flags and ``--dry-run``."""
    from .config import ApiOptions
    from .flags import fill, flag_names, model_flags
    from .renderers import DEFAULT, renderer_class

    try:
        renderer = renderer_class(renderer_name)
    except UsageError as err:  # a broken plugin: its one line when used, the others work
        error = err

        def broken(args):
            raise OneLineError(error)
        return click.Command(name, callback=broken, help=f"Cannot be used: {error}",
                             params=[click.Argument(["args"], nargs=-1)],
                             context_settings={"ignore_unknown_options": True})
    suffix = "" if renderer.name == DEFAULT else f"-{renderer.name}"
    config_flags = model_flags(renderer.config_model)
    api_flags = model_flags(ApiOptions) if renderer.paid else []
    exec_flags = execution_flags(f"runs/<corpus>{suffix}")
    names = flag_names(config_flags + api_flags + exec_flags)

    def callback(corpus, config_file, renderer=None, dry_run=False, **given):
        from .config import ExecutionOptions, build

        values, origin = read_config(config_file)
        api_values = dict(values.pop("api", None) or {}) if api_flags else {}
        values = fill(config_flags, given, {**values, "corpus": corpus})
        config = build(renderer_class(renderer_name).config_model, values, origin, flags=names)
        api = build(ApiOptions, fill(api_flags, given, api_values), origin, flags=names) \
            if api_flags else None
        execution = fill(exec_flags, given, {"out": Path("runs") / f"{Path(corpus).stem}{suffix}"})
        execution = build(ExecutionOptions, execution, flags=names)
        if dry_run:
            from .converter import preview

            blocks, summary = preview(config, api, log=lambda m: click.echo(m, err=True))
            click.echo("\n".join(blocks))
            click.echo(summary, err=True)
            return
        run_and_report(config, execution, api)

    params = [click.Argument(["corpus"]), CONFIG]
    if name == "render":
        params.append(click.Option(["--renderer"], default=renderer.name, show_default=True,
                                   help="The renderer (mmconvert list renderers); its own "
                                        "flags follow."))
    if renderer.paid:
        params.append(click.Option(["--dry-run"], is_flag=True,
                                   help="Print the prompts, counts and estimated cost; call "
                                        "nothing, write nothing."))
    return click.Command(name, callback=reports_errors(callback),
                         help=renderer.help or renderer.__doc__,
                         params=params + [f.option for f in config_flags + exec_flags + api_flags])


def command(name: str, callback, flags=(), params=(), help: str | None = None) -> click.Command:
    """A command of ``params`` and the generated ``flags``, its errors one line."""
    return click.Command(name, callback=reports_errors(callback), help=help or callback.__doc__,
                         params=[*params, *(f.option for f in flags)])


def progress_option(help="Progress bar (default: when stderr is a terminal)."):
    return click.Option(["--progress/--no-progress"], default=None, help=help)


def dedup_command() -> click.Command:
    from .config import Selection
    from .flags import fill, flag_names, model_flags

    flags = model_flags(Selection)

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
        from .config import build, show_progress
        from .converter import load_selection
        from .manifest import write_json

        values, origin = read_config(config_file)
        values = fill(flags, given, {**values, "corpus": corpus})
        values["dedup"] = dict(values.get("dedup") or {})
        config = build(Selection, values, origin, flags=flag_names(flags))
        _, report = load_selection(config, log=lambda m: click.echo(m, err=True),
                                   progress=show_progress(progress))
        out = out or Path("runs") / f"{Path(corpus).stem}-dedup.json"
        write_json(out, {"corpus": config.identity(), **report.dedup}, indent=1)
        click.echo(f"report written to {out}", err=True)

    return command("dedup", dedup, flags, [
        click.Argument(["corpus"]), CONFIG,
        click.Option(["--out", "-o"], type=click.Path(path_type=Path),
                     help="Report file to write (default: runs/<corpus>-dedup.json)."),
        progress_option("Progress bars (default: when stderr is a terminal).")])


def sweep_command() -> click.Command:
    """Its axes, the base render's flags (one a sweep axis also names gets ``--base-``) and
    where it runs."""
    from .config import Selection
    from .flags import fill, flag_names, given_names, model_flags
    from .postprocess.sweep import SweepOptions, parse_vary
    from .renderers import DEFAULT, renderer_class

    axes = model_flags(SweepOptions)
    base_model = renderer_class(DEFAULT).config_model
    skip = {*Selection.model_fields, "store", "shard_rows"}
    taken = {f.name for f in axes}
    clash = {".".join(f.path): "--base-" + f.name.removeprefix("--")
             for f in model_flags(base_model, skip=skip) if f.name in taken}
    selection = model_flags(Selection)
    render = model_flags(base_model, skip=skip, rename=clash, note="A corpus SOURCE: ")
    execution = execution_flags("runs/<source>-sweep", skip={"executor", "address"}) \
        + execution_flags("", skip={"out", "workers", "overwrite", "progress"})

    def sweep(varied, target, config_file, **given):
        """Make ablation variants of SOURCE: a run folder, or a corpus (rendered once as pages
        into OUT/base, then swept). Each axis is varied alone against the base; every variant
        is a run folder with the same item ids, listed in OUT/sweep.json.

        \b
        Examples:
          mmconvert sweep mmlu-redux --source data/mmlu_redux --ppi 72,92.9,150,300
          mmconvert sweep runs/vistw --scale 0.125,0.25,0.5,2,4
          mmconvert sweep runs/logicocr --rotate 90,180 --jpeg-quality 95,75
          mmconvert sweep runs/demo --config sweep.yaml   (sweep: {ppi: [72, 150], rotate: [90]})
        """
        from .config import ExecutionOptions, build, show_progress
        from .postprocess.sweep import sweep as make

        source = target
        values, origin = read_config(config_file)
        options = fill(axes, given, dict(values.pop("sweep", None) or {}))
        for text in varied:
            name, listed = parse_vary(text)
            options.setdefault("vary", {})[name] = listed
        options = build(SweepOptions, options, origin, flags=flag_names(axes))
        run = build(ExecutionOptions, fill(execution, given, {
            "out": Path("runs") / f"{Path(source).stem}-sweep"}), flags=flag_names(execution))
        run.use()
        on_error = fill(selection, dict(given), {}).get("on_error") or \
            values.get("on_error", "fail")
        if (Path(source) / "run.json").is_file():
            stated = [f for f in sorted(k for k in values if k not in ("corpus", "on_error"))
                      + given_names(selection + render, given) if f != "--on-error"]
            if stated:
                raise UsageError(f"{source} is a run folder: corpus and render options "
                                 f"({', '.join(stated)}) do not apply; sweep its corpus "
                                 "instead")
            base = Path(source)
        else:
            values = fill(selection + render, given, {**values, "corpus": source})
            config = build(base_model, values, origin, flags=flag_names(selection + render))
            base = run.out / "base"
            run_and_report(config, run.model_copy(update={"out": base}))
        summary = make(base, run.out, options, workers=run.workers, overwrite=run.overwrite,
                       on_error=on_error, progress=show_progress(run.progress))
        click.echo(summary.line(), err=True)

    return command("sweep", sweep, axes + selection + render + execution, [
        click.Argument(["target"], metavar="SOURCE"), CONFIG,
        click.Option(["--vary", "varied"], multiple=True, metavar="NAME:V1,V2",
                     help="Any registered transform's main option, e.g. blur:0.5,1,2 or "
                          "noise:4,8 or augraphy:ink,scanner; repeatable (mmconvert list "
                          "transforms).")])


def eval_command() -> click.Command:
    from .evaluation.run import EvalOptions
    from .flags import fill, flag_names, model_flags

    flags = model_flags(EvalOptions)

    def evaluate(targets, out, dry_run, as_json, progress, **given):
        """Evaluate RUN_DIR's items through an OpenAI-compatible endpoint, each as its image
        prompt and as its text-only twin, on inspect_ai; score them by family and compare them
        item by item (paired bootstrap interval of the difference, exact McNemar p for
        right/wrong scores).

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
        from .config import build, show_progress
        from .evaluation.commands import run_eval

        values = fill(flags, given, {})
        if targets and targets[0] != "compare" and "model" not in values:
            raise UsageError("--model: required (the model name the endpoint serves)")
        options = build(EvalOptions, values, flags=flag_names(flags)) \
            if "model" in values else None
        run_eval(targets, options, out, dry_run=dry_run, as_json=as_json,
                 display="full" if show_progress(progress) else "none",
                 echo=lambda text, err=False: click.echo(text, err=err))

    return command("eval", evaluate, flags, [
        click.Argument(["targets"], nargs=-1, required=True),
        click.Option(["--out", "-o"], type=click.Path(path_type=Path),
                     help="Folder for results.json, responses.jsonl, logs/ and cache/ "
                          "(default: <run>-eval-<model>)."),
        click.Option(["--dry-run"], is_flag=True, help="Print requests, vision tokens and the "
                                                       "estimated cost; send nothing."),
        click.Option(["--json", "as_json"], is_flag=True,
                     help="Print results.json instead of a table."),
        progress_option("inspect's progress display (default: when stderr is a terminal).")])


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

    from .config import show_progress
    from .qa.checks import Checker, ocr_statistics

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
@click.option("--workers", type=click.IntRange(min=0), default=1, show_default=True,
              help="Processes to work with; 0 = one per core. Output is the same for any N.")
@click.option("--overwrite", is_flag=True, help="Replace a run folder made with other options.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar (default: when stderr is a terminal).")
@backend_options
@reports_errors
def transform_command(run_dir, steps, out, on_error, workers, overwrite, progress, executor,
                      address):
    """Apply a chain of transforms to every image of RUN_DIR, writing a new run folder with
    the same items (the rows' postprocess history records each step and its parameters).

    \b
    Examples:
      mmconvert transform runs/demo --apply blur:1.5 --apply jpeg:75
      mmconvert transform runs/vcr --apply augraphy:scanner --out runs/vcr-scanned
    """
    from .config import show_progress
    from .postprocess.chain import transform_run

    use_backend(executor, address)
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


# commands built from the option models when they are used (``Main.get_command``)
LAZY = {"dedup": dedup_command, "sweep": sweep_command, "eval": eval_command}


if __name__ == "__main__":  # pragma: no cover
    main()
