"""VCR scoring, strict protocol (best n-gram by edit distance), groups, bad input; the official
protocol is pinned against VCR's own code in test_vcr_protocols.py."""

from __future__ import annotations

import json

import pytest

from mmconvert.errors import SourceError
from mmconvert.scoring.vcr import score_run, score_span
from tests.conftest import FIXTURES
from tests.test_cli import run


def test_the_exact_span_inside_a_chatty_answer_is_an_exact_match():
    score = score_span("in front of a mirror", "The covered text is: in front of a mirror.", "en")
    assert (score.match, score.exact_match, score.jaccard) == ("in front of a mirror", 1.0, 1.0)


def test_a_near_miss_scores_its_token_overlap():
    score = score_span("in front of a mirror", "standing in front of the mirror", "en")
    assert score.match == "in front of the mirror"
    assert score.exact_match == 0.0 and score.jaccard == pytest.approx(4 / 6)


def test_the_closest_ngram_wins_and_case_counts():
    answer = "of a big dog near\nin front of a Mirror"
    score = score_span("in front of a mirror", answer, "en")
    assert score.match == "in front of a Mirror" and score.exact_match == 0.0
    assert score.jaccard == pytest.approx(4 / 6)


def test_no_shared_token_or_too_short_scores_zero():
    assert score_span("in front of a mirror", "a cat", "en").jaccard == 0.0
    assert score_span("in front of a mirror", "under the bed by the door", "en").match == ""


def test_chinese_is_scored_per_character():
    score = score_span("群人围坐在", "被遮住的是：群人围坐在", "zh")
    assert score.exact_match == 1.0
    assert score_span("群人围坐在", "群人围着在", "zh").jaccard == pytest.approx(4 / 6)


@pytest.fixture(scope="module")
def vcr_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("score") / "run"
    result = run("occlude", "captions", "--source", FIXTURES / "coco", "--all-captions",
                 "--out", out, "--difficulty", "mixed", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    return out, rows


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_perfect_answers_score_100_in_every_group(vcr_run, tmp_path):
    out, rows = vcr_run
    predictions = write(tmp_path / "p.jsonl",
                        [{"id": r["id"], "prediction": r["answer"]} for r in rows])
    result = score_run(out, predictions, "strict")
    assert result["exact_match"] == result["jaccard"] == 100.0
    assert result["exact_match_sd"] == 0.0 and result["items"] == len(rows)
    assert set(result["groups"]) == {f"en/{r['difficulty']}" for r in rows}
    assert result["missing"] == result["unknown"] == 0


def test_missing_answers_count_as_zero_and_strays_are_counted(vcr_run, tmp_path):
    out, rows = vcr_run
    answers = [{"id": r["id"], "prediction": " / ".join(r["answer"])} for r in rows[1:]]
    predictions = write(tmp_path / "p.jsonl", [*answers, {"id": "elsewhere", "prediction": ""}])
    result = score_run(out, predictions, "strict")
    assert result["missing"] == 1 and result["unknown"] == 1
    assert result["exact_match"] == pytest.approx(100 * (len(rows) - 1) / len(rows), abs=1e-3)
    assert 0 < result["exact_match_sd"] < 50
    assert score_run(out, predictions, "strict") == result  # the bootstrap is seeded
    # official: the unanswered item is left out of the mean
    official = score_run(out, predictions)
    assert official["missing"] == 1 and official["items"] == len(rows) - 1
    assert official["exact_match"] == 100.0


def test_cli_prints_a_table_or_json(vcr_run, tmp_path):
    out, rows = vcr_run
    predictions = write(tmp_path / "p.jsonl",
                        [{"id": r["id"], "prediction": "\n".join(r["answer"])} for r in rows])
    result = run("score", "vcr", out, predictions)
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith("protocol: official (VCR's evaluation code")
    assert result.output.splitlines()[1].split() == ["group", "items", "spans", "exact", "match",
                                                     "%", "jaccard", "%"]
    assert "100.00 ±  0.00" in result.output
    data = json.loads(run("score", "vcr", out, predictions, "--json").output)
    assert data["exact_match"] == 100.0 and data["jaccard"] == 100.0


@pytest.mark.parametrize("lines, message", [
    (['{"id": "a", "prediction": "x"}', "{oops"], "line 2: not a JSON row (Expecting property "
                                                  "name enclosed in double quotes)"),
    (['{"id": "a"}'], "line 1: field prediction: missing"),
    (['{"id": "a", "prediction": 3}'], "line 1: field prediction: expected a string or a list "
                                       "of strings, got int"),
    (['{"id": "a", "prediction": "x"}', '{"id": "a", "prediction": "y"}'],
     "line 2: field id: 'a' appears twice (first on line 1)"),
])
def test_bad_prediction_files_are_one_line_errors(vcr_run, tmp_path, lines, message):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SourceError) as err:
        score_run(vcr_run[0], path)
    assert str(err.value) == f"{path} {message}"


def test_only_occlude_runs_are_scored(tmp_path, sample_run):
    page_run = sample_run  # a page run, read only
    path = write(tmp_path / "p.jsonl", [])
    result = run("score", "vcr", page_run, path)
    assert result.exit_code == 1
    assert result.output == (f"Error: {page_run}: not an occlude run (its manifest rows have no "
                             "masked_spans)\n")
    result = run("score", "vcr", tmp_path / "none", path)
    assert result.output == (f"Error: {tmp_path / 'none'} has no manifest.jsonl: not an "
                             "mmconvert run folder\n")
