"""The ``mmconvert`` command: a thin click layer over the library."""

from __future__ import annotations

import errno
import functools
import importlib
import re
from pathlib import Path

import click

from ._version import __version__
from .errors import BudgetReached, MMConvertError, UsageError
from .parts import DEFAULT, EXECUTORS, LOCAL, RENDERERS, TRANSFORMS, renderer_class, use
from .registry import BUILT_IN


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
        self.exit_code = error.exit_code  # type: ignore[misc]  # click's class default, per error


def reports_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MMConvertError as err:
            raise OneLineError(err) from None
        except OSError as err:  # a read-only folder, a full disk: one line, not a traceback
            raise OneLineError(MMConvertError(disk_error(err))) from None
        except RuntimeError as err:
            # pathlib's resolve() of a symbolic link that leads back to itself, wherever a
            # path given is resolved (a font, an image, a source)
            loop = LOOP.match(str(err))
            if loop is None:
                raise
            raise OneLineError(MMConvertError(
                f"{loop.group(1)}: a symbolic link that leads back to itself (a loop)")) \
                from None
    return wrapper


LOOP = re.compile(r"^Symlink loop from '(.*)'$")


def disk_error(err: OSError) -> str:
    where = f"{err.filename}: " if err.filename else ""
    if err.errno == errno.ELOOP:
        return f"{where}a symbolic link that leads back to itself (a loop)"
    hint = {errno.ENOSPC: " (the disk is full)", errno.EROFS: " (the file system is read-only)",
            errno.EACCES: " (no permission)"}.get(err.errno or 0, "")
    return f"{where}cannot write: {err.strerror or err}{hint}"


class Main(click.Group):
    """The commands: the fixed ones, ``render`` (the default renderer, or ``--renderer NAME``)
    and one per other registered renderer (``occlude``, ``generate``, a plugin's), each built
    from its renderer's models when it is used."""

    def list_commands(self, ctx):
        return sorted({*self.commands, *LAZY, "render",
                       *(n for n in RENDERERS.names() if n != DEFAULT)})

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        if name in LAZY:
            return lazy_command(name)
        if name == "render" or (name in RENDERERS and name != DEFAULT):
            return run_command(DEFAULT if name == "render" else name, name)
        return None

    def resolve_command(self, ctx, args):
        """``render --renderer NAME ...``: the command of renderer NAME, under ``render``; a
        command that reads a corpus takes the named corpus's own flags."""
        name, command, rest = self._resolve(ctx, args)
        if isinstance(command, CorpusCommand):
            command = command.for_corpus(rest)
        return name, command, rest

    def _resolve(self, ctx, args):
        if args and args[0] == "render":
            for position, arg in enumerate(args[1:-1], start=1):
                if arg == "--renderer":
                    return "render", run_command(args[position + 1], "render"), args[1:]
            for arg in args[1:]:
                if arg.startswith("--renderer="):
                    return "render", run_command(arg.split("=", 1)[1], "render"), args[1:]
            named = recipe_renderer(args[1:])
            if named is not None:  # a recipe's renderer, unless --renderer says otherwise
                return "render", run_command(named, "render"), args[1:]
        if args and not args[0].startswith("-"):
            command = self.get_command(ctx, args[0])
            if command is None:
                import difflib

                close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1)
                ctx.fail(f"No such command {args[0]!r}" + (f"; did you mean {close[0]!r}?"
                                                           if close else "."))
            return args[0], command, args[1:]
        return super().resolve_command(ctx, args)


