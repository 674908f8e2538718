"""``eval --probe transcribe``: each item's shown pages are asked to be transcribed, and the
reply is scored with Fox's metrics (``scoring.transcription``, checked against Fox's own code
in ``tests/scoring/test_transcription.py``) against the text the pages hold.

Two parts: a real server on 127.0.0.1 that answers with known transcriptions (the exact text,
half of its words, nothing, a reply past the bound), whose scores are known before it runs;
and the real readers on the first 6 items of the MMLU-Redux sample drawn at 40 and at 92.9
PPI, whose figures are held as they were measured (nothing tuned to make a reader pass):

| reader | 40 PPI precision | 92.9 PPI precision |
|---|---|---|
| Tesseract (psm 3, each page as drawn) | 0.0 | 47.4 |
| RapidOCR 1.4.4 (PP-OCRv4, its wheel's settings) | 60.6 | 18.7 |

RapidOCR reads the smaller pages better: its detector scales a page's shorter side up to 736
pixels, which a 40 PPI page is enlarged to and a 92.9 PPI page is not; and its English
recognition drops the spaces between words, which costs it whole words under Fox's rule.
"""

from __future__ import annotations

import json

import pytest

from mmconvert.manifest import JsonlLog
from mmconvert.qa.checks import expected_text
from mmconvert.scoring.transcription import MAX_REPLY_CHARS, transcription_scores
from tests.conftest import SAMPLE
from tests.openai_server import FakeOpenAI
from tests.test_cli import run
from tests.typed import typed_rows

pytest.importorskip("inspect_ai")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = {}
    for ppi in ("40", "92.9"):
        folder = tmp_path_factory.mktemp("p") / ppi
        assert run("render", "mmlu-redux", "--source", SAMPLE, "--ppi", ppi, "--limit", "6",
                   "--out", folder).exit_code == 0
        out[ppi] = folder
    return out


@pytest.mark.slow
def test_transcriptions_are_scored_against_the_pages_text(pages, tmp_path, monkeypatch):
    run_dir = pages["92.9"]
    rows = typed_rows(run_dir)
    texts = {expected_text(row): row["id"] for row in rows}
    asked = []

    def answer(body):
        content = body["messages"][-1]["content"]
        asked.append(content[-1]["text"])
        # which item: its id is not sent; the images are, so answer by the request's order
        number = len(asked) - 1
        text = expected_text(rows[number])
        return [text, " ".join(text.split()[::2]), "", text + " x" * MAX_REPLY_CHARS,
                text.upper(), "\n".join(reversed(text.split("\n")))][number]

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        result = run("eval", run_dir, "--model", "reader-1", "--base-url", url, "--probe",
                     "transcribe", "--concurrency", "1", "--out", tmp_path / "e")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    assert set(asked) == {"Transcribe all the text in the image(s) exactly as it is written, "
                          "line by line, in reading order. Write only the text: no comments, "
                          "no formatting."}
    found = JsonlLog(tmp_path / "e" / "responses.jsonl").read()
    assert [r["condition"] for r in found] == ["transcribe"] * len(rows)
    for row, got in zip(rows, found, strict=True):
        truth = transcription_scores(expected_text(row), got["response"] or "")
        assert got["score"] == (truth.precision or 0.0)
        assert got["extra"]["edit_distance"] == truth.edit_distance
        assert got["parsed"] == (truth.recall is not None)
    scores = [r["score"] for r in found]
    assert scores[0] == 1.0 and scores[2] == 0.0 and not found[2]["parsed"]
    assert found[3]["extra"]["cut"] and scores[3] == 1.0  # the reply past the bound: cut
    assert scores[5] == 1.0 and found[5]["extra"]["edit_distance"] > 0  # lines reordered
    results = json.loads((tmp_path / "e" / "results.json").read_text())
    overall = results["overall"]["transcribe"]
    assert overall["score"] == round(100 * sum(scores) / len(scores), 4)
    assert overall["n"] == 6 and overall["unparsed"] == 1 and overall["cut"] == 1
    assert len(texts) == 6


