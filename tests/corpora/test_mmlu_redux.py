"""MMLU-Redux from every local form: release CSVs, hub parquet, save_to_disk; and the hub."""

from __future__ import annotations

import os

import pytest

from mmconvert.corpora import LoadReport, LoadRequest, resolve
from mmconvert.corpora.base import load_request
from mmconvert.errors import HubUnavailableError, ItemError, SourceError, UsageError
from tests.conftest import REDUX_CSV, REDUX_HUB


def load(**request):
    report = LoadReport()
    corpus = resolve("mmlu-redux")
    items = list(corpus.load(load_request(corpus, request), report))
    return items, report


def test_release_csv_folder_keeps_only_ok_rows_and_counts_the_rest():
    items, report = load(source=REDUX_CSV)
    assert report.rows == 200
    assert len(items) == 185
    assert sum(report.dropped.values()) == 15
    assert report.dropped["error_type=wrong_groundtruth"] == 8
    assert report.notes == ["mmlu-redux: dropped 15 of 200 rows flagged by error_type "
                            "(--keep-flagged keeps them)"]
    first = items[0]
    assert first.id == "abstract_algebra-002"  # rows 0 and 1 are flagged; ids keep source rows
    assert first.options == ["Yes, with p=2.", "Yes, with p=3.", "Yes, with p=5.", "No."]
    assert first.answer == "B"
    assert first.metadata["error_type"] == "ok"
    assert first.origin.endswith("mmlu_abstract_algebra.csv line 11")


def test_keep_flagged_uses_the_annotated_correct_answer():
    items, report = load(source=REDUX_CSV, keep_flagged=True)
    # one wrong_groundtruth row names no correct answer: recorded, not kept with the wrong one
    assert len(items) == 199 and not report.dropped
    assert [s["stage"] for s in report.skipped] == ["filter"]
    assert "correct_answer ''" in report.skipped[0]["reason"]
    by_id = {i.id: i for i in items}
    # Statement 1 true, statement 2 false: the annotators' answer "2" is option C
    fixed = by_id["abstract_algebra-001"]
    assert fixed.metadata["error_type"] == "wrong_groundtruth"
    assert (fixed.answer, fixed.metadata["original_answer"]) == ("C", "D")
    # an "expert" row keeps its free-text correct_answer only as metadata
    assert all(i.metadata.get("original_answer") is None
               for i in items if i.metadata["error_type"] != "wrong_groundtruth")


def test_single_file_and_subset_selection():
    items, _ = load(source=REDUX_CSV / "mmlu_high_school_biology.csv")
    assert {i.subset for i in items} == {"high_school_biology"} and len(items) == 95
    items, _ = load(source=REDUX_CSV, subsets=["high_school_biology"])
    assert len(items) == 95


def test_hub_parquet_layout_gives_the_same_items_as_the_csv():
    hub, _ = load(source=REDUX_HUB)
    csv_items, _ = load(source=REDUX_CSV, subsets=["abstract_algebra"])
    expected = [i for i in csv_items if int(i.id.rsplit("-", 1)[1]) < 30]  # the first 30 rows
    assert [i.id for i in hub] == [i.id for i in expected] and len(hub) == 25
    by_id = {i.id: i for i in csv_items}
    for item in hub:
        twin = by_id[item.id]
        assert (item.question, item.options, item.answer) == (twin.question, twin.options,
                                                               twin.answer)


def test_save_to_disk_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    import pyarrow.parquet as pq

    table = pq.read_table(next(REDUX_HUB.rglob("*.parquet")))
    target = tmp_path / "abstract_algebra"
    datasets.DatasetDict({"test": datasets.Dataset(table)}).save_to_disk(str(target))
    items, _ = load(source=target)
    assert len(items) == 25 and items[0].subset == "abstract_algebra"
    items, _ = load(source=tmp_path)  # a folder of saved subsets
    assert len(items) == 25


def anatomy_csv(tmp_path, content: str | bytes):
    """A one-subject MMLU-Redux release file with the given content."""
    path = tmp_path / "mmlu_anatomy.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_missing_columns_are_named(tmp_path):
    bad = anatomy_csv(tmp_path, "question,options,answer\nq,\"['a','b']\",0\n")
    with pytest.raises(SourceError) as err:
        load(source=bad)
    assert str(err.value) == (f"{bad}: missing column(s) choices, error_type (mmlu-redux "
                              "expects question, choices, answer, error_type; found question, "
                              "options, answer)")


