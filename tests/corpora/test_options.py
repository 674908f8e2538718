"""Corpus options: each corpus validates the options it takes with its own model, and an
option that does not apply is a one-line error; --on-error is not part of a run's identity."""

from __future__ import annotations

import json

import pytest

from mmconvert.corpora import CORPORA
from mmconvert.corpora.base import CORPUS_OPTIONS, CorpusOptions
from tests.conftest import FIXTURES, SAMPLE
from tests.test_cli import run


@pytest.mark.parametrize("name", CORPORA.names())
def test_every_corpus_has_an_options_model_that_forbids_the_rest(name):
    model = CORPORA.get(name).options_model
    assert issubclass(model, CorpusOptions) and model.model_config["extra"] == "forbid"
    assert set(model.model_fields) <= set(CORPUS_OPTIONS)


@pytest.mark.parametrize(("args", "message"), [
    (("mmlu-redux", "--source", SAMPLE, "--max-length", "3"),
     "Error: --max-length does not apply to mmlu-redux (its options: --keep-flagged)\n"),
    (("mmlu-redux", "--source", SAMPLE, "--all-captions"),
     "Error: --all-captions does not apply to mmlu-redux (its options: --keep-flagged)\n"),
    (("mmlu-redux", "--source", SAMPLE, "--language", "zh"),
     "Error: --language does not apply to mmlu-redux (its options: --keep-flagged)\n"),
    (("longbench", "--source", FIXTURES / "longbench", "--keep-flagged"),
     "Error: --keep-flagged does not apply to longbench (its options: --language, "
     "--max-length)\n"),
    (("longbench", "--source", FIXTURES / "longbench", "--language", "fr"),
     "Error: longbench: --language: Input should be 'en', 'zh' or 'all'\n"),
])
def test_an_option_that_does_not_apply_is_one_line(tmp_path, args, message):
    result = run("render", *args, "--out", tmp_path / "run")
    assert result.exit_code == 2 and result.output == message
    assert not (tmp_path / "run").exists()


def test_a_failed_run_goes_on_with_on_error_skip(tmp_path):
    source = tmp_path / "items.jsonl"
    rows = [{"question": "Fine?", "options": ["yes", "no"], "answer": "A"},
            {"question": "Bad answer", "options": ["yes", "no"], "answer": "Z"},
            {"question": "Also fine?", "options": ["yes", "no"], "answer": "B"}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    result = run("render", source, "--out", out)
    assert result.exit_code == 1 and "line 2: field answer" in result.output
    result = run("render", source, "--out", out, "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "2 item(s) rendered" in result.output and "1 skipped" in result.output
    info = json.loads((out / "run.json").read_text())
    assert "on_error" not in info["config"] and info["on_error"] == "skip"
    # a folder recorded before on_error left the identity still resumes
    info["config"]["on_error"] = "fail"
    (out / "run.json").write_text(json.dumps(info), encoding="utf-8")
    result = run("render", source, "--out", out, "--on-error", "skip")
    assert result.exit_code == 0 and "2 already done" in result.output, result.output
