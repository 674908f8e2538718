"""The options the commands share, made from the config's models: ``--config``, where a run
goes and how (``config.ExecutionOptions``), the executor (``config.Backend``), and the flags a
named corpus brings (``corpus_model``)."""

from __future__ import annotations

from pathlib import Path

import click

from .command_base import CORPUS_FLAGS_NOTE, CorpusCommand, reports_errors
from .config import FLAGS, Backend, ExecutionOptions, build, load_yaml
from .errors import MMConvertError
from .flags import first_argument, model_flags

CONFIG = click.Option(["--config", "config_file"], type=click.Path(path_type=Path),
                      help="YAML file of options (the config's fields); flags override it.")


def backend_options(fn):
    """``config.Backend``'s flags (``--executor``, ``--ray-address``) on a command that reads
    a run; its callback takes ``executor`` and ``address`` and calls ``use_backend``."""
    params = fn.__dict__.setdefault("__click_params__", [])
    params.extend(reversed([flag.option for flag in model_flags(Backend)]))
    return fn


def use_backend(executor: str | None, address: str | None) -> None:
    given = {"executor": executor, "address": address}
    build(Backend, {k: v for k, v in given.items() if v is not None}).use()


def read_config(config_file: Path | None) -> tuple[dict, str]:
    """A ``--config`` file's values and the origin its messages name."""
    if config_file is None:
        return {}, FLAGS
    return load_yaml(config_file), f"--config {config_file}"


def execution_flags(default_out: str, skip=()):
    flags = model_flags(ExecutionOptions, skip=skip)
    for flag in flags:
        if flag.path == ("out",):
            flag.option.help = f"Folder to write (default: {default_out})."
    return flags


def corpus_model(params: list[click.Parameter], args: list[str]):
    """The options model of the corpus a command of ``params`` names first in ``args``, or
    None (none named, or not a corpus: the run says so in its own words)."""
    name = first_argument(params, args)
    if not name:
        return None
    from .corpora import resolve  # the corpora's modules, only once a command names one

    try:
        return type(resolve(name)).options_model
    except (MMConvertError, OSError, ValueError):
        return None


def corpus_command(name: str, callback, params, make, model, help: str | None = None
                   ) -> CorpusCommand:
    """A command whose CORPUS argument brings its own flags (``cli.CorpusCommand``): ``model``
    is the options model its flags are for (None: the command lists no corpus flag and says
    where they are), ``make(model)`` the command for another."""
    return CorpusCommand(name, callback=reports_errors(callback), help=help or callback.__doc__,
                         params=params, make=make, pick=corpus_model,
                         epilog=None if model else CORPUS_FLAGS_NOTE.format(command=name))


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
    return corpus_command(name, callback, params, make, model, help)
