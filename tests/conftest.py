from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REDUX_CSV = FIXTURES / "mmlu-redux"
REDUX_HUB = FIXTURES / "mmlu-redux-hub"
SAMPLE = Path(__file__).parent.parent / "mmconvert" / "samples" / "mmlu-redux"

# Nothing in the tests may reach a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def renderer():
    from mmconvert.renderers.page import PageRenderer

    return PageRenderer()


def make_item(**fields):
    from mmconvert.items import Item

    base = {"id": "t-0000", "corpus": "test", "subset": "t", "split": "test"}
    base.update(fields)
    return Item(**base)
