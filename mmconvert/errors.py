"""One error hierarchy. The CLI prints ``str(error)`` on one line and exits non-zero."""

from __future__ import annotations


def did_you_mean(name: str, known, cutoff: float = 0.6) -> str:
    """'; did you mean 'x'?' for the entry of ``known`` closest to ``name``, or ''."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


def needs(what: str, package: str, extra: str | None = None, *, install: str = "",
          then: str = "") -> str:
    """The one line of an optional dependency that is not installed: ``what`` needs
    ``package``, and the pip command that installs it: the extra (``mmconvert[extra]``), or
    ``install`` (default: the package); ``then``: what follows the command, e.g. " (or
    --no-plots)". Every install hint is made here (the shipped scorer, ``scoring.answers``,
    which imports nothing of mmconvert, writes its own)."""
    command = f"'mmconvert[{extra}]'" if extra else (install or package)
    return f"{what} needs {package}: pip install {command}{then}"


def first_line(err: BaseException | str, limit: int | None = None, *,
               kind: bool = False) -> str:
    """The first line of an exception's message (its class name when it has none), cut to
    ``limit`` characters; ``kind``: led by the class name, ``OSError: ...``."""
    text = str(err).strip()
    if kind and isinstance(err, BaseException):
        text = f"{type(err).__name__}: {text}".strip()
    line = text.splitlines()[0] if text else type(err).__name__
    return line[:limit] if limit else line


def _rebuilt(cls: type[Exception], args: tuple, state: dict):
    """An error made again from its class, message arguments and fields, whatever its
    ``__init__`` takes (``pickle`` would call ``cls(*args)``, which an error with keyword-only
    fields cannot take: ``ItemFiltered`` crossing a Ray worker raised TypeError)."""
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class MMConvertError(Exception):
    """Base class of every error mmconvert reports to a user. Every one survives pickling
    (a process worker's, a Ray actor's error comes back to the driver) with its fields."""

    exit_code = 1

    def __reduce__(self):
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


class UsageError(MMConvertError):
    """Options that do not fit together, or an unknown name."""

    exit_code = 2


class SourceError(MMConvertError):
    """A corpus source that is missing, unreadable or of the wrong shape."""


class ItemError(MMConvertError):
    """A problem with one item; ``--on-error skip`` records it and goes on.

    ``where`` names the file and row (or the item id) and ``field`` the field, so the
    message reads ``<where>: field <field>: <reason>``.
    """

    # recorded in skipped.jsonl whatever --on-error says (a rule's drop, a failed API request)
    always_recorded = False

    def __init__(self, reason: str, *, where: str = "", field: str = "", item_id: str = "",
                 stage: str = "load"):
        self.reason = reason
        self.where = where
        self.field = field
        self.item_id = item_id
        self.stage = stage
        super().__init__(self._message())

    def _message(self) -> str:
        parts = [p for p in (self.where, f"field {self.field}" if self.field else "") if p]
        return ": ".join([*parts, self.reason])


class ItemFiltered(ItemError):
    """An item a rule leaves out (the occluder's height limit), not a fault of the data: it is
    recorded in skipped.jsonl and counted in the summary whatever ``--on-error`` says.
    ``rule`` names the rule in a few words ("too short", "over --max-height"), which the
    summary counts by."""

    always_recorded = True

    def __init__(self, reason: str, *, rule: str, **kwargs):
        kwargs.setdefault("stage", "filter")
        self.rule = rule
        super().__init__(reason, **kwargs)


class RunFolderError(MMConvertError):
    """The output folder belongs to another run."""


class HubUnavailableError(SourceError):
    """The Hugging Face hub could not be reached."""


class BudgetReached(MMConvertError):
    """The next request would take the spend past ``--budget`` (``api.prices`` keeps it)."""

    exit_code = 3
