"""Run VLMEvalKit's own ``run.py`` (its ``--config`` path) with mmconvert's ``RenderedDataset``
as one of the kit's dataset classes. Used by ``test_vlmevalkit_run.py`` in VLMEvalKit's
environment: ``python vlmevalkit_run.py CHECKOUT run.py's arguments...``.

Two things are set before run.py starts, and nothing else:
- ``vlmeval.dataset.RenderedDataset``: run.py's ``--config`` finds a dataset's ``class`` there;
- a stand-in for ``torchvision``: ``import vlmeval`` imports it (``vlmeval/dataset/
  mmlongbenchdoc.py``, line 11, ``import torchvision.transforms``, reached through
  ``vlmeval.tools`` -> ``config`` -> ``api`` -> ``dataset``), and no torchvision wheel runs
  with the CPU torch: PyPI's 0.28.0, torch 2.13's pair, stops at its import with
  "RuntimeError: operator torchvision::nms does not exist" (its ops are built for the CUDA
  torch). The stand-in lets modules name torchvision; any call into it raises, so a path that
  used it would fail, not pass.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import runpy
import sys
import types
from pathlib import Path


class Absent:
    """A torchvision name: it may be named and looked into, never called."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Absent:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Absent(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} was called: torchvision is not installed here")

    def __mro_entries__(self, bases):
        return (object,)


def absent(module: str, attr: str) -> Absent:
    if attr.startswith("__"):
        raise AttributeError(attr)
    return Absent(f"{module}.{attr}")


class Stand(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        module.__getattr__ = lambda attr: absent(spec.name, attr)  # type: ignore
        return module

    def exec_module(self, module):
        pass


def main() -> None:
    checkout = Path(sys.argv[1]).resolve()
    # transformers asks once whether torchvision is installed: it is told the truth (no)
    # before the stand-in is there
    import transformers.utils.import_utils  # noqa: F401

    sys.meta_path.insert(0, Stand())
    sys.path.insert(0, str(checkout))
    import vlmeval.dataset

    from mmconvert.harness.vlmevalkit import RenderedDataset

    vlmeval.dataset.RenderedDataset = RenderedDataset
    sys.argv = [str(checkout / "run.py"), *sys.argv[2:]]
    runpy.run_path(str(checkout / "run.py"), run_name="__main__")


if __name__ == "__main__":
    main()
