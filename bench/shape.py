"""The package's shape, as issue 56 measures it: the longest function and module, the imports
of the package's own modules made inside functions, the upward imports under the issue's
strict map, import cycles (top-level, and with the call-time imports too), the CLI layer's
lines and the ``row["…"]`` reads. Every figure is counted from the source with ``ast``.

    python bench/shape.py [--list]
    python bench/shape.py --measure   # what each import kept inside a function would cost

The imports of the package's own modules kept inside functions are declared in ``LAZY`` with
the cost that keeps them there; the ones that go up the strict map in ``DECLARED``, with their
reasons. tests/test_layers.py holds the package to both.

The strict map (issue 56), lowest first: base (errors, options, items, registry, config, rows,
runfolder, shards, jobs, prompts, flags, and the small utilities beside them: manifest, seeds,
units, progress, tokens, vision tokens, the API client, plot files), below parts (renderers,
corpora, executors, transforms, and the image operations they share), below pipelines
(converter, selection, qa, evaluation, exporters, scoring, stats, recipes, harness,
postprocess), below the CLI (cli, reference, the commands).
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_layers import (  # noqa: E402
    PACKAGE,
    _type_checking_only,
    modules,
    parsed,
    targets,
)

STRICT: list[tuple[str, str]] = [
    ("base", r"errors|options|items|registry|parts|config|rows|runfolder|resuming|shards|jobs"
             r"|prompts|flags|locks"
             r"|manifest|seeds|units|progress|_version|tokens|vision_tokens|api(\..*)?|plots"),
    ("parts", r"imaging|renderers(\..*)?|corpora(\.(?!commands)[a-z_]+)?|executors(\..*)?"
              r"|postprocess\.transforms(\..*)?"),
    ("pipelines", r"converter|stages|selection|counting|qa(\.(?!commands|review)[a-z_]+)?"
                  r"|evaluation(\.(?!commands)[a-z_]+)?"
                  r"|exporters(\.(?!commands)[a-z_.]+)?|scoring(\.(?!commands)[a-z_]+)?|stats"
                  r"|recipes(\.(?!commands)[a-z_]+)?|harness(\.(?!commands)[a-z_.]+)?"
                  r"|postprocess(\.(?!commands)[a-z_]+)?"),
    ("cli", r"|cli|reference|__main__|[a-z_]+_command|command_(base|options)|[a-z_.]+\.commands"
            r"|qa\.review"),
]
# the imports that go up under STRICT, each there on purpose (tests/test_layers.py holds the
# set to this one)
DECLARED: dict[tuple[str, str], str] = {
    ("mmconvert.config", "mmconvert.postprocess.transforms"):
        "a config's transforms are checked when it is read, by the transforms' own parser "
        "(parse_step), so a bad step is one line before any item is drawn",
    ("mmconvert.corpora.files", "mmconvert.scoring.answers"):
        "the free-form metric names a JSONL item may choose are the standalone scorer's "
        "(FREE_METRICS), written once; the scorer imports nothing, so no cycle",
    ("mmconvert.corpora.longbench", "mmconvert.scoring.answers"):
        "LongBench's metric for each subset is the standalone scorer's table "
        "(LONGBENCH_METRICS), written once",
}
# the package's own modules imported inside functions, by importer, each with what importing it
# there would add to the importer's own import (seconds, ``python bench/shape.py --measure``,
# 2 cores, at rest): kept lazy because each command's start pays for what its module imports
# (``mmconvert --version`` takes 0.06 s, ``render --help`` 0.35). Those marked otherwise are
# lazy for the reason given. tests/test_layers.py holds the imports to this list.
LAZY: dict[tuple[str, str], float | str] = {
    ("mmconvert", "converter"): 0.208,
    ("mmconvert", "recipes"): 0.122,
    ("cli", "render_command"): 0.191,
    ("command_options", "corpora"): 0.040,
    ("corpora", "corpora.files"): 0.015,
    ("flags", "config"): 0.030,
    ("harness", "corpora.lmeval"): 0.121,
    ("harness", "recipes"): 0.096,
    ("harness", "recipes.resolve"): 0.102,
    ("harness.runtime", "corpora.lmeval"): 0.115,
    ("harness.runtime", "recipes"): 0.093,
    ("harness.runtime", "recipes.fingerprints"): 0.094,
    ("harness.runtime", "scoring.answers"): 0.012,
    ("harness.vlmevalkit", "corpora"): 0.020,
    ("harness.vlmevalkit", "corpora.files"): 0.024,
    ("harness.vlmevalkit", "selection"): 0.029,
    ("imaging", "renderers.drawing"): 0.064,
    ("qa.checks", "qa.textlayer"): 0.014,
    ("recipes", "corpora.base"): 0.022,
    ("recipes", "corpora.files"): 0.036,
    ("recipes", "corpora.sources"): 0.022,
    ("recipes", "recipes.training"): "it imports recipes",
    ("recipes", "stages"): 0.072,
    ("reference", "corpora"): 0.031,
    ("renderers.generate", "api.client"): 0.013,
    ("scoring.spec", "corpora"): 0.029,
    ("scoring.spec", "scoring.vcr"): 0.022,
}
CLI = ("cli.py", "command_base.py", "command_options.py", "render_command.py",
       "list_command.py", "flags.py", "reference.py", "__main__.py")
ROW_READ = re.compile(r"""\brow\[["'][a-z_]+["']\]""")


def strict_layer(module: str) -> int:
    name = module.removeprefix("mmconvert").removeprefix(".")
    for index, (_, pattern) in enumerate(STRICT):
        if re.fullmatch(pattern, name):
            return index
    raise SystemExit(f"{module} is in no layer of the strict map")


@functools.cache
def edges() -> list[tuple[str, str, int, bool]]:
    """(importer, imported, line, inside a function) for every import of the package by
    itself, annotations-only imports left out."""
    known = modules()
    found = []
    for module, path in known.items():
        tree = parsed(path)
        skip = _type_checking_only(tree)
        inside: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside |= {id(sub) for sub in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                for target in targets(module, path, node, known):
                    if target != module:
                        found.append((module, target, node.lineno, id(node) in inside))
    return found


def lazy_commands() -> dict[str, str]:
    """``cli.LAZY``: each command the group imports by its module's name when it is used
    (``importlib``, so ``edges`` does not see it), by the module it is built in."""
    tree = parsed(PACKAGE / "cli.py")
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "LAZY" for t in node.targets))
    return {name: where.partition(":")[0] for name, where in ast.literal_eval(table).items()}


def call_time_pairs() -> set[tuple[str, str]]:
    """Every (importer, imported) pair, at the top of a file, inside a function, or through
    ``cli.LAZY``: the imports a cycle may run through at call time."""
    return ({(a, b) for a, b, _, _ in edges()}
            | {("mmconvert.cli", module) for module in lazy_commands().values()})


def cycles(pairs: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's), an import of a
    module's own enclosing package left out (Python's parent-package import, not a loop)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        if not a.startswith(b + "."):
            graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def upward() -> list[tuple[str, str]]:
    """The module pairs whose import goes up the strict map (at any time: call-time too)."""
    return sorted({(a, b) for a, b, _, _ in edges() if strict_layer(b) > strict_layer(a)})


def full(name: str) -> str:
    return name if name == "mmconvert" else f"mmconvert.{name}"


def inside_functions() -> set[tuple[str, str]]:
    """(importer, imported) for each import of the package's own modules inside a function."""
    return {(a, b) for a, b, _, inside in edges() if inside}


def import_cost(importer: str, target: str, tries: int = 3) -> float:
    """Seconds ``import target`` adds after ``import importer`` in a fresh interpreter (the sum
    of the self times ``-X importtime`` gives the modules it loads), the best of ``tries``."""
    best = float("inf")
    for _ in range(tries):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c",
                              f"import {importer}; import {target}"],
                             capture_output=True, text=True, check=True).stderr.splitlines()
        at = max(i for i, line in enumerate(err) if line.rstrip().endswith(f"| {importer}"))
        micro = sum(int(line.split("|")[0].split(":")[1]) for line in err[at + 1:]
                    if line.startswith("import time:")
                    and line.split("|")[0].split(":")[1].strip().isdigit())
        best = min(best, micro / 1e6)
    return best


