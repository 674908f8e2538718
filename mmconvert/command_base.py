"""What every command shares with click alone: an error as one line (``reports_errors``), the
command class whose CORPUS brings its own flags (``CorpusCommand``), and the options several
commands take. The commands' modules build on it; ``cli``, the group, imports it and no
command."""

from __future__ import annotations

import errno
import functools
import re

import click

from .errors import MMConvertError


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


class CorpusCommand(click.Command):
    """A command whose CORPUS argument brings its own flags: the corpus's options model's.
    ``pick(params, args)`` finds that model among the command line's arguments (None when they
    name no corpus this version knows; ``command_options.corpus_model``), and ``make(model)``
    builds the command with its flags; this one, made with none, lists no corpus flag and says
    where they are."""

    def __init__(self, *args, make, pick, **kwargs):
        super().__init__(*args, **kwargs)
        self.make = make
        self.pick = pick

    def for_corpus(self, args: list[str]) -> click.Command:
        """The command with the flags of the corpus ``args`` name (itself when they name none
        this version knows)."""
        model = self.pick(self.params, list(args))
        return self if model is None else self.make(model)


CORPUS_FLAGS_NOTE = ("CORPUS's own options (mmconvert list corpora) are flags once it is "
                     "named: mmconvert {command} CORPUS --help lists them.")


def progress_option(help="Progress bar (default: when stderr is a terminal)."):
    return click.Option(["--progress/--no-progress"], default=None, help=help)


def reject_votes_option(fn):
    return click.option("--reject-votes", type=click.IntRange(min=1), default=1,
                        show_default=True,
                        help="Reviewers who must reject an item before it counts as rejected "
                             "(VisTW removes a submission after more than two down-votes: 3)."
                        )(fn)