@pytest.mark.slow
@pytest.mark.parametrize("reader, low, high", [("ocr/tesseract", 0.0, 47.3718),
                                               ("ocr/rapidocr", 60.6303, 18.6645)])
def test_real_readers_precision_at_40_and_92_9_ppi(pages, tmp_path, reader, low, high):
    pytest.importorskip("rapidocr_onnxruntime")
    found = {}
    for ppi, folder in pages.items():
        result = run("eval", folder, "--model", reader, "--probe", "transcribe", "--out",
                     tmp_path / ppi)
        assert result.exit_code == 0, result.output
        results = json.loads((tmp_path / ppi / "results.json").read_text())
        found[ppi] = results["overall"]["transcribe"]["score"]
    assert found == pytest.approx({"40": low, "92.9": high}, abs=0.05), found


@pytest.mark.slow
def test_pages_are_transcribed_and_scored_one_at_a_time(tmp_path, monkeypatch):
    """An item of several pages is asked a page at a time, each reply scored against the text
    its own page's stored layout draws; the item's figure is its joined replies against its
    whole text, and results.json adds the figures over pages. The server knows a page only by
    its pixels, and answers page 1 of every item exactly and page 2 without its last word
    (wherever it is)."""
    import io

    from PIL import Image

    from mmconvert.evaluation.transcribe import pages_to_read

    run_dir = tmp_path / "run"  # at 60 pt, two of the four items take two pages
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--font-size", "60", "--render",
               "all", "--limit", "4", "--out", run_dir).exit_code == 0
    rows = typed_rows(run_dir)
    texts = {row["id"]: pages_to_read(run_dir, row) for row in rows}
    assert [len(t) if t else 0 for t in texts.values()] == [0, 2, 0, 2]
    by_pixels = {}
    for row in rows:
        for number, image in enumerate(row["images"], start=1):
            with Image.open(run_dir / image["path"]) as page:
                by_pixels[page.tobytes()] = (row, number)

    def answer(body):
        import base64

        parts = body["messages"][-1]["content"]
        images = [p for p in parts if p.get("type") == "image_url"]
        assert len(images) == 1  # every item here is asked a page at a time, or has one page
        data = base64.b64decode(images[0]["image_url"]["url"].split(",")[1])
        row, number = by_pixels[Image.open(io.BytesIO(data)).tobytes()]
        own = texts[row["id"]][number - 1] if texts[row["id"]] else expected_text(row)
        return own if number == 1 else without_last_word(own)

    def without_last_word(text):
        last = text.split()[-1]
        return " ".join(word for word in text.split() if word != last)

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        planned = run("eval", run_dir, "--model", "reader-1", "--base-url", url, "--probe",
                      "transcribe", "--dry-run")
        result = run("eval", run_dir, "--model", "reader-1", "--base-url", url, "--probe",
                     "transcribe", "--out", tmp_path / "e")
    finally:
        fake.stop()
    assert "= 6 request(s)" in planned.output
    assert result.exit_code == 0, result.output
    assert len(fake.requests("/v1/chat/completions")) == 6
    found = {r["id"]: r for r in JsonlLog(tmp_path / "e" / "responses.jsonl").read()}
    assert list(found) == [row["id"] for row in rows]
    every_page = []
    for row in rows:
        got, own = found[row["id"]], texts[row["id"]]
        if own is None:  # one page: asked and scored whole, as before
            assert "pages" not in got["extra"] and got["score"] == 1.0
            every_page.append(1.0)
            continue
        replies = [own[0], without_last_word(own[1])]
        assert got["response"] == "\n\n".join(replies)
        truth = transcription_scores(expected_text(row), got["response"])
        assert got["score"] == truth.precision and got["extra"]["recall"] == truth.recall
        each = [transcription_scores(text, reply) for text, reply in zip(own, replies,
                                                                          strict=True)]
        assert [p["page"] for p in got["extra"]["pages"]] == [1, 2]
        assert [p["score"] for p in got["extra"]["pages"]] == [t.precision for t in each]
        assert each[0].precision == 1.0 and each[1].precision < 1.0
        every_page += [t.precision for t in each]
    results = json.loads((tmp_path / "e" / "results.json").read_text())
    page = results["overall"]["transcribe"]["per_page"]
    assert page["n"] == 6 and page["whole"] == 0
    assert page["score"] == round(100 * sum(every_page) / 6, 4)
    assert f"transcription per page: 6 page(s), precision {page['score']:.1f} %" \
        in result.output


