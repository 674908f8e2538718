"""lm-eval's own scoring of a stored doc: a generation task's filters and metrics applied to one
reply, as lm-eval's ``evaluate`` applies them, with the task built from lm-eval's own config.

The scorer (``answers.py``) calls it for an item whose spec is ``kind: lm-eval``; like the
scorer, it imports nothing from mmconvert, and every export copies it beside the scorer. It
needs lm-evaluation-harness and ``datasets`` (``answers.py`` checks them first, and names the
extra that installs them).
"""

from __future__ import annotations

import logging
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.tasks import TaskManager

# what lm-eval's regex filter gives when its pattern finds nothing
INVALID = "[invalid]"

_TASKS: dict[str, Any] = {}


class _EverySplit(dict):
    """A dataset whose every split is the same rows."""

    def __init__(self, rows):
        super().__init__()
        self.rows = rows

    def __missing__(self, split):
        return self.rows


def task(name: str, doc: dict):
    """lm-eval's task ``name`` built to score stored docs (once a process): its own config,
    filters and metrics, without ``process_docs`` (the docs are stored processed) and without
    its dataset (every split holds ``doc``)."""
    if name in _TASKS:
        return _TASKS[name]
    for logger in ("lm_eval", "lm-eval"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    rows = datasets.Dataset.from_list([doc])
    real = datasets.load_dataset
    datasets.load_dataset = lambda *args, **kwargs: _EverySplit(rows)
    try:
        manager = _TASKS.get("") or TaskManager()
        _TASKS[""] = manager
        loaded = manager.load({"group": "mmconvert-scoring",
                               "task": [{"task": name, "process_docs": None}]})
    finally:
        datasets.load_dataset = real
    _TASKS[name] = next(iter(loaded["tasks"].values()))
    return _TASKS[name]


def scores(name: str, doc: dict, reply: str
           ) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Every filter the task defines applied to ``reply``, and its metrics on each:
    ``{filter: {metric: value}}`` (lm-eval's own filters and ``process_results``), and what
    each filter kept of the reply."""
    built = task(name, doc)
    request = Instance(request_type="generate_until", doc=doc, arguments=("", {}), idx=0)
    request.resps = [reply]
    for pipeline in built._filters:
        pipeline.apply([request])
    found = {kept: {metric: float(value)
                    for metric, value in built.process_results(doc, [response]).items()}
             for kept, response in request.filtered_resps.items()}
    return found, {kept: str(response) for kept, response in request.filtered_resps.items()}
