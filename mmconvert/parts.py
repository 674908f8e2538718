"""The registries of mmconvert's parts, by name: renderers, corpora, transforms and executors.

Each entry is a ``"module:Class"`` string, loaded the first time the part is asked for, so the
modules below the parts (configs, flags, rows) ask for a part by its name through here without
importing any part. Each part's package re-exports its registry (``renderers.RENDERERS``,
``corpora.CORPORA``, ...) with the functions that need the part's own code.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .registry import Registry

if TYPE_CHECKING:
    from .corpora.base import Corpus
    from .executors.base import Executor
    from .postprocess.transforms.base import Transform
    from .renderers.base import Renderer

RENDERERS: Registry[type[Renderer]] = Registry("renderer", "mmconvert.renderers",
                                                "mmconvert.renderers.base:Renderer")
RENDERERS.register("page", "mmconvert.renderers.page:PageRenderer")
RENDERERS.register("occlude", "mmconvert.renderers.occlude:CaptionOccluder")
RENDERERS.register("generate", "mmconvert.renderers.generate:ImageApiRenderer")
RENDERERS.register("document", "mmconvert.renderers.document:DocumentRenderer")

DEFAULT = "page"  # the renderer of a run that names none

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

TRANSFORMS: Registry[type[Transform]] = Registry(
    "transform", "mmconvert.transforms", "mmconvert.postprocess.transforms.base:Transform")
TRANSFORMS.register("scale", "mmconvert.postprocess.transforms.scale:Scale")
TRANSFORMS.register("rotate", "mmconvert.postprocess.transforms.rotate:Rotate")
TRANSFORMS.register("jpeg", "mmconvert.postprocess.transforms.jpeg:Jpeg")
TRANSFORMS.register("blur", "mmconvert.postprocess.transforms.blur:Blur")
TRANSFORMS.register("noise", "mmconvert.postprocess.transforms.noise:Noise")
TRANSFORMS.register("augraphy", "mmconvert.postprocess.transforms.augraphy:Augraphy")

EXECUTORS: Registry[type[Executor]] = Registry("executor")
EXECUTORS.register("inline", "mmconvert.executors.local:InlineExecutor")
EXECUTORS.register("process", "mmconvert.executors.local:ProcessExecutor")
EXECUTORS.register("thread", "mmconvert.executors.local:ThreadExecutor")
EXECUTORS.register("ray", "mmconvert.executors.ray:RayExecutor")

# where this invocation runs its work: LOCAL (this machine's inline, process or thread executor,
# by ``executors.local_executor``) or a registered cluster executor (a ``ClusterExecutor``) with
# its address (``--executor ray [--ray-address HOST:PORT]``); set by ``use`` for a run
LOCAL = "local"
BACKEND: ContextVar[tuple[str, str | None]] = ContextVar("backend", default=(LOCAL, None))


def renderer_class(name: Any, where: str = "") -> type[Renderer]:
    """The registered renderer called ``name``; an unknown one is a one-line error (naming
    ``where``, e.g. the manifest line) with a did-you-mean."""
    if not isinstance(name, str) or name not in RENDERERS:
        message = RENDERERS.unknown_message(str(name))
        raise UsageError(f"{where}: {message}" if where else message)
    return RENDERERS.get(name)


def row_renderer(row: Any, where: str = "") -> type[Renderer]:
    """The renderer class a manifest row names (a typed row, or a line's JSON object)."""
    record = row.get("renderer") if isinstance(row, dict) else getattr(row, "renderer", None)
    name = record.get("name") if isinstance(record, dict) else getattr(record, "name", None)
    return renderer_class(name, f"{where}: field renderer.name" if where else "")


def backends() -> list[str]:
    """What ``--executor`` takes: ``local`` and every cluster executor registered."""
    return [LOCAL] + [cls.name for cls in EXECUTORS.usable() if cls.cluster]


def use(name: str, address: str | None = None) -> None:
    """Run this invocation's work on ``name`` (``local``, or a cluster executor)."""
    if name not in backends():
        raise UsageError(f"unknown executor {name!r} (choose from {', '.join(backends())})")
    BACKEND.set((name, address))
