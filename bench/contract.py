"""The shape of the code, as issue 43 measures it, for this checkout and for another commit
(``--base REV``, read from git without checking it out):

- the minimal plugin renderer (``docs/plugins.md``'s ``Banner``): the names it imports from
  mmconvert, the modules they come from and their lines (what its author reads), the members
  it states or implements, and those concepts together;
- the renderer contract: ``Renderer``'s attributes and methods, and those without a default;
- the longest module and the longest function of the package;
- upward imports (``tests/test_layers.py``; this checkout only) and mypy's error count
  (``--mypy``: about a minute, this checkout only).

    python bench/contract.py --base 930af3d --mypy
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n# file: (?P<path>\S+)\n(?P<body>.*?)^```$", re.M | re.S)


def source(rev: str | None, rel: str) -> str:
    if rev is None:
        return (ROOT / rel).read_text(encoding="utf-8")
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{rel}"], check=True,
                          capture_output=True, text=True).stdout


def files(rev: str | None) -> list[str]:
    if rev is None:
        return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "mmconvert").rglob("*.py"))
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev,
                             "mmconvert"], check=True, capture_output=True, text=True).stdout
    return sorted(p for p in listed.splitlines() if p.endswith(".py"))


def module_file(module: str, known: list[str]) -> str | None:
    base = module.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if candidate in known:
            return candidate
    return None


def plugin_renderer(rev: str | None) -> dict:
    """What the docs' example renderer takes: the mmconvert names its renderer's code uses,
    their modules and lines, and the members its classes state or implement."""
    doc = source(rev, "docs/plugins.md")
    body = next(m["body"] for m in FENCE.finditer(doc) if m["path"].endswith("__init__.py"))
    tree = ast.parse(body)
    imported = {}  # name -> module
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mmconvert"):
            for alias in node.names:
                imported[alias.asname or alias.name] = node.module
    # the renderer's part: Banner and the classes and functions it names, transitively
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    wanted, queue = set(), ["Banner"]
    while queue:
        name = queue.pop()
        if name in wanted or name not in defs:
            continue
        wanted.add(name)
        queue += [n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)]
    used = {n.id for name in wanted for n in ast.walk(defs[name]) if isinstance(n, ast.Name)}
    names = sorted(n for n in imported if n in used)
    modules = sorted({imported[n] for n in names})
    known = files(rev)
    lines = sum(source(rev, f).count("\n") for m in modules if (f := module_file(m, known)))
    members = sorted({t.id for name in wanted for node in defs[name].body
                      if isinstance(node, ast.Assign) for t in node.targets
                      if isinstance(t, ast.Name)}
                     | {t.id for name in wanted for node in defs[name].body
                        if isinstance(node, ast.Assign) for t in node.targets
                        if isinstance(t, ast.Tuple) for t in t.elts if isinstance(t, ast.Name)}
                     | {node.name for name in wanted for node in defs[name].body
                        if isinstance(node, ast.FunctionDef)})
    return {"classes": sorted(wanted), "names": names, "modules": modules, "lines": lines,
            "members": members, "concepts": len(names) + len(members),
            "code_lines": sum(defs[n].end_lineno - defs[n].lineno + 1 for n in wanted)}


def renderer_contract(rev: str | None) -> dict:
    tree = ast.parse(source(rev, "mmconvert/renderers/base.py"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Renderer")
    attributes = [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)
                  and isinstance(n.target, ast.Name)]
    required = [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)
                and isinstance(n.target, ast.Name) and n.value is None
                and n.target.id not in ("REQUIRED", "HOOKS")]
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef)
               and not n.name.startswith("_")]
    return {"attributes": len(attributes), "without_default": required,
            "methods": len(methods)}


def longest(rev: str | None) -> dict:
    modules, functions = [], []
    for rel in files(rev):
        text = source(rev, rel)
        modules.append((text.count("\n"), rel))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
    return {"module": max(modules), "function": max(functions),
            "modules_over_700": sum(1 for n, _ in modules if n > 700)}


def show(label: str, rev: str | None) -> None:
    plugin, contract, sizes = plugin_renderer(rev), renderer_contract(rev), longest(rev)
    print(f"== {label}")
    print(f"plugin renderer ({', '.join(plugin['classes'])}, {plugin['code_lines']} lines): "
          f"{len(plugin['names'])} names from {len(plugin['modules'])} modules "
          f"({plugin['lines']} lines to read), {len(plugin['members'])} members "
          f"stated or implemented; {plugin['concepts']} concepts")
    print(f"  names: {', '.join(plugin['names'])}")
    print(f"  members: {', '.join(plugin['members'])}")
    print(f"Renderer: {contract['attributes']} attributes "
          f"({len(contract['without_default'])} without a default: "
          f"{', '.join(contract['without_default'])}), {contract['methods']} methods")
    print(f"longest module: {sizes['module'][1]} ({sizes['module'][0]} lines); "
          f"modules over 700 lines: {sizes['modules_over_700']}")
    print(f"longest function: {sizes['function'][1]} ({sizes['function'][0]} lines)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a commit to compare with (read from git)")
    parser.add_argument("--mypy", action="store_true", help="count mypy's errors too")
    args = parser.parse_args()
    if args.base:
        show(f"base {args.base}", args.base)
    show("this checkout", None)
    layers = subprocess.run([sys.executable, "-m", "tests.test_layers"], cwd=ROOT,
                            capture_output=True, text=True)
    print(next(line for line in layers.stdout.splitlines() if line.startswith("upward")))
    if args.mypy:
        done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                              text=True)
        print("mypy:", done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
