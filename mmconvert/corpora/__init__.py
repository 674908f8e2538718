"""Corpus loaders, registered by name and imported only when used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..parts import CORPORA
from .base import Corpus, LoadReport, LoadRequest


def resolve(name: str) -> Corpus:
    """A registered corpus by name, a corpus that takes an argument as ``NAME:ARGUMENT``
    (``lm-eval:arc_easy``), or a local file in the generic schema."""
    from .files import LocalFile, is_table_path

    if name not in CORPORA and (is_table_path(name) or Path(name).is_file()):
        return LocalFile(Path(name))
    prefix, sep, argument = name.partition(":")
    if sep and prefix in CORPORA and CORPORA.get(prefix).argument:
        named: Any = CORPORA.get(prefix)  # a corpus that takes an argument is made with it
        return named(argument)
    return CORPORA.get(name)()


__all__ = ["CORPORA", "Corpus", "LoadReport", "LoadRequest", "resolve"]
