"""Corpus options: each corpus's options model is its config section (``corpus_options``) and,
once the corpus is named, its flags; it validates them, and an option that does not apply is a
one-line error. Folders and configs that hold the old top-level keys still read and resume;
--on-error is not part of a run's identity."""

from __future__ import annotations

import json
import re

import pytest

from mmconvert.corpora import CORPORA
from mmconvert.corpora.base import CorpusOptions
from tests.conftest import FIXTURES, SAMPLE
from tests.test_cli import run


@pytest.mark.parametrize("name", CORPORA.names())
def test_every_corpus_has_an_options_model_that_forbids_the_rest(name):
    model = CORPORA.get(name).options_model
    assert issubclass(model, CorpusOptions) and model.model_config["extra"] == "forbid"
    for field, info in model.model_fields.items():  # each a flag with its help
        assert info.description, f"{name}: {field} has no description"


@pytest.mark.parametrize(("command", "corpus", "shown", "not_shown"), [
    (("render",), "mmlu-redux", ["--keep-flagged"], ["--max-length", "--haystack"]),
    (("render",), "longbench", ["--language TEXT", "--max-length INTEGER"],
     ["--keep-flagged"]),
    (("render", "--renderer", "document"), "niah", ["--haystack TEXT", "--lengths TEXT"],
     ["--keep-flagged"]),
    (("occlude",), "captions", ["--all-captions", "--language TEXT"], ["--max-length"]),
    (("dedup",), "logiqa", ["--language TEXT"], ["--all-captions"]),
    (("sweep",), "mmlu-redux", ["--keep-flagged"], ["--all-captions"]),
    (("render",), "items.jsonl", [], ["--keep-flagged", "--language"]),
])
def test_a_corpus_brings_its_own_flags_once_it_is_named(command, corpus, shown, not_shown):
    result = run(*command, corpus, "--help")
    assert result.exit_code == 0, result.output
    def listed(flag, text):  # an option line of the help, not an example's mention
        return re.search(rf"^ +{re.escape(flag)}\b", text, re.M) is not None

    for flag in shown:
        assert listed(flag, result.output), flag
    for flag in not_shown:
        assert not listed(flag, result.output), flag
    bare = run(*command, "--help").output
    assert "CORPUS's own options" in bare and not listed("--keep-flagged", bare)


def test_old_top_level_corpus_options_still_read_and_resume(tmp_path):
    """A config and a run folder that hold the corpus options as the selection's own keys
    (before each corpus's options were its section) read as ``corpus_options`` and resume."""
    out = tmp_path / "run"
    result = run("render", "mmlu-redux", "--source", FIXTURES / "mmlu-redux", "--keep-flagged",
                 "--limit", "2", "--out", out)
    assert result.exit_code == 0, result.output
    info = json.loads((out / "run.json").read_text())
    assert info["config"]["corpus_options"] == {"keep_flagged": True}
    # run.json as a run of the earlier version wrote it
    config = {k: v for k, v in info["config"].items() if k != "corpus_options"}
    config.update(keep_flagged=True, language=None, max_length=None, all_captions=False)
    (out / "run.json").write_text(json.dumps({**info, "config": config}), encoding="utf-8")
    again = run("render", "mmlu-redux", "--source", FIXTURES / "mmlu-redux", "--keep-flagged",
                "--limit", "2", "--out", out)
    assert again.exit_code == 0 and "2 already done" in again.output, again.output
    # without the option it is another run, named as such
    other = run("render", "mmlu-redux", "--source", FIXTURES / "mmlu-redux", "--limit", "2",
                "--out", out)
    assert other.exit_code != 0 and "corpus_options differs" in other.output, other.output
    # a --config file with the old key
    old = tmp_path / "old.yaml"
    old.write_text("keep_flagged: true\nlimit: 2\n", encoding="utf-8")
    from_file = run("render", "mmlu-redux", "--source", FIXTURES / "mmlu-redux", "--config",
                    old, "--out", out)
    assert from_file.exit_code == 0 and "2 already done" in from_file.output, from_file.output


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
