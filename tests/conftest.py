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


def tree_digest(folder: Path) -> str:
    """One sha256 over every file's name and bytes under ``folder``."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory) -> Path:
    """The shipped sample rendered once for the session (the README's demo run), shared by
    the tests that only read a run: read-only, checked when the session ends (a test that
    changes a run copies it first)."""
    from tests.test_cli import run

    out = tmp_path_factory.mktemp("sample") / "demo"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--out", out).exit_code == 0
    before = tree_digest(out)
    yield out
    assert tree_digest(out) == before, f"a test changed the shared {out}: copy it first"


def copy_run(shared: Path, to: Path) -> Path:
    """A copy of a shared run, for a test that changes it (links kept as links)."""
    import shutil

    shutil.copytree(shared, to, symlinks=True)
    return to


@pytest.fixture(scope="session")
def csv_run(tmp_path_factory) -> Path:
    """The MMLU-Redux fixture's first six items rendered once for the session: read-only,
    checked when the session ends (a test that changes a run copies it: ``copy_run``)."""
    from tests.test_cli import run

    out = tmp_path_factory.mktemp("csv") / "run"
    assert run("render", "mmlu-redux", "--source", REDUX_CSV, "--limit", 6,
               "--out", out).exit_code == 0
    before = tree_digest(out)
    yield out
    assert tree_digest(out) == before, f"a test changed the shared {out}: copy it first"


@pytest.fixture(scope="session")
def renderer():
    from mmconvert.renderers.page import PageRenderer

    return PageRenderer()


def make_item(**fields):
    from mmconvert.items import Item

    base = {"id": "t-0000", "corpus": "test", "subset": "t", "split": "test"}
    base.update(fields)
    return Item(**base)
