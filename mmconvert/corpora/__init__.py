"""Corpus loaders, registered by name and imported only when used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..registry import Registry
from .base import Corpus, LoadReport, LoadRequest

CORPORA: Registry[type[Corpus]] = Registry("corpus", "mmconvert.corpora",
                                           "mmconvert.corpora.base:Corpus")
for _name, _target in (
    ("mmlu", "mmlu:MMLU"),
    ("mmlu-redux", "mmlu:MMLURedux"),
    ("mmlu-pro", "mmlu:MMLUPro"),
    ("gpqa", "gpqa:GPQA"),
    ("babilong", "babilong:BABILong"),
    ("longbench", "longbench:LongBench"),
    ("logiqa", "logiqa:LogiQA"),
    ("logiqa2", "logiqa:LogiQA2"),
    ("cmmlu", "exams:CMMLU"),
    ("ceval-zhtw", "exams:CEvalZhTW"),
    ("tmmluplus", "exams:TMMLUPlus"),
    ("captions", "captions:Captions"),
    ("lm-eval", "lmeval:LmEval"),
    ("niah", "niah:Niah"),
):
    CORPORA.register(_name, f"mmconvert.corpora.{_target}")


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
