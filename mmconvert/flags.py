"""Click options made from the option models, so that a flag, its help and its default are the
model field's and cannot drift apart (``docs/reference.md`` is written from the same).

Every field of a model becomes ``--<field-name>`` unless its ``options.cli`` metadata says
otherwise; a field holding another options model (``page``, ``dedup``) contributes that model's
fields. A flag's value lands at its field's path in the config dict (``page.ppi``), over what a
``--config`` file gave; a flag not given leaves the value alone, so the model's default (or the
file's value) stands.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import click
from pydantic import BaseModel

from .errors import UsageError
from .parts import CORPORA


@dataclass(frozen=True)
class Flag:
    """One click option and the field it fills (``path``; ``enable``: it turns a section on)."""

    path: tuple[str, ...]
    option: click.Option
    split: type | None = None  # a comma-separated list's element type
    enable: bool = False

    @property
    def name(self) -> str:
        return self.option.opts[0]


def meta(info) -> dict[str, Any]:
    extra = info.json_schema_extra
    return dict(extra.get("cli") or {}) if isinstance(extra, dict) else {}


def _off(model: type[BaseModel], name: str) -> bool:
    """Whether field ``name`` has no flag, in ``model`` or a base that declares it (a run
    config's ``renderer``, narrowed by each renderer's subclass)."""
    return any(meta(base.model_fields[name]).get("off") for base in model.__mro__
               if isinstance(base, type) and issubclass(base, BaseModel)
               and name in base.model_fields)


def _sentence(text: str | None) -> str:
    text = (text or "").strip()
    return (text[:1].upper() + text[1:]).rstrip(".")


def unwrap(annotation: Any) -> tuple[Any, bool]:
    """The annotation without Optional and Annotated, and whether None is allowed."""
    optional = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            rest = [a for a in get_args(annotation) if a is not type(None)]
            optional = optional or len(rest) < len(get_args(annotation))
            if len(rest) != 1:
                return rest, optional
            annotation = rest[0]
        else:
            return annotation, optional


class _OnOrNumber(click.ParamType):
    """A flag that may take a number: given bare it is True (click would make that 1)."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        return True if value is True else click.INT.convert(value, param, ctx)


def _click_type(annotation: Any, choices: bool = True) -> click.ParamType | None:
    if isinstance(annotation, list):  # a union of several kinds: taken as text
        return click.STRING
    if get_origin(annotation) is Literal:
        return click.Choice([str(a) for a in get_args(annotation)]) if choices else click.STRING
    plain: dict[Any, click.ParamType] = {int: click.INT, float: click.FLOAT, str: click.STRING,
                                         Path: click.Path(path_type=Path)}
    return plain.get(annotation)


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(_shown(v) for v in value)
    return str(value)


def help_text(info, note: str = "") -> str:
    """The field's description as a sentence, with the default it states: the model's own (a
    ``cli(default=...)`` for one the code resolves)."""
    text = _sentence(info.description)
    stated = meta(info).get("default")
    if stated is None and not info.is_required():  # a required field states no default
        value = info.get_default(call_default_factory=True)
        stated = None if value in (None, False, [], {}, ()) else _shown(value)
    if stated is not None:
        text += f" (default: {stated})"
    return note + text + ("." if text else "")


