from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

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


class Made(NamedTuple):
    """A run a session fixture made, and what its command printed."""

    out: Path
    output: str


@contextlib.contextmanager
def made_once(factory, name: str, make: Callable[[Path], str]) -> Iterator[Made]:
    """``make(folder)`` run once for the whole session, whatever the number of workers
    (pytest-xdist makes a session fixture once in each): the first worker to ask makes it
    under the temporary root they share, holding a lock, and the others wait and take it.
    The folder is read-only: checked when each worker's session ends (a test that changes a
    run copies it: ``copy_run``)."""
    import shutil

    from filelock import FileLock

    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's own root, above each worker's
    root = root / "made-once"
    root.mkdir(exist_ok=True)
    folder, said = root / name, root / f"{name}.output"
    with FileLock(root / f"{name}.lock"):
        if not said.exists():
            if folder.exists():  # a worker's make that failed part way
                shutil.rmtree(folder)
            output = make(folder)
            said.write_text(output, encoding="utf-8")
    before = tree_digest(folder)
    yield Made(folder, said.read_text(encoding="utf-8"))
    assert tree_digest(folder) == before, f"a test changed the shared {folder}: copy it first"


def rendered(*args) -> Callable[[Path], str]:
    """A ``make`` for ``made_once``: ``mmconvert render mmlu-redux ARGS --out FOLDER``, which
    must succeed; its output."""
    from tests.test_cli import run

    def make(out: Path) -> str:
        result = run("render", "mmlu-redux", *args, "--out", out)
        assert result.exit_code == 0, result.output
        return result.output
    return make


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory) -> Iterator[Path]:
    """The shipped sample rendered once for the session by the README's demo command, shared
    by the tests that only read a run (the golden table's ``run:render-sample`` among
    them)."""
    with made_once(tmp_path_factory, "sample",
                   rendered("--source", SAMPLE, "--ppi", "92.9")) as made:
        yield made.out


@pytest.fixture(scope="session")
def sample_pdf_run(tmp_path_factory) -> Iterator[Made]:
    """The shipped sample rendered once for the session with ``--pdf``, and the command's
    output."""
    with made_once(tmp_path_factory, "sample-pdf",
                   rendered("--source", SAMPLE, "--pdf")) as made:
        yield made


@pytest.fixture(scope="session")
def nonce_run(tmp_path_factory) -> Iterator[Path]:
    """The shipped sample rendered once for the session with ``--nonce 7``."""
    with made_once(tmp_path_factory, "nonce",
                   rendered("--source", SAMPLE, "--nonce", "7")) as made:
        yield made.out


@pytest.fixture(scope="session")
def csv_run(tmp_path_factory) -> Iterator[Path]:
    """The MMLU-Redux fixture's first six items rendered once for the session."""
    with made_once(tmp_path_factory, "csv",
                   rendered("--source", REDUX_CSV, "--limit", 6)) as made:
        yield made.out


def copy_run(shared: Path, to: Path) -> Path:
    """A copy of a shared run, for a test that changes it (links kept as links)."""
    import shutil

    shutil.copytree(shared, to, symlinks=True)
    return to


# the render ``files_and_shards`` makes both ways
SHARDED = {"corpus": "mmlu-redux", "source": REDUX_CSV, "pdf": True, "limit": 14}


@pytest.fixture(scope="session")
def files_and_shards(tmp_path_factory) -> Iterator[tuple[Path, Path]]:
    """``SHARDED`` rendered once for the session as files and as shards of 4 rows."""
    import mmconvert

    def make(root: Path) -> str:
        mmconvert.convert(SHARDED, out=root / "files", log=lambda line: None)
        mmconvert.convert({**SHARDED, "store": "shards", "shard_rows": 4},
                          out=root / "shards", log=lambda line: None)
        return ""

    with made_once(tmp_path_factory, "files-and-shards", make) as made:
        yield made.out / "files", made.out / "shards"


@pytest.fixture(scope="session")
def renderer():
    from mmconvert.renderers.page import PageRenderer

    return PageRenderer()


def make_item(**fields):
    from mmconvert.items import Item

    base = {"id": "t-0000", "corpus": "test", "subset": "t", "split": "test"}
    base.update(fields)
    return Item(**base)
