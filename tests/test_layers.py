"""The package's layers: no module imports one from a higher layer, at the top of the file or
inside a function, except for the declared exceptions below, each with its reason. Imports
under ``if TYPE_CHECKING:`` are annotations only and do not count.

``python -m tests.test_layers`` prints the figures: each layer's modules, the upward imports
and the exceptions.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mmconvert"

# lowest first; a module is in the first layer whose pattern matches its dotted name
LAYERS: list[tuple[str, str]] = [
    # what everything may use: errors, option models' base, items, the manifest's files,
    # registries, the standalone scorer (shipped inside exports, so it imports nothing)
    ("foundation", r"errors|options|seeds|items|registry|parts|manifest|units|progress"
                   r"|_version|plots|locks"
                   r"|scoring\.answers|scoring\.vcr_official|scoring\.lm_eval_scoring"
                   r"|exporters\.templates(\..*)?"),
    # the run's records and settings: rows, run folders, configs, the job contract, executors,
    # the API client, prompts, token counting, the registries of parts by name
    ("storage", r"rows|shards|runfolder|resuming|config|jobs|executors(\..*)?|api(\..*)?"
                r"|prompts|tokens|vision_tokens|qa\.events|renderers|postprocess\.transforms"),
    # what a renderer draws with
    ("drawing", r"renderers\.(fonts|layout|shaping|drawing|pdfwriter|spans|scripts"
                r"|style_files|styled|target|prediction|base|page_options)"
                r"|imaging|postprocess\.transforms\.base"),
    # the parts: corpora, renderers, transforms, exporters, and what scores an item
    ("parts", r"corpora(\.(?!commands)[a-z_]+)?|renderers\.[a-z_.]+"
              r"|postprocess\.transforms\.[a-z_]+|postprocess\.apply|exporters|exporters\.(?!commands)[a-z_]+|scoring"
              r"|scoring\.(vcr|spec|transcription)"),
    # a run of parts: selection, the converter, sweeps and chains, QA, stats
    ("runs", r"selection|converter|stages|counting|postprocess|postprocess\.(sweep|chain)|qa"
             r"|qa\.(checks|ocr|textlayer|summary)|stats|recipes|recipes\.(training|resolve|fingerprints)"),
    # what a user types: the CLI, its flags, the commands and evaluation
    ("commands", r"|cli|flags|reference|__main__|[a-z_]+_command|command_(base|options)"
                 r"|evaluation(\..*)?"
                 r"|qa\.(review|commands)"
                 r"|(corpora|postprocess|exporters|scoring|recipes)\.commands|harness(\..*)?"),
]

# (importer, imported): reason. Each is an import from a lower layer to a higher one that is
# there on purpose; a new one needs its reason here.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int:
    name = module.removeprefix("mmconvert").removeprefix(".")
    for index, (_, pattern) in enumerate(LAYERS):
        if re.fullmatch(pattern, name):
            return index
    raise AssertionError(f"{module} is in no layer: add it to tests/test_layers.py's LAYERS")


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of import nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        inside.add(id(sub))
    return inside


def targets(module: str, path: Path, node: ast.Import | ast.ImportFrom,
            known: dict[str, Path]) -> list[str]:
    """The package's modules an import statement of ``module`` (at ``path``) imports."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if path.name != "__init__.py":
                package.pop()
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([node.module] if node.module else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                 for alias in node.names]
    found = []
    for name in names:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known:
            found.append(name)
    return found


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once a session (the tests here and ``bench/shape.py``
    walk the package several times)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def imports() -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every import of the package by itself."""
    known = modules()
    found = []
    for module, path in known.items():
        tree = parsed(path)
        skip = _type_checking_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                found += [(module, target, node.lineno)
                          for target in targets(module, path, node, known)]
    return found


def upward() -> list[tuple[str, str, int]]:
    return sorted((a, b, line) for a, b, line in imports() if layer_of(b) > layer_of(a))


def test_every_module_has_a_layer():
    for module in modules():
        layer_of(module)


def _alternatives(pattern: str) -> list[str]:
    """``pattern``'s top-level alternatives, each group of plain names (``(fonts|layout)``)
    expanded into one alternative a name."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(pattern):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(pattern[start:at])
            start = at + 1
    parts.append(pattern[start:])
    out = []
    for part in parts:
        group = re.search(r"\(([a-z_|]+)\)", part)
        if group:
            out += _alternatives("|".join(part[:group.start()] + name + part[group.end():]
                                          for name in group.group(1).split("|")))
        else:
            out.append(part)
    return out


def test_the_map_names_only_modules_that_exist():
    known = [m.removeprefix("mmconvert").removeprefix(".") for m in modules()]
    stale = [f"{layer}: {alternative!r}" for layer, pattern in LAYERS
             for alternative in _alternatives(pattern)
             if not any(re.fullmatch(alternative, name) for name in known)]
    assert not stale, stale


def test_no_lower_layer_imports_a_higher_one():
    wrong = [f"{a}:{line} imports {b} ({LAYERS[layer_of(a)][0]} → {LAYERS[layer_of(b)][0]})"
             for a, b, line in upward() if (a, b) not in EXCEPTIONS]
    assert not wrong, "\n".join(wrong)


def test_each_exception_is_still_needed():
    pairs = {(a, b) for a, b, _ in upward()}
    assert not set(EXCEPTIONS) - pairs, set(EXCEPTIONS) - pairs


def main() -> None:
    by_layer: dict[int, list[str]] = {}
    for module in sorted(modules()):
        by_layer.setdefault(layer_of(module), []).append(module)
    for index, (name, _) in enumerate(LAYERS):
        print(f"{name}: {len(by_layer.get(index, []))} modules")
    found = upward()
    print(f"upward imports: {len({(a, b) for a, b, _ in found})} module pairs "
          f"({len(found)} statements)")
    for a, b, line in found:
        reason = EXCEPTIONS.get((a, b))
        print(f"  {a}:{line} → {b}" + (f"  [declared: {reason}]" if reason else "  [NOT DECLARED]"))


if __name__ == "__main__":
    main()


@functools.cache
def _shape():
    import importlib.util

    spec = importlib.util.spec_from_file_location("shape", PACKAGE.parent / "bench" / "shape.py")
    assert spec is not None and spec.loader is not None
    shape = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shape)
    return shape


def test_under_the_strict_map_only_the_declared_imports_go_up():
    """Issue 56's stricter map (``bench/shape.py``): at most three imports go up, each declared
    with its reason; a new one, or one no longer there, fails here."""
    shape = _shape()
    assert set(shape.upward()) == set(shape.DECLARED) and len(shape.DECLARED) <= 3
    assert not shape.cycles(shape.call_time_pairs())


def test_every_import_kept_inside_a_function_is_declared_with_its_cost():
    """The package's own modules are imported at the top of a module unless the import is in
    ``bench/shape.py``'s ``LAZY``, with what importing it at the top would cost the
    importer's start (or why else it waits): a new hidden dependency fails here, as does an
    entry no longer needed."""
    shape = _shape()
    declared = {(shape.full(a), shape.full(b)) for a, b in shape.LAZY}
    found = shape.inside_functions()
    assert found - declared == set(), sorted(found - declared)
    assert declared - found == set(), sorted(declared - found)