def functions() -> list[tuple[int, str]]:
    found = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((length, f"{module}.{node.name}:{node.lineno}"))
    return sorted(found, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name each counted case")
    parser.add_argument("--measure", action="store_true",
                        help="measure what each import kept inside a function would add to its "
                             "importer's import, beside LAZY's figure")
    args = parser.parse_args()
    if args.measure:
        for a, b in sorted(inside_functions()):
            declared = LAZY.get((a.removeprefix("mmconvert."), b.removeprefix("mmconvert.")))
            print(f"{import_cost(a, b):.3f}  declared {declared!s:<8}  {a} -> {b}")
        return
    known = modules()
    found = edges()
    lines = sorted(((len(p.read_text(encoding="utf-8").splitlines()), m)
                    for m, p in known.items()), reverse=True)
    longest = functions()
    # statements, not names: ``from . import a, b`` inside a function is one
    inner = {(a, line) for a, _, line, inside in found if inside}
    top = {(a, line) for a, _, line, inside in found if not inside}
    up = upward()
    top_cycles = cycles({(a, b) for a, b, _, inside in found if not inside})
    commands = lazy_commands()
    all_cycles = cycles(call_time_pairs())
    cli_lines = sum(len((PACKAGE / name).read_text(encoding="utf-8").splitlines())
                    for name in CLI)
    reads = [(m, len(ROW_READ.findall(p.read_text(encoding="utf-8"))))
             for m, p in known.items()]
    reads = [(m, n) for m, n in reads if n]
    print(f"longest function: {longest[0][0]} lines ({longest[0][1]}); "
          f"over 80 lines: {sum(1 for n, _ in longest if n > 80)}")
    print(f"longest module: {lines[0][0]} lines ({lines[0][1]}); "
          f"over 600: {sum(1 for n, _ in lines if n > 600)}")
    print(f"imports of the package's own modules inside functions: {len(inner)} "
          f"statements (at the top of files: {len(top)}); and {len(commands)} commands "
          "the group imports by module name when one is used (cli.LAZY)")
    print(f"upward imports under the strict map: {len(up)} module pairs")
    print(f"import cycles: {len(top_cycles)} at the top level, {len(all_cycles)} with the "
          "call-time imports (cli.LAZY's among them)")
    own = len((PACKAGE / "cli.py").read_text(encoding="utf-8").splitlines())
    print(f"CLI layer: cli.py {own} lines ({', '.join(CLI)}: {cli_lines})")
    print(f"row[\"…\"] reads: {sum(n for _, n in reads)} in {len(reads)} files")
    if args.list:
        print("\nfunctions over 80 lines:", *(f"  {n} {name}" for n, name in longest if n > 80),
              sep="\n")
        print("modules over 600 lines:", *(f"  {n} {m}" for n, m in lines if n > 600),
              sep="\n")
        print("upward imports:", *(f"  {a} ({STRICT[strict_layer(a)][0]}) -> {b} "
                                   f"({STRICT[strict_layer(b)][0]})" for a, b in up), sep="\n")
        print("cycles with call-time imports:", *(f"  {' <-> '.join(c)}" for c in all_cycles),
              sep="\n")


if __name__ == "__main__":
    main()
