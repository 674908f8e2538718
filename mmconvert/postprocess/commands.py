"""``mmconvert sweep`` and ``mmconvert transform``."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from ..command_options import CONFIG, command, execution_flags, read_config
from ..config import ExecutionOptions, Selection, build, show_progress
from ..errors import UsageError
from ..flags import corpus_flags, fill, flag_names, given_names, model_flags
from ..render_command import run_and_report
from ..renderers import DEFAULT, renderer_class
from .chain import transform_run
from .sweep import SweepOptions, parse_vary
from .sweep import sweep as make_sweep


@functools.cache
def sweep_command(corpus_options=None) -> click.Command:
    """Its axes, the base render's flags (one a sweep axis also names gets ``--base-``), the
    flags of a corpus SOURCE's options (``corpus_options``, its options model) and where it
    runs."""
    axes = model_flags(SweepOptions)
    base_model = renderer_class(DEFAULT).config_model
    skip = {*Selection.model_fields, "store", "shard_rows"}
    taken = {f.name for f in axes}
    clash = {".".join(f.path): "--base-" + f.name.removeprefix("--")
             for f in model_flags(base_model, skip=skip) if f.name in taken}
    selection = model_flags(Selection) + corpus_flags(corpus_options)
    render = model_flags(base_model, skip=skip, rename=clash, note="A corpus SOURCE: ")
    execution = execution_flags("runs/<source>-sweep", skip={"executor", "address"}) \
        + execution_flags("", skip={"out", "workers", "overwrite", "progress", "on_change"})

    def sweep(varied, styled, target, config_file, **given):
        """Make ablation variants of SOURCE: a run folder, or a corpus (rendered once as pages
        into OUT/base, then swept). Each axis is varied alone against the base; every variant
        is a run folder with the same item ids, listed in OUT/sweep.json.

        \b
        Examples:
          mmconvert sweep mmlu-redux --source data/mmlu_redux --ppi 72,92.9,150,300
          mmconvert sweep runs/vistw --scale 0.125,0.25,0.5,2,4
          mmconvert sweep runs/logicocr --rotate 90,180 --jpeg-quality 95,75
          mmconvert sweep runs/redux --vary-style font_size:9,10,14 --vary-style align:justify
          mmconvert sweep runs/demo --config sweep.yaml   (sweep: {ppi: [72, 150], rotate: [90]})
        """
        source = target
        values, origin = read_config(config_file)
        options = fill(axes, given, dict(values.pop("sweep", None) or {}))
        for text in varied:
            name, listed = parse_vary(text)
            options.setdefault("vary", {})[name] = listed
        for text in styled:
            name, listed = parse_vary(text, "--vary-style")
            options.setdefault("style", {})[name] = listed
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
        summary = make_sweep(base, run.out, options, workers=run.workers,
                             overwrite=run.overwrite, on_error=on_error,
                             progress=show_progress(run.progress))
        click.echo(summary.line(), err=True)

    return command("sweep", sweep, axes + selection + render + execution, [
        click.Argument(["target"], metavar="SOURCE"), CONFIG,
        click.Option(["--vary", "varied"], multiple=True, metavar="NAME:V1,V2",
                     help="Any registered transform's main option, e.g. blur:0.5,1,2 or "
                          "noise:4,8 or augraphy:ink,scanner; repeatable (mmconvert list "
                          "transforms)."),
        click.Option(["--vary-style", "styled"], multiple=True, metavar="FIELD:V1,V2",
                     help="A page style field to draw the items again with, a variant a value, "
                          "e.g. font_size:9,10,14 or align:justify; repeatable (the guide's "
                          "page styles).")], corpus=(corpus_options, sweep_command))


def transform_command() -> click.Command:
    execution = execution_flags("<run>-<steps>, beside the run", skip={"on_change"})

    def transform(run_dir, steps, on_error, **given):
        """Apply a chain of transforms to every image of RUN_DIR, writing a new run folder
        with the same items (the rows' postprocess history records each step and its
        parameters).

        \b
        Examples:
          mmconvert transform runs/demo --apply blur:1.5 --apply jpeg:75
          mmconvert transform runs/vcr --apply augraphy:scanner --out runs/vcr-scanned
        """
        label = "-".join(s.replace(":", "").replace("=", "").replace(",", "") for s in steps)
        run = build(ExecutionOptions, fill(execution, given, {
            "out": run_dir.with_name(f"{run_dir.name}-{label or 'transform'}")}),
            flags=flag_names(execution))
        run.use()
        summary = transform_run(run_dir, run.out, list(steps), workers=run.workers,
                                overwrite=run.overwrite, on_error=on_error,
                                progress=show_progress(run.progress))
        click.echo(summary.line(), err=True)
        if not summary.items:
            sys.exit(1)

    return command("transform", transform, execution, [
        click.Argument(["run_dir"], type=click.Path(path_type=Path)),
        click.Option(["--apply", "steps"], multiple=True, metavar="STEP",
                     help="A registered transform, applied in order; repeatable. NAME:VALUE "
                          "sets its main option (blur:1.5, jpeg:75, rotate:90, scale:0.5, "
                          "noise:8, augraphy:scanner), NAME:key=value,... any option "
                          "(noise:level=0.05,kind=salt-pepper)."),
        click.Option(["--on-error"], type=click.Choice(["fail", "skip"]), default="fail",
                     show_default=True, help="A missing or changed image: stop, or record it "
                                             "in skipped.jsonl and go on.")])
