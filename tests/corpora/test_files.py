"""Generic local files: JSONL, CSV and Parquet in the item schema."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mmconvert.corpora import LoadReport, resolve
from mmconvert.corpora.base import load_request
from mmconvert.errors import ItemError, SourceError
from mmconvert.items import content_id

ROWS = [
    {"id": "q1", "question": "2+2?", "options": ["3", "4"], "answer": "B", "language": "en"},
    {"id": "q2", "question": "Capital of France?", "options": ["Paris", "Rome"], "answer": 0},
    {"question": "Who wrote it?", "context": "A long story.", "answer": ["Ann", "Anne"]},
]


def load(path, **request):
    report = LoadReport()
    corpus = resolve(str(path))
    return corpus, list(corpus.load(load_request(corpus, request), report)), report


def test_jsonl(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    corpus, items, _ = load(path)
    third = ROWS[2]  # an item without an id is named by what is drawn of it
    assert [i.id for i in items] == ["q1", "q2", content_id(
        third.get("language"), third.get("context"), third.get("question"), [])]
    assert [i.answer for i in items] == ["B", "A", ["Ann", "Anne"]]
    assert [corpus.part_for(i) for i in items] == ["options", "options", "context"]


def test_csv_with_options_as_a_json_list(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text('id,question,options,answer\nq1,2+2?,"[""3"", ""4""]",B\n',
                    encoding="utf-8")
    _, items, _ = load(path)
    assert items[0].options == ["3", "4"] and items[0].answer == "B"


def test_parquet(tmp_path):
    path = tmp_path / "items.parquet"
    rows = [{**r, "answer": r["answer"] if isinstance(r["answer"], str) else "A"} for r in ROWS[:2]]
    pq.write_table(pa.Table.from_pylist(rows), path)
    _, items, _ = load(path)
    assert [i.options for i in items] == [["3", "4"], ["Paris", "Rome"]]


def test_malformed_json_line_is_named(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ItemError, match=r"items\.jsonl line 2: malformed JSON"):
        load(path)
    _, items, report = load(path, on_error="skip")
    assert len(items) == 1
    assert report.skipped == [{"id": "items-0001", "stage": "load", "reason": f"{path} line 2: "
                               "malformed JSON (Expecting property name enclosed in double "
                               "quotes at column 2)"}]


def test_unsafe_and_repeated_ids(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({**ROWS[0], "id": "../x"}) + "\n", encoding="utf-8")
    with pytest.raises(ItemError, match="id '../x' is not file-name safe"):
        load(path)
    path.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"line 2: id 'q1' repeats .*line 1"):
        load(path)


def test_file_without_question_or_context(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match="no question or context column"):
        load(path)
