"""Every extra installs what its commands import: ``pip install -e '.[eval]'`` once left out
openai, which inspect_ai's OpenAI provider imports, so the first ``mmconvert eval`` died with
ModuleNotFoundError.

For each extra, the distributions its requirements pull in (followed through the installed
packages' own metadata, markers and extras included) must provide every module its commands
import (``NEEDS``); and every third-party module the package imports anywhere must be a core
dependency's or one of an extra's, so a new lazy import cannot go without its extra.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as metadata
import re
import sys
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent

# what each extra's commands import (the modules, as ``import`` names them), beside the
# core dependencies'; eval's openai is what inspect_ai's OpenAI-compatible provider imports
NEEDS = {
    "dedup": ["sentence_transformers", "faiss", "torch", "transformers"],
    "occlude": ["spacy", "rapidfuzz"],
    "generate": ["openai"],
    "qa": ["rapidfuzz"],
    "stats": ["matplotlib"],
    "tokens": ["tokenizers", "huggingface_hub", "tiktoken"],
    "document": ["playwright", "markdown_it", "mdit_py_plugins", "pygments", "latex2mathml"],
    "augraphy": ["augraphy", "cv2"],
    "eval": ["inspect_ai", "openai"],
    "ray": ["ray"],
    "lm-eval": ["lm_eval"],
    "longbench": ["jieba", "rouge", "thefuzz"],
    "ocr": ["rapidocr_onnxruntime"],
}


def extras() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["project"]["optional-dependencies"]


def core() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def closure(requirements: list[str]) -> set[str]:
    """The installed distributions ``requirements`` pull in, followed through each one's own
    requirements (with the extras asked of it), by canonical name."""
    found: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    asked: set[tuple[str, str]] = set()
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonical(requirement.name)
        wanted = sorted(requirement.extras) or [""]
        for part in wanted:
            if (name, part) in asked:
                continue
            asked.add((name, part))
            if name == "mmconvert":
                todo += [(Requirement(r), part) for r in extras().get(part, [])]
                continue
            found.add(name)
            try:
                inner = metadata.requires(name) or []
            except metadata.PackageNotFoundError:
                continue
            todo += [(Requirement(r), part) for r in inner]
    return found


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=1)
def distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def providers(module: str) -> set[str]:
    return {canonical(d) for d in distributions().get(module, [])}


# what the package imports from a program it plugs into, which the user has installed
HOSTS = {"vlmeval": "VLMEvalKit, whose dataset class harness.vlmevalkit subclasses when present"}


def test_the_table_names_every_extra():
    assert set(NEEDS) == set(extras()) - {"all", "test"}


@pytest.mark.parametrize("extra", sorted(NEEDS))
def test_an_extra_installs_what_its_commands_import(extra):
    pulled = closure(extras()[extra])
    missing = [module for module in NEEDS[extra] if not providers(module) & pulled]
    assert missing == [], f"pip install 'mmconvert[{extra}]' installs no {missing}"


def test_every_third_party_import_is_a_dependency_or_an_extra_s():
    base = closure(core())
    named = {module for modules in NEEDS.values() for module in modules}
    stray = {}
    for path in (ROOT / "mmconvert").rglob("*.py"):
        if "templates" in path.parts:  # written into exports, run inside the harnesses
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and \
                not node.level else []
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("mmconvert", "__future__"):
                    continue
                if top in named or top in HOSTS or providers(top) & base:
                    continue
                stray.setdefault(top, []).append(str(path.relative_to(ROOT)))
    assert stray == {}
