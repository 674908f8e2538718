"""How many tests render MMLU-Redux (issue 56, part 8: ``render mmlu-redux`` runs in under 25
tests): the suite (or the paths given) runs once with every run of the MMLU-Redux corpus
recorded against the test running it, in pytest's own process, its workers and any
``mmconvert`` a test starts as a subprocess. A session fixture's render is counted once, against
the test that first asked for it. A run counts as drawing when it drew (or failed to draw) an
item; one refused before its first item, or resumed with nothing left to do, does not.

    python bench/redux_renders.py [pytest args ...]

By default, the README's two runs: ``-n auto -m "not ray_cluster"``, then ``-m ray_cluster``.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Loaded by every Python the run starts (PYTHONPATH): wraps the converter's run when the
# module is first imported, and appends the running test's name for each MMLU-Redux run.
HOOK = '''
import importlib.abc, importlib.machinery, os, sys

class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "mmconvert.converter":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            inner = module._convert

            def _convert(config, *args, **kwargs):
                corpus = kwargs.get("corpus")
                name = getattr(corpus, "name", None) or str(config.corpus)
                if name != "mmlu-redux":
                    return inner(config, *args, **kwargs)
                drew = 0
                try:
                    summary = inner(config, *args, **kwargs)
                    drew = summary.rendered + summary.failed
                    return summary
                finally:
                    with open(os.environ["REDUX_RENDERS_LOG"], "a") as log:
                        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
                        log.write(f"{test}\\t{drew}\\n")
            module._convert = _convert
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Finder())
'''


def main() -> None:
    runs = [sys.argv[1:]] if sys.argv[1:] else [["-n", "auto", "-m", "not ray_cluster"],
                                                ["-m", "ray_cluster"]]
    with tempfile.TemporaryDirectory() as hook:
        Path(hook, "sitecustomize.py").write_text(HOOK)
        log = Path(hook, "renders.log")
        log.touch()
        env = {**os.environ, "REDUX_RENDERS_LOG": str(log),
               "PYTHONPATH": os.pathsep.join(filter(None, [hook,
                                                           os.environ.get("PYTHONPATH")]))}
        for args in runs:
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                                   "no:cacheprovider", *args], cwd=ROOT, env=env,
                                  capture_output=True, text=True)
            print(" ".join(args) + ": " + (done.stdout.strip().splitlines() or [""])[-1])
        lines = log.read_text().splitlines()
    runs = [line.split("\t") for line in lines]
    tests = collections.Counter(test for test, _ in runs)
    drawing = collections.Counter(test for test, drew in runs if int(drew))
    for test, count in sorted(tests.items()):
        print(f"{count:3d} runs, {drawing[test]:3d} drawing  {test}")
    print(f"render mmlu-redux: {len(runs)} runs in {len(tests)} tests "
          f"({len({t.split('::')[0] for t in tests})} files); runs that drew an item: "
          f"{sum(drawing.values())} in {len(drawing)} tests "
          f"({len({t.split('::')[0] for t in drawing})} files)")


if __name__ == "__main__":
    main()
