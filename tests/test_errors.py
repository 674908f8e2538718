"""Every mmconvert error survives pickling, fields and all: a process worker's or a Ray actor's
error comes back to the driver as itself (``ItemFiltered`` raised TypeError on Ray)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import mmconvert
from mmconvert.errors import MMConvertError


def every_error_class() -> list[type]:
    for module in pkgutil.walk_packages(mmconvert.__path__, "mmconvert."):
        if module.name.endswith("__main__"):
            continue
        importlib.import_module(module.name)
    found, todo = [], [MMConvertError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted({c for c in found if c.__module__.startswith("mmconvert")},
                  key=lambda c: (c.__module__, c.__qualname__))


def example(cls: type) -> MMConvertError:
    """An instance with every parameter set (keyword-only fields included)."""
    kwargs = {}
    try:
        parameters = inspect.signature(cls).parameters
    except ValueError:  # Exception's own __init__: a message alone
        return cls("the reason")
    for name, parameter in parameters.items():
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[name] = f"{name}-value"
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs.update(where="file.csv line 3", field="question", item_id="x-001")
    return cls("the reason", **kwargs)


CLASSES = every_error_class()


def test_the_walk_finds_the_errors_workers_raise():
    names = {c.__name__ for c in CLASSES}
    assert {"ItemError", "ItemFiltered", "UsageError", "SourceError", "RunFolderError",
            "ApiFailure", "ApiRefusal", "BudgetReached"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_error_round_trips_through_pickle(cls):
    err = example(cls)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls
    assert str(again) == str(err) and again.args == err.args
    assert again.__dict__ == err.__dict__
    assert getattr(again, "exit_code", 1) == getattr(err, "exit_code", 1)


# modules that write "pip install" themselves, each with its reason
OWN_HINTS = {
    "errors.py": "the helper itself",
    "scoring/answers.py": "the shipped scorer, which imports nothing of mmconvert",
    "scoring/vcr_official.py": "VCR's official scorer, shipped as it is",
    "config.py": "the help of --executor ray, not an error",
    "evaluation/run.py": "results.json's note for the heat maps (its bytes kept)",
    "renderers/spans.py": "spaCy's English model, not a Python extra",
}


def test_every_install_hint_is_made_by_one_helper():
    """An optional dependency that is missing is one line from ``errors.needs`` (as
    inspect_ai's ``pip_dependency_error``), never a hint written by hand."""
    import ast
    from pathlib import Path

    from mmconvert.errors import needs

    package = Path(mmconvert.__file__).parent
    by_hand = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in OWN_HINTS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # what follows the helper's command (``then=" (install torch first: ...)"``)
        then = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.keyword)
                and node.arg == "then" for sub in ast.walk(node.value)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and "pip install" in node.value and id(node) not in then:
                by_hand.append(f"{rel}:{node.lineno}")
    # a module docstring may say how its extra is installed
    by_hand = [where for where in by_hand if not where.endswith(":1")]
    assert not by_hand, by_hand
    assert needs("qa check", "rapidfuzz", "qa") == "qa check needs rapidfuzz: pip install " \
        "'mmconvert[qa]'"
    assert needs("--dedup-index faiss", "faiss", install="faiss-cpu") == \
        "--dedup-index faiss needs faiss: pip install faiss-cpu"
