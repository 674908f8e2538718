"""Public names (issue 56 part 6): no two modules define a public function or class of one
name unless it means the same thing in both (a command's ``plot``, ``table``), or it is a
collision already known, listed below with its meanings, to be renamed. A new collision fails
here; so does a listed one that no longer collides (the list only shrinks)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import mmconvert

# the same meaning in each module that defines it
SAME_MEANING = {
    "plot": "each command's plot of its result (stats, curve, frontier, a sweep's eval)",
    "table": "each command's text table of its result",
    "point_config": "the render config of a curve's or a frontier's point",
    "convert": "mmconvert.convert is converter.convert, imported when called",
    "load_recipe": "mmconvert.load_recipe is recipes.load_recipe, imported when called",
    "main": "the CLI's entry point, and the shipped score.py's",
}
# different meanings under one name, known, to be renamed: name -> the modules' meanings (none
# left: the last 14 were renamed in one commit)
KNOWN: dict[str, str] = {}
STANDALONE = "exporters/templates/"  # shipped files, copied out as they are


def public_names() -> dict[str, list[str]]:
    package = Path(mmconvert.__file__).parent
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith(STANDALONE):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) \
                    and not node.name.startswith("_"):
                found[node.name].append(rel)
    return {name: where for name, where in found.items() if len(set(where)) > 1}


def test_no_new_public_name_means_two_things():
    shared = public_names()
    new = {name: where for name, where in shared.items()
           if name not in SAME_MEANING and name not in KNOWN}
    assert not new, new
    gone = sorted(set(KNOWN) - set(shared))
    assert not gone, f"no longer shared, take them off KNOWN: {gone}"
