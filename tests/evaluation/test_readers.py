"""Real readers, no server: ``eval --model ocr/tesseract`` and ``ocr/rapidocr`` read real pages
on this machine, as inspect_ai models, and are scored as any model is.

What was measured, and is held here as the readers truly do it (nothing is tuned to make a
reader pass): three needle-in-a-haystack pages (512 tokens, needles at depths 10, 50 and 90,
RULER's string match) drawn at the default 92.9 PPI.
- Tesseract (page segmentation 3, each page as drawn) reads all three needles' values.
- RapidOCR 1.4.4 (PP-OCRv4, with the settings its wheel ships) reads the first page's needle
  and finds two short lines on each of the others: its detector scales a page's shorter side
  to 736 pixels (``limit_type: min``), where this 12-point type is too small for it (at 2000 it
  finds 14 lines, 1,124 characters).
"""

from __future__ import annotations

import json
import sys

import pytest

from mmconvert.manifest import JsonlLog
from tests.test_cli import run

pytest.importorskip("inspect_ai")


@pytest.fixture(scope="module")
def haystack(tmp_path_factory):
    out = tmp_path_factory.mktemp("niah") / "run"
    result = run("render", "niah", "--lengths", "512", "--depths", "10,50,90", "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
@pytest.mark.parametrize("reader, read", [("ocr/tesseract", [1.0, 1.0, 1.0]),
                                          ("ocr/rapidocr", [1.0, 0.0, 0.0])])
def test_a_real_reader_reads_the_needles_off_the_pages(haystack, tmp_path, reader, read):
    pytest.importorskip("rapidocr_onnxruntime")
    out = tmp_path / "eval"
    result = run("eval", haystack, "--model", reader, "--modality", "image", "--out", out)
    assert result.exit_code == 0, result.output
    rows = JsonlLog(out / "responses.jsonl").read()
    assert [r["score"] for r in rows] == read, [r["response"][:80] for r in rows]
    gold = [r["answer"][0] for r in JsonlLog(haystack / "manifest.jsonl").read()]
    for row, value, score in zip(rows, gold, read, strict=True):
        assert row["response"], row  # each page was read, however little
        assert (value in row["response"]) == bool(score)
    results = json.loads((out / "results.json").read_text())
    assert results["model"] == reader
    assert results["overall"]["image"]["n"] == 3


def test_a_reader_is_asked_only_what_a_transcription_answers(haystack, tmp_path, sample_run):
    redux = sample_run
    for args, said in [
        ((redux, "--model", "ocr/tesseract", "--modality", "image"),
         "--model ocr/tesseract reads pages and answers no question: "),
        ((haystack, "--model", "ocr/tesseract"),
         "--model ocr/tesseract reads pages: it has no answer for the text condition "
         "(give --modality image or image,blank)"),
        ((haystack, "--model", "ocr/easyocr", "--modality", "image"),
         "--model ocr/easyocr: no such reader (readers: ocr/tesseract, ocr/rapidocr)"),
    ]:
        result = run("eval", *args, "--out", tmp_path / "x")
        assert result.exit_code != 0 and said in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_a_reader_whose_package_is_missing_is_one_line(monkeypatch, haystack, tmp_path):
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    result = run("eval", haystack, "--model", "ocr/rapidocr", "--modality", "image", "--out",
                 tmp_path / "x")
    assert result.exit_code != 0
    assert result.output.strip() == ("Error: --model ocr/rapidocr needs rapidocr-onnxruntime: "
                                     "pip install 'mmconvert[ocr]'")


def test_a_reader_s_dry_run_says_it_costs_nothing(haystack):
    result = run("eval", haystack, "--model", "ocr/tesseract", "--modality", "image",
                 "--dry-run")
    assert result.exit_code == 0, result.output
    assert "cost: none: ocr/tesseract reads the pages on this machine" in result.output
    assert "price table" not in result.output