def test_malformed_row_names_file_line_and_field(tmp_path):
    text = (REDUX_CSV / "mmlu_high_school_biology.csv").read_text(encoding="utf-8")
    bad = anatomy_csv(tmp_path, text.replace("'Nematoda']", "'Nematoda'", 1))
    with pytest.raises(ItemError, match=r"mmlu_anatomy\.csv line \d+: field choices: not a list"):
        load(source=bad)
    items, report = load(source=bad, on_error="skip")
    assert len(report.skipped) == 1 and report.skipped[0]["id"].startswith("anatomy-")
    assert len(items) == 95  # the corrupted row was a flagged one: skipped, not counted twice


def test_answer_outside_the_options(tmp_path):
    bad = anatomy_csv(tmp_path, "question,choices,answer,error_type\nq,\"['a', 'b']\",3,ok\n")
    with pytest.raises(ItemError) as err:
        load(source=bad)
    assert str(err.value) == (f"{bad} line 2: field answer: 3 is not one of the 2 options "
                              "(expected a letter A-B or an index 0-1 of the 2 options)")


def test_undecodable_bytes_name_the_row(tmp_path):
    bad = anatomy_csv(tmp_path, b"question,choices,answer,error_type\nok row,\"['a', 'b']\",0,ok\n"
                                b"caf\xe9,\"['a', 'b']\",0,ok\n")
    with pytest.raises(ItemError) as err:
        load(source=bad)
    assert str(err.value) == (f"{bad} line 3: field question: undecodable text: byte 0xE9 at "
                              "character 3 is not UTF-8 (re-save the file as UTF-8)")


def test_missing_source():
    with pytest.raises(SourceError, match="no such file or folder"):
        load(source=REDUX_CSV / "nope")


def test_unknown_subset_has_a_suggestion():
    with pytest.raises(UsageError, match="did you mean 'astronomy'"):
        load(subsets=["astronomyy"])


def test_hub_offline_says_to_pass_source(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailableError) as err:
        load(subsets=["abstract_algebra"])
    message = str(err.value)
    assert message.startswith("cannot load edinburgh-dawg/mmlu-redux-2.0 config abstract_algebra "
                              "split test from the Hugging Face hub")
    assert message.endswith("; pass --source PATH with a local copy")
    assert "\n" not in message


def test_an_unreachable_hub_fails_in_seconds_with_one_line(tmp_path):
    """A real process, no offline switch, the hub endpoint a closed port on 127.0.0.1:
    ``datasets`` alone retries for 25-90 s; the probe makes it one line at once."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") and "proxy" not in k.lower()}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "hf"))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "mmconvert", "render", "mmlu-redux",
                             "--subset", "anatomy", "--out", str(tmp_path / "run")],
                            capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - started
    assert result.returncode == 1 and took < 15, (took, result.stderr)
    assert result.stderr == (
        f"Error: cannot load edinburgh-dawg/mmlu-redux-2.0 config anatomy split test: the "
        f"Hugging Face hub (http://127.0.0.1:{port}) does not answer within 5 s and the local "
        "datasets cache does not hold it; pass --source PATH with a local copy\n")


def test_subsets_are_read_one_at_a_time(tmp_path):
    """A subset's file is read when its turn comes, and its items are given as they are made:
    the first subset's items are out while the second's file is not yet opened (here it is
    broken), and the loader holds none but the last one it gave."""
    import gc
    import shutil
    import weakref

    for name in ("mmlu_abstract_algebra.csv", "mmlu_high_school_biology.csv"):
        shutil.copy(REDUX_CSV / name, tmp_path / name)
    broken = tmp_path / "mmlu_high_school_biology.csv"
    broken.write_text("question,choices\nWhat?,\"[1, 2]\"\n", encoding="utf-8")
    items = resolve("mmlu-redux").load(LoadRequest(source=tmp_path), LoadReport())
    first = [weakref.ref(next(items)) for _ in range(3)]
    gc.collect()
    assert [ref() is None for ref in first] == [True, True, False]  # the last one given
    with pytest.raises(SourceError, match="mmlu_high_school_biology.csv: missing column"):
        for item in items:
            assert item.subset == "abstract_algebra"
