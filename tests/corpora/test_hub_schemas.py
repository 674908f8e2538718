"""The hub's common multiple-choice schemas in a local file (ARC, OpenBookQA, HellaSwag, PIQA,
WinoGrande, MMLU): lettered items with their answers, the source columns recorded; a row
whose answer is not among its options is one line, or a recorded skip."""

from __future__ import annotations

import json

import pytest

from mmconvert.manifest import JsonlLog
from tests.conftest import FIXTURES
from tests.test_cli import run

HUB = FIXTURES / "hub-mcq"


@pytest.mark.parametrize(("name", "expected"), [
    ("arc.jsonl", [("Which tool measures the mass of a rock?", "balance", "B", "choices-answerKey"),
                   ("What gas do plants take in for photosynthesis?", "carbon dioxide", "C",
                    "choices-answerKey")]),
    ("arc.parquet", [("Which tool measures the mass of a rock?", "balance", "B",
                      "choices-answerKey"),
                     ("What gas do plants take in for photosynthesis?", "carbon dioxide", "C",
                      "choices-answerKey")]),
    ("openbookqa.jsonl", [("A magnet will stick to", "an iron nail", "B", "choices-answerKey")]),
    ("hellaswag.jsonl", [("A woman cracks eggs into a bowl. she", "whisks them with a fork.",
                          "A", "endings-label")]),
    ("piqa.jsonl", [("To keep bread fresh for longer,", "store it in a sealed bag.", "A",
                     "sol-label")]),
    ("winogrande.jsonl", [("The trophy did not fit in the case because the _ was too big.",
                           "trophy", "A", "option-answer")]),
    ("mmlu.jsonl", [("What is 7 times 6?", "42", "B", "choices-answer")]),
])
def test_each_schema_becomes_lettered_items_with_their_answers(tmp_path, name, expected):
    out = tmp_path / "run"
    result = run("render", HUB / name, "--out", out)
    assert result.exit_code == 0, result.output
    rows = JsonlLog(out / "manifest.jsonl").read()
    got = [(r["question"], r["options"]["ABCD".index(r["answer"])], r["answer"],
            r["metadata"]["source_schema"]["name"]) for r in rows]
    assert got == expected
    assert all(r["images"] for r in rows)  # the options are drawn


def test_the_source_columns_and_the_rest_are_recorded(tmp_path):
    out = tmp_path / "run"
    assert run("render", HUB / "hellaswag.jsonl", "--out", out).exit_code == 0
    (row,) = JsonlLog(out / "manifest.jsonl").read()
    assert row["metadata"]["source_schema"]["columns"] == {
        "question": "ctx", "options": "endings", "answer": "label"}
    assert row["metadata"]["activity_label"] == "Baking" and row["split"] == "val"
    assert "ctx_a" in row["metadata"]  # what the schema did not read is kept


@pytest.mark.parametrize(("row", "message"), [
    ({"question": "q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "E"},
     "field answerKey: 'E' is not one of the choices' labels (A, B)"),
    ({"question": "q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": ""},
     "field answerKey: '' is not one of the choices' labels"),
    ({"ctx": "c", "endings": ["a", "b"], "label": "7"},
     "field label: 7 is not one of the 2 options"),
    ({"goal": "g", "sol1": "a", "sol2": "b", "label": None}, "field label: missing"),
    ({"sentence": "s _", "option1": "a", "option2": "b", "answer": "0"},
     "field answer: '0' is not 1 or 2"),
    ({"question": "q", "choices": ["a", "b"], "answer": 5},
     "field answer: 5 is not one of the 2 options"),
])
def test_a_row_whose_answer_is_not_an_option_is_one_line_or_a_recorded_skip(tmp_path, row,
                                                                          message):
    source = tmp_path / "bad.jsonl"
    good = {"question": "fine", "choices": ["x", "y"], "answer": 0} if "choices" in row and \
        isinstance(row["choices"], list) else None
    source.write_text(json.dumps(row) + "\n" + (json.dumps(good) + "\n" if good else ""))
    result = run("render", source, "--out", tmp_path / "fail")
    assert result.exit_code != 0 and message in result.output, result.output
    assert f"{source} line 1" in result.output
    assert len(result.output.strip().splitlines()) == 1
    skipped = tmp_path / "skip"
    result = run("render", source, "--on-error", "skip", "--out", skipped)
    assert message in (skipped / "skipped.jsonl").read_text()
    assert not (skipped / "manifest.jsonl").exists() or all(
        r["answer"] for r in JsonlLog(skipped / "manifest.jsonl").read())