def test_a_renderer_that_states_no_text_is_one_line(pages, tmp_path, monkeypatch):
    from mmconvert.renderers.page import PageRenderer

    def none(cls, row):
        raise NotImplementedError

    monkeypatch.setattr(PageRenderer, "expected_text", classmethod(none))
    result = run("eval", pages["40"], "--model", "ocr/tesseract", "--probe", "transcribe",
                 "--out", tmp_path / "x")
    assert result.exit_code != 0
    assert result.output.strip() == ("Error: --probe transcribe: the page renderer states no "
                                     "expected text for its pages, so a transcription has "
                                     "nothing to be scored against")


@pytest.mark.slow
def test_a_curve_of_transcription_precision_against_vision_tokens(tmp_path, monkeypatch):
    """``curve --probe transcribe``: each point's figure is its pages' transcription precision,
    as ``eval --probe transcribe`` gives it for that point's run (DeepSeek-OCR's compression
    table, on any corpus and recipe)."""
    from tests.test_stats import tiktoken_files

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    out = tmp_path / "curve"
    result = run("curve", "mmlu-redux", "--source", SAMPLE, "--limit", "3", "--model",
                 "ocr/tesseract", "--tokenizer", "tiktoken:o200k_base", "--ratio-model",
                 "qwen2.5-vl", "--budgets", "256,1000", "--recipe", "readbench", "--probe",
                 "transcribe", "--out", out)
    assert result.exit_code == 0, result.output
    assert "read: the pages' transcription precision" in result.output
    found = json.loads((out / "curve.json").read_text())
    (curve,) = found["curves"]
    assert curve["measure"] == "transcription precision"
    for point in curve["points"]:
        (folder,) = (out / "evals").glob(f"ocr_tesseract-*/{point['name']}")
        evaluated = json.loads((folder / "results.json").read_text())
        assert evaluated["conditions"] == ["transcribe"]
        assert point["accuracy"] == evaluated["overall"]["transcribe"]["score"] is not None


@pytest.mark.slow
def test_a_frontier_of_transcription_precision(tmp_path, monkeypatch):
    """``frontier --probe transcribe``: each style point's figure is its pages' transcription
    precision, as ``eval --probe transcribe`` gives it for that point's run."""
    from tests.test_stats import tiktoken_files

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    out = tmp_path / "front"
    result = run("frontier", "mmlu-redux", "--source", SAMPLE, "--limit", "3", "--model",
                 "ocr/tesseract", "--tokenizer", "tiktoken:o200k_base", "--ratio-model",
                 "qwen2.5-vl", "--style", "readbench", "--grid", "ppi:60,92.9", "--probe",
                 "transcribe", "--out", out)
    assert result.exit_code == 0, result.output
    assert "read: the pages' transcription precision" in result.output
    found = json.loads((out / "frontier.json").read_text())
    assert found["measure"] == "transcription precision"
    for point in found["points"]:
        evaluated = json.loads((out / "evals" / point["name"] / "results.json").read_text())
        assert evaluated["conditions"] == ["transcribe"]
        assert point["accuracy"] == evaluated["overall"]["transcribe"]["score"] is not None
