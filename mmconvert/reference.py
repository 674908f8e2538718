"""``docs/reference.md``: every command with its flags, and every config key of every built-in
renderer, written from the CLI and the option models themselves. CI checks that the file is
what this writes (``tests/test_reference.py``), so a flag the docs do not show fails.

    python -m mmconvert.reference > docs/reference.md
"""

from __future__ import annotations

import inspect

import click
from pydantic import BaseModel

from .cli import main
from .config import submodel
from .flags import meta, model_flags, unwrap
from .registry import BUILT_IN
from .renderers import RENDERERS

HEAD = """# Reference

Every command and its flags, then every key a `--config` YAML file takes. Written by
`python -m mmconvert.reference > docs/reference.md` from the commands and the option models;
a test fails when this file and they differ. Plugins add their own commands and keys.
"""


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _command(lines: list[str], path: str, command: click.Command, ctx: click.Context) -> None:
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                _command(lines, f"{path} {name}", sub, click.Context(sub, parent=ctx,
                                                                   info_name=name))
        return
    usage = " ".join(command.collect_usage_pieces(ctx))
    text = inspect.cleandoc(command.help or "").replace("\b\n", "")
    lines += [f"## `{path}`", "", "```text", f"{path} {usage}", "", text, "```", "",
              "| flag | takes | what |", "|---|---|---|"]
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        flags = ", ".join(f"`{o}`" for o in param.opts + param.secondary_opts)
        takes = "" if param.is_flag else _cell(param.make_metavar(ctx))
        lines.append(f"| {flags} | {takes} | {_cell(param.help)} |")
    lines.append("")


def _keys(lines: list[str], model: type[BaseModel], prefix: str = "") -> None:
    for name, info in model.model_fields.items():
        inner = submodel(model, name)
        if inner is not None:
            _keys(lines, inner, f"{prefix}{name}.")
            continue
        default = "(required)" if info.is_required() else \
            info.get_default(call_default_factory=True)
        lines.append(f"| `{prefix}{name}` | {_cell(_kind(info.annotation))} | "
                     f"{'' if default is None else _cell(str(default))} | "
                     f"{_cell(info.description)} |")


def _kind(annotation) -> str:
    """A field's type as a reader says it: ``one of: gray, rgb``, ``list of number``."""
    from typing import Literal, get_args, get_origin


    plain, optional = unwrap(annotation)
    if isinstance(plain, list):
        text = " or ".join(_kind(a) for a in plain)
    elif get_origin(plain) is Literal:
        text = "one of: " + ", ".join(str(a) for a in get_args(plain))
    elif get_origin(plain) in (list, dict):
        text = f"{get_origin(plain).__name__} of " + ", ".join(_kind(a) for a in get_args(plain))
    else:
        text = {int: "integer", float: "number", str: "text", bool: "true/false"}.get(
            plain, getattr(plain, "__name__", str(plain)))
    return text + (" (or none)" if optional else "")


def reference() -> str:
    lines = [HEAD]
    ctx = click.Context(main, info_name="mmconvert")
    for name in main.list_commands(ctx):
        if name in RENDERERS and RENDERERS.provider(name) != BUILT_IN:
            continue
        command = main.get_command(ctx, name)
        _command(lines, f"mmconvert {name}", command,
                 click.Context(command, parent=ctx, info_name=name))
    lines += ["# Config keys", "",
              "A `--config` file holds these keys (a section such as `page:` as a mapping); "
              "run.json records the same. A flag given on the command line wins over the "
              "file.", ""]
    for name in RENDERERS.names():
        if RENDERERS.provider(name) != BUILT_IN:
            continue
        renderer = RENDERERS.get(name)
        lines += [f"## renderer `{name}`", "", "| key | type | default | what |",
                  "|---|---|---|---|"]
        _keys(lines, renderer.config_model)
        lines.append("")
    _corpus_options(lines)
    return "\n".join(lines).rstrip("\n") + "\n"


def _corpus_options(lines: list[str]) -> None:
    """Each built-in corpus's own options: its flags once it is named, and its keys under
    ``corpus_options:``."""
    from .corpora import CORPORA

    lines += ["# Corpus options", "",
              "A corpus's own options are flags once it is named (`mmconvert render CORPUS "
              "--help`) and the keys of a config's `corpus_options:` section. A corpus not "
              "listed takes none.", ""]
    for name in CORPORA.names():
        model = CORPORA.get(name).options_model
        if CORPORA.provider(name) != BUILT_IN or not model.model_fields:
            continue
        lines += [f"## corpus `{name}`", "", "| flag | key | type | default | what |",
                  "|---|---|---|---|---|"]
        flags = {flag.path[-1]: flag.name for flag in model_flags(model, choices=False)}
        for key, info in model.model_fields.items():
            default = info.get_default(call_default_factory=True)
            default = meta(info).get("default") if default in (None, [], False) else default
            lines.append(f"| `{flags.get(key, '')}` | `{key}` | {_cell(_kind(info.annotation))} "
                         f"| {'' if default is None else _cell(str(default))} "
                         f"| {_cell(info.description)} |")
        lines.append("")


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(reference())
