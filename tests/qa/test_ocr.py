"""A real OCR engine reads our pages back (Tesseract; required in CI)."""

from __future__ import annotations

import os
import shutil

import pytest

from mmconvert.corpora import LoadReport, LoadRequest, resolve
from mmconvert.items import option_letter
from mmconvert.qa.ocr import cer, ocr
from mmconvert.renderers.page import PageRenderer
from tests.conftest import FIXTURES, REDUX_CSV, make_item

if shutil.which("tesseract") is None:
    if os.environ.get("CI"):
        raise RuntimeError("tesseract is required in CI: run scripts/install-debian.sh")
    pytest.skip("tesseract is not installed (scripts/install-debian.sh)", allow_module_level=True)


def write_pages(tmp_path, result):
    paths = []
    for n, page in enumerate(result.pages):
        path = tmp_path / f"p{n}.png"
        path.write_bytes(page.png)
        paths.append(path)
    return paths


def test_english_option_blocks_read_back_with_low_cer(tmp_path):
    items = resolve("mmlu-redux").load(LoadRequest(source=REDUX_CSV / "mmlu_high_school_biology"
                                                   ".csv"), LoadReport())[:12]
    renderer = PageRenderer()
    reference, hypothesis = [], []
    for item in items:
        (path,) = write_pages(tmp_path, renderer.render(item, "options"))
        reference.append("".join(f"{option_letter(i)}. {o}" for i, o in enumerate(item.options)))
        hypothesis.append(ocr(path).text)
    # Tesseract reads "→" as "-." and straight apostrophes as curly ones: ~2 % on these
    # options (plain prose below stays under 1 %)
    assert cer("".join(reference), "".join(hypothesis)) < 0.03


def test_full_page_of_english_prose(tmp_path):
    text = " ".join(["Vision-language models must read text that used to arrive as tokens;"
                     " this page checks that every word survives the trip."] * 40)
    result = PageRenderer().render(make_item(context=text), "context")
    (path,) = write_pages(tmp_path, result)
    assert cer(text, ocr(path).text) < 0.01


def test_traditional_chinese(tmp_path):
    import csv

    with open(FIXTURES / "cjk" / "ceval_zhtw_law_val.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    text = "\n".join(r["question"] + "".join(r[k] for k in "ABCD") for r in rows)
    result = PageRenderer().render(make_item(context=text, language="zh-tw"), "context")
    (path,) = write_pages(tmp_path, result)
    assert cer(text, ocr(path, "zh-tw").text) < 0.15
