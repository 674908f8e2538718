"""Loaders are never silently wrong: a folder holding a corpus twice loads it once and says
which; a folder without the corpus, an empty selection and an empty export are errors; a
free-form question renders; a caption too short for a span is a recorded drop."""

from __future__ import annotations

import json

from mmconvert.manifest import JsonlLog
from tests.conftest import FIXTURES
from tests.test_cli import run

MMLU = FIXTURES / "mmlu"  # release CSVs in data/, hub parquet in hub/


def rows(folder):
    return JsonlLog(folder / "manifest.jsonl").read()


def test_a_folder_with_both_formats_loads_one_and_says_how_to_load_the_other(tmp_path):
    result = run("render", "mmlu", "--source", MMLU, "--out", tmp_path / "both")
    assert result.exit_code == 0, result.output
    assert (f"mmlu: {MMLU} holds the corpus in two formats, hub parquet (1 file(s)) and release "
            f"files (2 file(s)); loaded the hub parquet; for the release files pass --source "
            f"{MMLU / 'data'}") in result.output
    hub = run("render", "mmlu", "--source", MMLU / "hub", "--out", tmp_path / "hub")
    assert hub.exit_code == 0
    both, only_hub = rows(tmp_path / "both"), rows(tmp_path / "hub")
    assert [r["id"] for r in both] == [r["id"] for r in only_hub]  # each question once
    assert len({r["question"] for r in both}) == len(both)
    release = run("render", "mmlu", "--source", MMLU / "data", "--out", tmp_path / "release")
    assert release.exit_code == 0 and "two formats" not in release.output
    assert sorted(r["id"] for r in rows(tmp_path / "release")) == sorted(r["id"] for r in both)


def test_a_folder_without_the_corpus_is_an_error(tmp_path):
    result = run("render", "gpqa", "--source", MMLU, "--out", tmp_path / "g")
    assert result.exit_code == 1
    assert result.output == (f"Error: {MMLU}: no train rows of gpqa here (4 table file(s), of "
                             "split(s) dev, test); pass --source with a copy of gpqa, or "
                             "--split\n")
    assert not (tmp_path / "g").exists()


def test_an_empty_selection_is_not_a_success(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a-1", "question": "Q?", "options": ["x", "y"], "answer": "C"}\n')
    result = run("render", items, "--on-error", "skip", "--out", tmp_path / "run")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"Error: nothing to do: no item of the 1 row(s) read was selected; 1 skipped (see "
        f"{tmp_path / 'run' / 'skipped.jsonl'})")
    assert json.loads((tmp_path / "run" / "skipped.jsonl").read_text())["id"] == "a-1"


def test_an_export_of_zero_items_writes_nothing_and_fails(tmp_path, csv_run):
    result = run("export", csv_run, "--format", "jsonl", "--accepted-only",
                 "--out", tmp_path / "x")
    assert result.exit_code == 1
    assert result.output == (f"Error: nothing to export from {csv_run}: left out by "
                             f"QA: 6 pending; no export written to {tmp_path / 'x'}\n")
    assert not (tmp_path / "x").exists()


def test_empty_options_mean_a_free_form_question(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a-1", "question": "Who wrote Hamlet?", "options": [], '
                     '"answer": "Shakespeare"}\n'
                     '{"id": "a-2", "question": "Capital of France?", "options": "", '
                     '"answer": ["Paris"]}\n')
    result = run("render", items, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    first, second = rows(tmp_path / "run")
    assert first["options"] == [] and first["answer"] == ["Shakespeare"]
    assert first["renderer"]["params"]["render"] == "all" and len(first["images"]) == 1
    assert first["text_prompt"].startswith("Who wrote Hamlet?\n\nThink step by step")
    assert "letter" not in first["text_prompt"] and second["answer"] == ["Paris"]


def test_a_caption_too_short_for_a_span_is_a_recorded_drop(tmp_path):
    captions = tmp_path / "captions.tsv"
    image = FIXTURES / "coco" / "val2017" / "000000229358.jpg"
    captions.write_text("image\tcaption\n"
                        f"{image}\tA brown dog runs across the green field.\n"
                        f"{image}\tA man is standing in front of a mirror holding a red "
                        "umbrella over his head.\n")
    result = run("occlude", "captions", "--source", captions, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert "1 item(s) rendered" in result.output
    assert "1 left out by a rule (1 too short" in result.output
    (skip,) = [json.loads(x) for x in (tmp_path / "run" / "skipped.jsonl").read_text()
               .splitlines()]
    assert skip["stage"] == "filter" and "too short: a 5-gram would cover more than 50%" in \
        skip["reason"]