@click.group(cls=Main,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mmconvert")
def main():
    """Turn text benchmarks and corpora into image benchmarks for vision-language models."""
    use(LOCAL)  # each invocation starts local; --executor says otherwise


CONFIG = click.Option(["--config", "config_file"], type=click.Path(path_type=Path),
                      help="YAML file of options (the config's fields); flags override it.")


def backend_options(fn):
    """``config.Backend``'s flags (``--executor``, ``--ray-address``) on a command that reads
    a run; its callback takes ``executor`` and ``address`` and calls ``use_backend``."""
    from .config import Backend
    from .flags import model_flags

    params = fn.__dict__.setdefault("__click_params__", [])
    params.extend(reversed([flag.option for flag in model_flags(Backend)]))
    return fn


def use_backend(executor: str | None, address: str | None) -> None:
    from .config import Backend, build

    given = {"executor": executor, "address": address}
    build(Backend, {k: v for k, v in given.items() if v is not None}).use()


def read_config(config_file: Path | None) -> tuple[dict, str]:
    """A ``--config`` file's values and the origin its messages name."""
    from .config import FLAGS, load_yaml

    if config_file is None:
        return {}, FLAGS
    return load_yaml(config_file), f"--config {config_file}"


def run_and_report(config, execution, api=None, resolved=None):
    """Carry out a run; its notes and summary line go to stderr. ``resolved``: how its config
    was put together (``recipes.resolve.resolve_config``), for run.json."""
    from .converter import convert

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


def execution_flags(default_out: str, skip=()):
    from .config import ExecutionOptions
    from .flags import model_flags

    flags = model_flags(ExecutionOptions, skip=skip)
    for flag in flags:
        if flag.path == ("out",):
            flag.option.help = f"Folder to write (default: {default_out})."
    return flags


def recipe_renderer(args: list[str]) -> str | None:
    """The renderer of the recipe ``--recipe`` names in ``args``, or None (none named, or a
    recipe that cannot be read: the command says why in its own words)."""
    named = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--recipe"),
                 next((arg.split("=", 1)[1] for arg in args if arg.startswith("--recipe=")),
                      None))
    if not named:
        return None
    from .recipes import load_recipe

    try:
        return load_recipe(named).renderer
    except MMConvertError:
        return None


RECIPE = click.Option(["--recipe"], metavar="NAME|FILE",
                      help="A recipe (mmconvert list recipes, or a recipe file): its renderer, "
                           "style, scope, options, target and transforms, under --config and "
                           "the flags.")


class CorpusCommand(click.Command):
    """A command whose CORPUS argument brings its own flags: the corpus's options model's
    (``flags.corpus_flags``). ``make(options_model)`` builds the command with them; this one,
    made with none, lists no corpus flag and says where they are."""

    def __init__(self, *args, make, **kwargs):
        super().__init__(*args, **kwargs)
        self.make = make

    def for_corpus(self, args: list[str]) -> click.Command:
        """The command with the flags of the corpus ``args`` name (itself when they name none
        this version knows)."""
        from .flags import first_argument

        model = corpus_options_model(first_argument(self.params, list(args)))
        return self if model is None else self.make(model)


CORPUS_FLAGS_NOTE = ("CORPUS's own options (mmconvert list corpora) are flags once it is "
                     "named: mmconvert {command} CORPUS --help lists them.")


def corpus_options_model(name: str | None):
    """The options model of the corpus called ``name``, or None (none named, or not a
    corpus: the run says so in its own words)."""
    from .corpora import resolve

    if not name:
        return None
    try:
        return type(resolve(name)).options_model
    except (MMConvertError, OSError, ValueError):
        return None


@functools.cache
def lazy_command(name: str) -> click.Command:
    """Command ``name`` of ``LAZY``, built once a process from its package's module."""
    module, _, builder = LAZY[name].partition(":")
    return getattr(importlib.import_module(module), builder)()