def model_flags(model: type[BaseModel], path: tuple[str, ...] = (), *,
                skip: Iterable[str] = (), rename: dict[str, str] | None = None,
                prefix: str = "", note: str = "", choices: bool = True) -> list[Flag]:
    """The flags of ``model``'s fields (and of the models its fields hold), ``skip`` (dotted
    paths) left out, ``rename`` (dotted path to flag) renamed, ``note`` before each help;
    ``choices=False``: a field of a few values takes text, which the model checks."""
    from .config import submodel

    skip, rename = set(skip), rename or {}
    flags: list[Flag] = []
    for name, info in model.model_fields.items():
        full, data = (*path, name), meta(info)
        dotted = ".".join(full)
        if dotted in skip or _off(model, name):
            continue
        inner = submodel(model, name)
        if inner is not None:
            if data.get("enable"):
                flags.append(Flag(full, click.Option(
                    [data["enable"], "__".join(full) + "__on"], is_flag=True, default=None,
                    help=note + _sentence(info.description) + "."),
                    enable=True))
            flags += model_flags(inner, full, skip=skip, rename=rename, note=note,
                                 prefix=prefix + data.get("prefix", ""), choices=choices)
            continue
        flag = rename.get(dotted) or data.get("flag") or \
            "--" + prefix + name.replace("_", "-")
        param = "__".join(full)
        names = [flag] + ([data["short"]] if data.get("short") else []) + [param]
        annotation, optional = unwrap(info.annotation)
        common: dict[str, Any] = {"default": None, "help": help_text(info, note),
                  "metavar": data.get("metavar")}
        if annotation is bool:
            default = info.get_default(call_default_factory=True)
            if default is False and not optional:
                option = click.Option(names, is_flag=True, **common)
            else:
                negative = "--no-" + flag.removeprefix("--")
                option = click.Option([f"{flag}/{negative}", param], **common)
        elif isinstance(annotation, list) and {unwrap(a)[0] for a in annotation} == {bool, int}:
            # on, or a number: bare it is True ("--shuffle-options"), else the number given
            option = click.Option(names, type=_OnOrNumber(), is_flag=False, flag_value=True,
                                  **common)
        elif get_origin(annotation) is list:
            element, _ = unwrap(get_args(annotation)[0])
            kind = _click_type(element, choices) or click.STRING
            if data.get("split"):
                option = click.Option(names, type=click.STRING, **common)
            else:
                option = click.Option(names, type=kind, multiple=True, **common)
            flags.append(Flag(full, option, split=element if data.get("split") else None))
            continue
        else:
            single = _click_type(annotation, choices)
            if single is None:  # a mapping or other structure: a config file's only
                continue
            option = click.Option(names, type=single, **common)
        flags.append(Flag(full, option))
    return flags


def _items(text: str, flag: Flag) -> list[Any]:
    """``"72,92.9,150"`` as the list's elements; one line naming the flag otherwise."""
    kind = flag.split if flag.split in (int, float) else str
    try:
        return [kind(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}",
                                 param_hint=flag.name) from None


def fill(flags: list[Flag], given: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (a config file's, or {}) with every flag that was given set at its path;
    the flags' parameters are taken out of ``given``."""
    for flag in flags:
        value = given.pop(flag.option.name, None)
        if value is None or value == ():
            continue
        *parents, last = flag.path
        where = values
        for part in parents:
            where[part] = dict(where.get(part) or {})
            where = where[part]
        if flag.enable:
            where[last] = dict(where.get(last) or {})
        elif flag.split:
            where[last] = _items(value, flag)
        else:
            where[last] = list(value) if isinstance(value, tuple) else value
    return values


def given_names(flags: list[Flag], given: dict[str, Any]) -> list[str]:
    """The flags of ``flags`` that ``given`` (click's parameters) holds a value for."""
    return [f.name for f in flags if given.get(f.option.name) not in (None, ())]


def flag_names(flags: list[Flag]) -> dict[str, str]:
    """Field name to flag, for ``config.build``'s messages."""
    return {f.path[-1]: f.name for f in flags if not f.enable}


def corpus_flags(options_model: type[BaseModel] | None) -> list[Flag]:
    """The flags of a corpus's options (``corpus_options.<field>``), and, hidden, those of
    every other registered corpus: given to a corpus that does not take them, they are one
    line naming the corpus's own (``corpora.base.check_corpus_options``), not click's "no
    such option". The corpus's model checks the values, so a choice takes text here."""
    own = model_flags(options_model, ("corpus_options",), choices=False) \
        if options_model is not None else []
    names = {flag.name for flag in own}
    others: list[Flag] = []
    for corpus in CORPORA.names():
        try:
            model = CORPORA.get(corpus).options_model
        except UsageError:  # a broken plugin: its one line when it is used
            continue
        for flag in model_flags(model, ("corpus_options",), choices=False):
            if flag.name not in names:
                names.add(flag.name)
                flag.option.hidden = True
                others.append(flag)
    return own + others


def first_argument(params: list[click.Parameter], args: list[str]) -> str | None:
    """The first positional argument in ``args`` for a command of ``params`` (an option's
    value skipped): the CORPUS a command's corpus flags follow."""
    options = [param for param in params if isinstance(param, click.Option)
               and not param.is_flag and not param.count]
    takes_value = {name for param in options for name in param.opts + param.secondary_opts}
    may_take = {name for param in options if isinstance(param.type, _OnOrNumber)
                for name in param.opts}  # a value only when one follows, as click reads it
    position = 0
    while position < len(args):
        arg = args[position]
        if arg == "--":
            return args[position + 1] if position + 1 < len(args) else None
        if arg.startswith("-") and arg != "-":
            following = args[position + 1] if position + 1 < len(args) else "-"
            bare = arg in may_take and following.startswith("-")
            position += 2 if arg in takes_value and not bare else 1
            continue
        return arg
    return None
