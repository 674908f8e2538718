"""The command line: exact messages and exit codes."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from mmconvert import __version__
from mmconvert.cli import main
from tests.conftest import REDUX_CSV, SAMPLE, copy_run


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_version_and_help():
    assert run("--version").output == f"mmconvert, version {__version__}\n"
    result = run("render", "--help")
    assert result.exit_code == 0 and "--ppi" in result.output and "--on-error" in result.output


def test_list():
    result = run("list", "corpora")
    assert result.exit_code == 0
    assert "mmlu-redux" in result.output and "edinburgh-dawg/mmlu-redux-2.0" in result.output
    assert "page" in run("list", "renderers").output


def test_render_the_shipped_sample(sample_pdf_run):
    out, output = sample_pdf_run  # the session's render --pdf of the sample, read only
    assert "mmlu-redux: dropped 2 of 11 rows flagged by error_type" in output
    assert f"9 item(s) rendered (9 page(s)) into {out}" in output
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 9
    row = rows[0]
    assert row["renderer"]["params"]["ppi"] == 92.9 and row["renderer"]["params"]["render"] == (
        "options")
    assert row["images"][0]["role"] == "page" and (out / row["images"][0]["path"]).is_file()
    assert (out / row["pdf"]).is_file()
    assert "A. Mercury" in row["text_prompt"] and "A. Mercury" not in row["prompt"]
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["fonts"][0]["name"] == "Liberation Sans"
    assert len(info["fonts"][0]["sha256"]) == 64


def test_unknown_corpus_suggests_a_name():
    result = run("render", "mmlu-reduxx")
    assert result.exit_code == 2
    assert result.output.startswith("Error: unknown corpus 'mmlu-reduxx' (known: babilong, ")
    assert result.output.endswith("; did you mean 'mmlu-redux'?\n")
    assert result.output.count("\n") == 1


def test_missing_source(tmp_path):
    result = run("render", "mmlu-redux", "--source", tmp_path / "nope", "--out", tmp_path / "o")
    assert result.exit_code == 1
    assert result.output == f"Error: {tmp_path / 'nope'}: no such file or folder\n"
    assert not (tmp_path / "o").exists()


def test_bad_row_fails_then_skips_with_a_record(tmp_path):
    bad = tmp_path / "items.jsonl"
    bad.write_text('{"id": "a", "question": "q", "options": ["x", "y"], "answer": "A"}\n'
                   '{"id": "b", "question": "q", "options": "x, y", "answer": "A"}\n'
                   '{"id": "c", "question": "q", "options": ["x", "\\u0007"], "answer": "B"}\n',
                   encoding="utf-8")
    result = run("render", bad, "--out", tmp_path / "o1")
    assert result.exit_code == 1
    assert result.output == (f"Error: {bad} line 2: field options: not a list of options "
                             "(expected a JSON or Python list)\n")
    result = run("render", bad, "--out", tmp_path / "o2", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    skipped = [json.loads(x) for x in (tmp_path / "o2/skipped.jsonl").read_text().splitlines()]
    assert [(s["id"], s["stage"]) for s in skipped] == [("b", "load"), ("c", "render")]
    assert skipped[1]["reason"] == (f"{bad} line 3: field options[1]: control character U+0007 "
                                    "in text")
    assert len((tmp_path / "o2/manifest.jsonl").read_text().splitlines()) == 1


def test_rerun_with_other_options_is_refused_unless_overwrite(tmp_path, sample_run):
    out = copy_run(sample_run, tmp_path / "run")  # the shipped sample, rendered plain
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", out, "--ppi", "150")
    assert result.exit_code == 1
    assert result.output == (f"Error: {out} holds a run made with other options (page differs); "
                             "use --overwrite to replace it or --out to choose another folder\n")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", out, "--ppi", "150",
                 "--overwrite")
    assert result.exit_code == 0
    row = json.loads((out / "manifest.jsonl").read_text().splitlines()[0])
    assert row["images"][0]["ppi"] == 150 and row["renderer"]["params"]["ppi"] == 150


def test_out_folder_with_foreign_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path)
    assert result.exit_code == 1 and "is not an mmconvert run folder" in result.output


def test_bad_option_values_are_one_line(tmp_path):
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "o",
                 "--ppi", "-3")
    assert result.exit_code == 2
    assert result.output == "Error: --ppi: -3 is not a PPI over 10 and at most 1200 (got -3.0)\n"
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "o",
                 "--crop", "content", "--line-pitch", "0")
    assert result.output == "Error: --line-pitch: Input should be greater than 0 (got 0.0)\n"
    config = tmp_path / "c.yaml"
    config.write_text("page:\n  ppi: abc\n")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "o",
                 "--config", config)
    assert result.output == (f"Error: --config {config}: page.ppi: Input should be a valid "
                             "number, unable to parse string as a number (got 'abc')\n")


def test_yaml_config_and_flag_override(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("page:\n  ppi: 72\n  color: rgb\nsample: 2\nseed: 3\n", encoding="utf-8")
    out = tmp_path / "run"
    result = run("render", "mmlu-redux", "--source", REDUX_CSV, "--config", config,
                 "--out", out, "--ppi", "100")
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 4  # 2 per subset
    assert rows[0]["renderer"]["params"]["ppi"] == 100 and rows[0]["renderer"]["params"][
        "color"] == "rgb"
    bad = tmp_path / "bad.yaml"
    bad.write_text("pages: {}\n", encoding="utf-8")
    result = run("render", "mmlu-redux", "--config", bad, "--out", tmp_path / "x")
    assert result.output == (f"Error: --config {bad}: pages: Extra inputs are not permitted; "
                             "did you mean 'page'?\n")


def test_list_shows_every_seed_corpus():
    output = run("list", "corpora").output
    for name, hub in (("gpqa", "Idavidrein/gpqa"), ("babilong", "RMT-team/babilong"),
                      ("longbench", "THUDM/LongBench"), ("tmmluplus", "ikala/tmmluplus")):
        assert re.search(rf"^  {re.escape(name)} +{re.escape(hub)} ", output, re.M)


def test_render_babilong_and_longbench_contexts(tmp_path):
    from tests.conftest import FIXTURES

    result = run("render", "babilong", "--source", FIXTURES / "babilong-raw", "--subset", "qa1",
                 "--sample", "2", "--out", tmp_path / "babi")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "babi" / "manifest.jsonl").open()]
    assert len(rows) == 2 and rows[0]["renderer"]["params"]["render"] == "context"
    assert rows[0]["answer"] and "Question: " in rows[0]["prompt"]
    result = run("render", "longbench", "--source", FIXTURES / "longbench", "--sample", "1",
                 "--out", tmp_path / "lb")
    assert result.exit_code == 0, result.output
    assert "dropped 1 of 7 rows of length >= 8192" in result.output
    rows = [json.loads(line) for line in (tmp_path / "lb" / "manifest.jsonl").open()]
    # one per (config, length bin): hotpotqa_e has 4 bins below 8k, narrativeqa 2
    assert len(rows) == 6


def test_bad_columns_are_one_line(tmp_path):
    bad = tmp_path / "gpqa_diamond.csv"
    bad.write_text("Question,Answer\nQ?,A\n", encoding="utf-8")
    result = run("render", "gpqa", "--source", bad, "--out", tmp_path / "out")
    assert result.exit_code != 0
    assert result.output.startswith(f"Error: {bad}: missing column(s) Correct Answer, ")
    assert result.output.count("\n") == 1