@functools.cache
def run_command(renderer_name: str, name: str, corpus_options=None) -> click.Command:
    """The command of a renderer: CORPUS, its config's flags (the selection's, its options'),
    the flags of CORPUS's options (``corpus_options``: its options model, once it is named),
    where and how it runs, and for a paid renderer the API's flags and ``--dry-run``."""
    from .config import ApiOptions
    from .flags import corpus_flags, fill, flag_names, model_flags

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
        from .config import ExecutionOptions, build
        from .recipes.resolve import resolve_config

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
            from .converter import preview

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
    return CorpusCommand(name, callback=reports_errors(callback),
                         help=renderer.help or renderer.__doc__,
                         epilog=None if corpus_options else CORPUS_FLAGS_NOTE.format(
                             command=name),
                         params=params + [f.option for f in config_flags + exec_flags + api_flags],
                         make=lambda model: run_command(renderer_name, name, model))


def command(name: str, callback, flags=(), params=(), help: str | None = None,
            corpus: tuple | None = None) -> click.Command:
    """A command of ``params`` and the generated ``flags``, its errors one line. ``corpus``:
    (the options model its flags are for, or None; ``make``, the command for another) for a
    command whose CORPUS argument brings its own flags."""
    params = [*params, *(f.option for f in flags)]
    if corpus is None:
        return click.Command(name, callback=reports_errors(callback),
                             help=help or callback.__doc__, params=params)
    model, make = corpus
    return CorpusCommand(name, callback=reports_errors(callback), help=help or callback.__doc__,
                         params=params, make=make,
                         epilog=None if model else CORPUS_FLAGS_NOTE.format(command=name))


def progress_option(help="Progress bar (default: when stderr is a terminal)."):
    return click.Option(["--progress/--no-progress"], default=None, help=help)


def reject_votes_option(fn):
    return click.option("--reject-votes", type=click.IntRange(min=1), default=1,
                        show_default=True,
                        help="Reviewers who must reject an item before it counts as rejected "
                             "(VisTW removes a submission after more than two down-votes: 3)."
                        )(fn)


@main.command("list")
@click.argument("kind", type=click.Choice(["corpora", "renderers", "transforms", "exporters",
                                           "executors", "styles", "recipes"]), required=False)
def list_parts(kind):
    """List the registered corpora, renderers, transforms, exporters and executors, with the
    package that provides each plugin (entry points: mmconvert.corpora, .renderers,
    .transforms, .exporters; see docs/plugins.md), the page styles render --style takes, and
    the shipped recipes."""
    from .corpora import CORPORA
    from .exporters import EXPORTERS

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
    if kind in (None, "styles"):
        from .renderers.fonts import PAGE_FONTS
        from .renderers.style_files import describe_preset, presets

        click.echo("styles (render --style NAME, or a style file):")
        for name, path in presets().items():
            click.echo(f"  {name:<14} {describe_preset(path)}")
        click.echo(f"  faces for --font and a style's font: {', '.join(PAGE_FONTS)}, or any "
                   "TTF/OTF/TTC file")
    if kind in (None, "recipes"):
        from .recipes import load_recipe, shipped

        click.echo("recipes (render --recipe NAME, harness --recipe NAME, or a recipe file):")
        for name in shipped():
            found = load_recipe(name)
            line = " ".join(found.description.split())
            click.echo(f"  {name:<20} {line[:150]}")


# the other packages' commands, imported when used (``Main.get_command``): ``mmconvert qa
# check`` imports no renderer
LAZY = {"dedup": "mmconvert.corpora.commands:dedup_command",
        "stats": "mmconvert.stats_command:stats_command",
        "sweep": "mmconvert.postprocess.commands:sweep_command",
        "transform": "mmconvert.postprocess.commands:transform_command",
        "eval": "mmconvert.evaluation.commands:eval_command",
        "frontier": "mmconvert.evaluation.commands:frontier_command",
        "curve": "mmconvert.evaluation.commands:curve_command",
        "qa": "mmconvert.qa.commands:qa_command",
        "export": "mmconvert.exporters.commands:export_command",
        "score": "mmconvert.scoring.commands:score_command",
        "recipe": "mmconvert.recipes.commands:recipe_command",
        "harness": "mmconvert.harness.commands:harness_command"}


if __name__ == "__main__":  # pragma: no cover
    main()
