"""``eval --modality image,blank,text``: the blank condition is the image prompt with each page
replaced by a page of its size and paper colour with nothing on it, so what a model scores
there it scores without reading. A real server on 127.0.0.1 whose prior and reading are known
functions (it reads the gold letter off a page it knows by its pixels; on a blank page it
answers A, its prior) gives scores known before the run."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image

from mmconvert.manifest import JsonlLog
from tests.conftest import SAMPLE
from tests.openai_server import FakeOpenAI
from tests.test_cli import run

pytest.importorskip("inspect_ai")


def decoded(body: dict) -> list[Image.Image]:
    content = body["messages"][-1]["content"]
    return [Image.open(io.BytesIO(base64.b64decode(p["image_url"]["url"].split(",", 1)[1])))
            for p in (content if isinstance(content, list) else [])
            if p.get("type") == "image_url"]


@pytest.mark.slow
def test_blank_pages_score_the_prior_and_image_minus_blank_is_reading(tmp_path, monkeypatch):
    rendered = tmp_path / "run"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--style", "wild", "--out",
               rendered).exit_code == 0
    rows = JsonlLog(rendered / "manifest.jsonl").read()
    known = {}
    for row in rows:
        with Image.open(rendered / row["images"][0]["path"]) as page:
            known[page.tobytes()] = row
    sizes = {(Image.open(rendered / r["images"][0]["path"]).size) for r in rows}
    blanks: list[Image.Image] = []

    def answer(body):
        pages = decoded(body)
        if not pages:
            return "Answer: B"  # the text twin: answered B, whatever it asks
        page = pages[0]
        if page.getextrema() in ((0, 0), (255, 255)) or len(set(page.getdata())) == 1:
            blanks.append(page)
            return "Answer: A"  # nothing to read: the prior
        return f"Answer: {known[page.tobytes()]['answer']}"  # read off the page

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        result = run("eval", rendered, "--model", "reader-1", "--base-url", url, "--modality",
                     "image,blank,text", "--out", tmp_path / "e")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    n = len(rows)
    prior = 100 * sum(r["answer"] == "A" for r in rows) / n
    guess_b = 100 * sum(r["answer"] == "B" for r in rows) / n
    overall = json.loads((tmp_path / "e" / "results.json").read_text())["overall"]
    assert overall["image"]["score"] == 100.0
    assert overall["blank"]["score"] == round(prior, 4)
    assert overall["text"]["score"] == round(guess_b, 4)
    assert overall["blank_delta"] == round(100.0 - prior, 4) and overall["blank_paired_n"] == n
    assert "reading: image minus blank pages" in result.output
    # each blank page was its page's size and paper colour, nothing on it
    assert len(blanks) == n and {b.size for b in blanks} == sizes
    papers = {Image.open(rendered / r["images"][0]["path"]).convert("RGB").getpixel((0, 0))
              for r in rows}
    assert {b.convert("RGB").getpixel((5, 5)) for b in blanks} == papers
    assert papers != {(255, 255, 255)}  # the wild style's papers are coloured
