"""The renderers' commands: ``render`` (the default renderer, or ``--renderer NAME``, or a
recipe's), and one per other registered renderer (``occlude``, ``generate``, a plugin's), each
made from its renderer's config model; and ``run_and_report``, which carries out a run for
them and for ``sweep``."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from .command_base import OneLineError, one_line
from .command_options import CONFIG, corpus_command, execution_flags, read_config
from .config import ApiOptions, ExecutionOptions, build
from .converter import convert, preview
from .errors import BudgetReached, MMConvertError, UsageError
from .flags import corpus_flags, fill, flag_names, model_flags
from .parts import DEFAULT, renderer_class
from .recipes import load_recipe
from .recipes.resolve import resolve_config


def run_and_report(config, execution, api=None, resolved=None):
    """Carry out a run; its notes and summary line go to stderr. ``resolved``: how its config
    was put together (``recipes.resolve.resolve_config``), for run.json."""
    summary = convert(config, execution=execution, api=api, resolved=resolved,
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


def recipe_renderer(args: list[str]) -> str | None:
    """The renderer of the recipe ``--recipe`` names in ``args``, or None (none named, or a
    recipe that cannot be read: the command says why in its own words)."""
    named = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--recipe"),
                 next((arg.split("=", 1)[1] for arg in args if arg.startswith("--recipe=")),
                      None))
    if not named:
        return None
    try:
        return load_recipe(named).renderer
    except MMConvertError:
        return None


RECIPE = click.Option(["--recipe"], metavar="NAME|FILE",
                      help="A recipe (mmconvert list recipes, or a recipe file): its renderer, "
                           "style, scope, options, target and transforms, under --config and "
                           "the flags.")


@functools.cache
def run_command(renderer_name: str, name: str, corpus_options=None) -> click.Command:
    """The command of a renderer: CORPUS, its config's flags (the selection's, its options'),
    the flags of CORPUS's options (``corpus_options``: its options model, once it is named),
    where and how it runs, and for a paid renderer the API's flags and ``--dry-run``."""
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
    config_model = renderer.config_model
    config_flags = model_flags(config_model) + corpus_flags(corpus_options)
    api_flags = model_flags(ApiOptions) if renderer.paid else []
    exec_flags = execution_flags(f"runs/<corpus>{suffix}")
    names = flag_names(config_flags + api_flags + exec_flags)

    def callback(corpus, config_file, recipe=None, renderer=None, dry_run=False, **given):
        # ``renderer``: render's --renderer, already resolved (``Main.resolve_command``), as
        # is a recipe's renderer
        values, origin = read_config(config_file)
        api_values = dict(values.pop("api", None) or {}) if api_flags else {}
        resolved = resolve_config(
            [(origin, values), ("argument", {"corpus": corpus}),
             ("flag", fill(config_flags, given, {}))],
            recipe=recipe or None, corpus=corpus,
            renderer=config_model.model_fields["renderer"].default,
            mismatch=f": use mmconvert render CORPUS --recipe {recipe}",
            warn=lambda m: click.echo(m, err=True))
        config = build(config_model, resolved.values, origin, flags=names,
                       sources=resolved.sources)
        api = build(ApiOptions, fill(api_flags, given, api_values), origin, flags=names) \
            if api_flags else None
        execution = fill(exec_flags, given, {"out": Path("runs") / f"{Path(corpus).stem}{suffix}"})
        execution = build(ExecutionOptions, execution, flags=names)
        if dry_run:
            assert api is not None  # a paid renderer's command takes the API's options
            blocks, summary = preview(config, api, log=lambda m: click.echo(m, err=True))
            click.echo("\n".join(blocks))
            click.echo(summary, err=True)
            return
        run_and_report(config, execution, api, resolved)

    params = [click.Argument(["corpus"]), CONFIG, RECIPE]
    if name == "render":
        params.append(click.Option(["--renderer"], default=renderer.name, show_default=True,
                                   help="The renderer (mmconvert list renderers); its own "
                                        "flags follow."))
    if renderer.paid:
        params.append(click.Option(["--dry-run"], is_flag=True,
                                   help="Print the prompts, counts and estimated cost; call "
                                        "nothing, write nothing."))
    return corpus_command(name, callback,
                          params + [f.option for f in config_flags + exec_flags + api_flags],
                          make=lambda model: run_command(renderer_name, name, model),
                          model=corpus_options, help=renderer.help or renderer.__doc__)
