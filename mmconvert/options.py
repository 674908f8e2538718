"""What every option model shares: unknown keys are refused (with a did-you-mean where the
message is made, ``config.build``), and so are NaN and the infinities, which no option means
(``--rotate nan`` reached Pillow as a NaN angle). A model's validator is built when it is
first used, not at import: a command builds the few it needs (40 ms of a render's start-up)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

if TYPE_CHECKING:
    from pydantic.json_schema import JsonDict

OPTIONS = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


def first_error(err) -> dict[str, Any]:
    """The first problem of a pydantic ``ValidationError`` (``loc``, ``msg``, ``type``,
    ``input``), its message without pydantic's ``Value error, `` prefix."""
    first = dict(err.errors()[0])
    first["msg"] = first["msg"].removeprefix("Value error, ")
    return first


def cli(flag: str | None = None, *, short: str | None = None, default: str | None = None,
        prefix: str | None = None, enable: str | None = None, split: bool = False,
        metavar: str | None = None, off: bool = False) -> JsonDict:
    """A field's command-line flag, for ``Field(json_schema_extra=cli(...))`` (``flags.py``
    makes the click option; the field's ``description`` is its help):

    - ``flag``: its name when not ``--<field-name>`` (``--subset`` for ``subsets``);
      ``short``: a one-letter alias (``-o``);
    - ``default``: the default its help states when the model's is None and the code
      resolves it ("the corpus'");
    - on a field holding an options model: ``prefix`` before its fields' flags, and
      ``enable``: a flag that turns it on with its defaults (``--dedup``);
    - ``split``: a list given as one comma-separated value (``--ppi 72,92.9``);
    - ``off``: no flag (set in a YAML config only).
    """
    given = {"flag": flag, "short": short, "default": default, "prefix": prefix,
             "enable": enable, "split": split or None, "metavar": metavar, "off": off or None}
    return {"cli": {k: v for k, v in given.items() if v is not None}}


def flag_of(name: str, info) -> str:
    """The flag of field ``name`` (its ``FieldInfo``): ``cli``'s ``flag``, or ``--<name>``."""
    extra = info.json_schema_extra
    data = extra.get("cli") or {} if isinstance(extra, dict) else {}
    return data.get("flag") or "--" + name.replace("_", "-")


# the largest options file read (a --config, a style file): a few KB in practice
MAX_OPTIONS_BYTES = 1 << 20


def read_yaml(text: str):
    """YAML as option files hold it (``--config``, style files): plain mappings, lists and
    scalars. Anchors and aliases (``&a``, ``*a``) are refused with a ValueError: no option
    needs them, and nine aliases of nine aliases ("a billion laughs") are a billion values
    to every reader after the parser (2.7 GB and a minute in one style field)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise ValueError(f"an alias (*{event.anchor}) at line "
                                 f"{event.start_mark.line + 1}: option files take no anchors "
                                 "or aliases; write the value out")
            return super().compose_node(parent, index)

    if len(text) > MAX_OPTIONS_BYTES:
        raise ValueError(f"{len(text):,} characters, over the {MAX_OPTIONS_BYTES:,} an "
                         "options file may hold")
    try:
        data = yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader
    except RecursionError:
        raise ValueError(f"nested deeper than the {MAX_OPTIONS_DEPTH} levels an options file "
                         "may hold") from None
    except yaml.YAMLError as err:  # a tag such as !!python/object/apply: refused, nothing ran
        raise ValueError(f"not valid YAML ({' '.join(str(err).split())[:200]})") from None
    if depth(data) > MAX_OPTIONS_DEPTH:
        raise ValueError(f"nested deeper than the {MAX_OPTIONS_DEPTH} levels an options file "
                         "may hold")
    return data


# how deeply an options file's mappings and lists may nest (a style's draw is four deep)
MAX_OPTIONS_DEPTH = 32


def depth(value: Any, limit: int = 1000) -> int:
    """How deeply ``value``'s dicts and lists nest (0 for a scalar), counted without
    recursion, and not past ``limit``."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, level = todo.pop()
        deepest = max(deepest, level)
        if level >= limit:
            break
        if isinstance(item, dict):
            todo += [(v, level + 1) for v in item.values()]
        elif isinstance(item, (list, tuple)):
            todo += [(v, level + 1) for v in item]
    return deepest
