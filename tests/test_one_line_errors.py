"""The remaining tracebacks and misleading lines of the hostile-input pass, each now one line
that says what is wrong: a symbolic-link loop as a font or an image, a tokenizer that panics,
a device given as a file, a retried request's own error, a local copy missing a split the
task reads, lm-eval rows that --on-error skip records, and what stats' --models defaults to."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.conftest import FIXTURES, SAMPLE
from tests.test_cli import run


def one_line(result, code: int, said: str) -> None:
    assert result.exit_code == code, result.output
    assert said in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_a_symbolic_link_loop_as_a_font_is_one_line(tmp_path):
    loop = tmp_path / "loop.ttf"
    os.symlink(loop, loop)
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--font", loop, "--out",
                 tmp_path / "r")
    one_line(result, 1, f"{loop}: a symbolic link that leads back to itself (a loop)")


def test_a_symbolic_link_loop_as_a_markdown_image_is_refused_not_a_traceback(tmp_path):
    from mmconvert.renderers.document.browser import has_chromium

    if not has_chromium():
        pytest.skip("chromium is missing")
    os.symlink(tmp_path / "loop.png", tmp_path / "loop.png")
    source = tmp_path / "doc.jsonl"
    source.write_text(json.dumps({"id": "d", "question": "q", "answer": "x",
                                  "context": "An image ![alt](loop.png) here."}) + "\n")
    out = tmp_path / "d"
    result = run("render", source, "--renderer", "document", "--render", "context", "--out",
                 out)
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert row["refused"] == ["image loop.png"]


class PanicException(BaseException):
    """What a Rust panic in tokenizers raises: a BaseException, not an Exception."""


def test_a_tokenizer_that_fails_or_panics_is_one_line():
    from mmconvert.errors import UsageError
    from mmconvert.tokens import load_tokenizer
    from tests.test_stats import minilm_folder

    tokenizer = load_tokenizer(str(minilm_folder()))
    for failure in (PanicException("called `Option::unwrap()` on a `None` value"),
                    ValueError("bad input")):
        class Broken:
            def encode(self, *args, failure=failure, **kwargs):
                raise failure

        tokenizer.tokenizer = Broken()
        with pytest.raises(UsageError) as err:
            tokenizer.count("some text")
        assert str(err.value).startswith(f"--tokenizer {minilm_folder()}: the tokenizer failed "
                                         "on a text of 9 characters (")
        assert type(failure).__name__ in str(err.value)


def test_a_device_as_a_tokenizer_or_a_haystack_says_it_is_not_a_file(tmp_path):
    one_line(run("stats", SAMPLE.parent, "--tokenizer", "/dev/zero"), 2,
             "--tokenizer /dev/zero: not a regular file")
    one_line(run("render", "niah", "--haystack", "/dev/zero", "--out", tmp_path / "n"), 2,
             "--haystack /dev/zero: not a regular file")


def test_niah_with_a_tokenizer_but_no_target_names_the_length_tokenizer(tmp_path):
    result = run("render", "niah", "--tokenizer", "tiktoken:o200k_base", "--out", tmp_path)
    one_line(result, 2, "a haystack's lengths are counted with --length-tokenizer")


def test_a_retried_request_s_error_is_the_server_s_not_tenacity_s(tmp_path, sample_run):
    pytest.importorskip("inspect_ai")
    from tests.openai_server import FakeOpenAI

    demo = sample_run
    fake = FakeOpenAI(models=("reader",))
    fake.script("", *["500"] * 20, path="chat")
    url = fake.start()
    try:
        # one item: inspect renders each failed sample's traceback (about 0.4 s of CPU each)
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--max-retries", 0, "--limit", 1)
    finally:
        fake.stop()
    one_line(result, 1, "(the first: openai.InternalServerError: Error code: 500 - The server "
                        "had an error while processing your request. (after the retries))")
    assert "RetryError" not in result.output and "Future" not in result.output


@pytest.fixture()
def mmlu_copy(tmp_path):
    """A local copy of cais/mmlu astronomy whose docs 1 and 2 the task cannot read (one
    choice for a template that lists four; an answer past the choices)."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "mmlu"
    shutil.copytree(FIXTURES / "lm-eval" / "cais-mmlu" / "astronomy", copy / "astronomy")
    path = copy / "astronomy" / "test-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[1]["choices"] = ["only one"]
    rows[2]["answer"] = 9
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    return copy


def test_lm_eval_rows_the_task_cannot_read_are_skipped_under_on_error_skip(mmlu_copy, tmp_path):
    pytest.importorskip("lm_eval")
    out = tmp_path / "r"
    result = run("render", "lm-eval:mmlu_astronomy", "--source", mmlu_copy, "--on-error",
                 "skip", "--out", out)
    assert result.exit_code == 0, result.output
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [s["id"] for s in skipped] == ["mmlu_astronomy-0001", "mmlu_astronomy-0002"]
    assert "the task cannot read this doc (UndefinedError: list object has no element 1)" in \
        skipped[0]["reason"]
    result = run("render", "lm-eval:mmlu_astronomy", "--source", mmlu_copy, "--out",
                 tmp_path / "fail")
    one_line(result, 1, "lm-eval task mmlu_astronomy doc 1: field doc: the task cannot read")


def test_a_local_copy_without_a_split_the_task_reads_names_it(tmp_path):
    pytest.importorskip("lm_eval")
    copy = tmp_path / "arc" / "ARC-Easy"
    copy.mkdir(parents=True)
    (copy / "test-00000-of-00001.jsonl").write_text(
        (FIXTURES / "hub-mcq" / "arc.jsonl").read_text())
    result = run("render", "lm-eval:arc_easy", "--source", tmp_path / "arc", "--out",
                 tmp_path / "r")
    one_line(result, 1, "allenai/ai2_arc config ARC-Easy: no train split (it has test); the "
                        "task reads it")


def test_stats_models_default_is_what_the_help_says(sample_run):
    from mmconvert.vision_tokens import EXTRA_RULES, TOKEN_RULES

    help_text = " ".join(run("stats", "--help").output.split())
    assert "nine rules" in help_text and len(TOKEN_RULES) == 9
    assert all(name in help_text for name in TOKEN_RULES)
    shown = run("stats", sample_run, "--no-plots", "--json")
    figures = json.loads(shown.output)
    assert list(figures["vision_tokens_per_item"]) == list(TOKEN_RULES)
    assert not set(figures["vision_tokens_per_item"]) & set(EXTRA_RULES)


if sys.platform != "linux":  # /dev/zero, /proc
    pytestmark = pytest.mark.skip("Linux only")


def test_haystack_files_and_the_length_tokenizer_are_named_as_what_they_are(tmp_path):
    one_line(run("render", "niah", "--haystack", tmp_path / "none.txt", "--out",
                 tmp_path / "a"), 2, f"--haystack {tmp_path / 'none.txt'}: no such file")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"text \xff\xfe more")
    one_line(run("render", "niah", "--haystack", binary, "--out", tmp_path / "b"), 1,
             f"--haystack {binary}: not UTF-8 text (byte 0xFF at offset 5)")
    one_line(run("render", "niah", "--length-tokenizer", "/dev/zero", "--out", tmp_path / "c"),
             2, "--length-tokenizer /dev/zero: not a regular file")


def test_a_style_file_that_sets_render_says_what_render_is(tmp_path):
    style = tmp_path / "s.yaml"
    style.write_text("render: all\n")
    one_line(run("render", "mmlu-redux", "--source", SAMPLE, "--style", style, "--out",
                 tmp_path / "r"), 2, "'render' (what of an item becomes image) is not a style "
                                     "field: give --render")
