"""What ``mmconvert eval`` does with its parsed options: one run, a sweep's variants, a
comparison, or a dry run's plan."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..command_base import progress_option
from ..command_options import command
from ..config import build, show_progress
from ..errors import UsageError
from ..flags import fill, flag_names, model_flags
from ..postprocess.sweep import SWEEP
from .compare import compare, compare_table
from .curve import CurveOptions, curve, safe
from .curve import table as curve_table
from .decompose import decompose, decompose_table, write_decomposition
from .frontier import FrontierOptions, frontier
from .frontier import table as frontier_table
from .readers import is_reader
from .results import table
from .run import EvalOptions, evaluate, plan
from .sweeps import evaluate_sweep, sweep_table


def run_eval(targets: tuple[str, ...], options, out: Path | None, *, dry_run: bool,
             as_json: bool, display: str, echo) -> None:
    """``mmconvert eval TARGETS``; ``echo(text, err=False)`` prints."""
    if targets[0] == "compare":
        result = compare([Path(t) for t in targets[1:]])
        echo(json.dumps(result, indent=1) if as_json else compare_table(result))
        return
    if targets[0] == "decompose":
        found = decompose([Path(t) for t in targets[1:]])
        if out is not None:  # decompose.json and its plot
            found["written"] = write_decomposition(found, out)
        echo(json.dumps(found, indent=1) if as_json else decompose_table(found))
        return
    if len(targets) != 1:
        raise UsageError("mmconvert eval takes one RUN_DIR or SWEEP_DIR (or: compare DIR...)")
    source = Path(targets[0])
    label = "".join(c if c.isalnum() or c in ".-" else "_" for c in options.model)
    out = out or source.with_name(f"{source.name}-eval-{label}")
    if (source / SWEEP).is_file():
        result = evaluate_sweep(source, out, options, dry_run=dry_run, display=display)
        echo(json.dumps(result, indent=1) if as_json else sweep_table(result))
        return
    if dry_run:
        todo = plan(source, options)
        if is_reader(options.model):
            cost = f"none: {options.model} reads the pages on this machine"
        elif todo.estimate_usd is None:
            cost = f"unknown: {options.model} is not in the price table"
        elif todo.images and todo.image_tokens is None:
            cost = (f"${todo.estimate_usd:.4f} for the text alone, every reply at its max "
                    f"tokens; its {todo.images} image(s) are NOT priced: the price table has "
                    f"no image rule for {options.model}")
        else:
            cost = (f"${todo.estimate_usd:.4f} at most (every reply at its max tokens; "
                    f"{todo.image_tokens or 0:,} image tokens by {options.model}'s own rule)")
        tokens = ", ".join(f"{name} {count:,}" if count is not None else
                           f"{name} (its processor refuses an image)"
                           for name, count in todo.vision_tokens.items())
        unscored = (f"; {len(todo.unscored)} item(s) have no gold answer and are left out "
                    "(unscored)" if todo.unscored else "")
        echo(f"{len(todo.rows)} item(s) x {len(todo.conditions)} condition(s) "
             f"({', '.join(todo.conditions)}) = {todo.requests} request(s); vision "
             f"tokens: {tokens}; cost: {cost}{unscored}; nothing sent")
        return
    results = evaluate(source, out, options, display=display)
    if as_json:
        echo(json.dumps(results, indent=1))
    else:
        echo(table(results))
        if "decomposition" in results:
            echo("\n" + decompose_table(results["decomposition"]))
    echo(f"results in {out / 'results.json'}, responses in {out / 'responses.jsonl'}; "
         f"inspect view --log-dir {out / 'logs'}", err=True)


def probe_or_modality(values: dict) -> None:
    """A probe asks its own condition: a --modality given beside it would be left unasked
    (eval's, curve's and frontier's flags)."""
    if values.get("probe") and "modality" in values:
        raise UsageError("--probe transcribe asks its own condition (the pages, to be "
                         "transcribed): give --modality or --probe, not both")


def eval_command() -> click.Command:
    flags = model_flags(EvalOptions)

    def eval_targets(targets, out, dry_run, as_json, progress, **given):
        """Evaluate RUN_DIR's items through an OpenAI-compatible endpoint, each as its image
        prompt and as its text-only twin, on inspect_ai; score them by family and compare them
        item by item (paired bootstrap interval of the difference, exact McNemar p for
        right/wrong scores).

        \b
        mmconvert eval RUN_DIR --model MODEL [--base-url URL] [--out DIR]
        mmconvert eval SWEEP_DIR --model MODEL     every variant, and a plot against the axis
        mmconvert eval compare DIR DIR...          models side by side, with the mismatch analysis
        mmconvert eval decompose DIR...            one model's loss: prior, reading, modality

        \b
        Examples:
          mmconvert eval runs/demo --model Qwen/Qwen2.5-VL-7B-Instruct --base-url http://localhost:8000/v1
          mmconvert eval runs/demo --model gpt-4o-mini --limit 50 --dry-run
          mmconvert eval compare runs/demo-eval-a runs/demo-eval-b
        """
        values = fill(flags, given, {})
        probe_or_modality(values)
        if targets and targets[0] not in ("compare", "decompose") and "model" not in values:
            raise UsageError("--model: required (the model name the endpoint serves)")
        options = build(EvalOptions, values, flags=flag_names(flags)) \
            if "model" in values else None
        run_eval(targets, options, out, dry_run=dry_run, as_json=as_json,
                 display="full" if show_progress(progress) else "none",
                 echo=lambda text, err=False: click.echo(text, err=err))

    return command("eval", eval_targets, flags, [
        click.Argument(["targets"], nargs=-1, required=True),
        click.Option(["--out", "-o"], type=click.Path(path_type=Path),
                     help="Folder for results.json, responses.jsonl, logs/ and cache/ "
                          "(default: <run>-eval-<model>)."),
        click.Option(["--dry-run"], is_flag=True, help="Print requests, vision tokens and the "
                                                       "estimated cost; send nothing."),
        click.Option(["--json", "as_json"], is_flag=True,
                     help="Print results.json instead of a table."),
        progress_option("inspect's progress display (default: when stderr is a terminal).")])


def frontier_command() -> click.Command:
    flags = model_flags(FrontierOptions)

    def run_frontier(corpus, out, as_json, progress, **given):
        """Which page style reads best for how few vision tokens: render a seeded set of
        styles (--points draws from --style, or a --grid of style fields) on a dev sample of
        CORPUS, count each one's compression (text tokens / vision tokens of --ratio-model)
        and score it (--model through an OpenAI-compatible endpoint, as eval does; without
        one, Tesseract's character accuracy), and write the Pareto front of accuracy against
        compression: OUT/frontier.json, OUT/frontier.png and every point's style file
        (OUT/styles/<point>.yaml, for render --style).

        \b
        Examples:
          mmconvert frontier mmlu-redux --tokenizer tok.json --ratio-model qwen2.5-vl \\
              --grid font_size:6,8,10,12 --grid ppi:72,96
          mmconvert frontier mmlu-pro --tokenizer tok.json --ratio-model qwen2.5-vl \\
              --points 24 --model Qwen/Qwen2.5-VL-7B-Instruct --base-url http://localhost:8000/v1
        """
        values = fill(flags, given, {})
        probe_or_modality(values)
        options = build(FrontierOptions, values, flags=flag_names(flags))
        label = safe(options.model or "ocr")
        target = out or Path("runs") / f"{Path(corpus).stem}-frontier-{label}"
        result = frontier(corpus, target, options,
                          display="full" if show_progress(progress) else "none",
                          echo=lambda text: click.echo(text, err=True))
        click.echo(json.dumps(result, indent=1) if as_json else frontier_table(result))
        click.echo(f"frontier in {target / 'frontier.json'}", err=True)

    return command("frontier", run_frontier, flags, [
        click.Argument(["corpus"]),
        click.Option(["--out", "-o"], type=click.Path(path_type=Path),
                     help="Folder for the points' runs, styles, evaluations, frontier.json "
                          "and frontier.png (default: runs/<corpus>-frontier-<model|ocr>)."),
        click.Option(["--json", "as_json"], is_flag=True,
                     help="Print frontier.json instead of a table."),
        progress_option("inspect's progress display (default: when stderr is a terminal).")])


def curve_command() -> click.Command:
    flags = model_flags(CurveOptions)

    def run_curve(corpus, out, as_json, progress, **given):
        """Each model's compression curve (--model, comma-separated, each with its
        --ratio-model rule): render a dev sample of CORPUS to each vision budget (--budgets)
        or compression ratio (--ratios) for the rule, over a recipe or a style, and score
        each point through an OpenAI-compatible endpoint as eval does:
        the images, the text cut to each item's own vision tokens (the baseline at the same
        budget) and the whole text. Writes OUT/curve.json (the rule named with its source
        and date), OUT/curve.png and a table. Without --budgets or --ratios, one point: the
        recipe's pages as they are (VTCBench's fixed render).

        \b
        Examples:
          mmconvert curve mmlu-redux --model Qwen/Qwen2.5-VL-7B-Instruct \\
              --base-url http://localhost:8000/v1 --tokenizer Qwen/Qwen2.5-VL-7B-Instruct \\
              --ratio-model qwen2.5-vl --budgets 64,100,256,400 --recipe readbench
          mmconvert curve longbench --model Q,I --base-url URL --tokenizer tok.json \\
              --ratio-model qwen2.5-vl,internvl2.5 --ratios 1,2,4 --recipe vtcbench
        """
        values = fill(flags, given, {})
        probe_or_modality(values)
        options = build(CurveOptions, values, flags=flag_names(flags))
        target = out or Path("runs") / f"{Path(corpus).stem}-curve-{safe(options.models[0])}"
        result = curve(corpus, target, options,
                       display="full" if show_progress(progress) else "none",
                       echo=lambda text: click.echo(text, err=True))
        click.echo(json.dumps(result, indent=1) if as_json else curve_table(result))

    return command("curve", run_curve, flags, [
        click.Argument(["corpus"]),
        click.Option(["--out", "-o"], type=click.Path(path_type=Path),
                     help="Folder for the points' runs, evaluations, curve.json and curve.png "
                          "(default: runs/<corpus>-curve-<model>)."),
        click.Option(["--json", "as_json"], is_flag=True,
                     help="Print curve.json instead of a table."),
        progress_option("inspect's progress display (default: when stderr is a terminal).")])
