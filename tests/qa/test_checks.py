"""``mmconvert qa check`` and ``qa summary`` on real runs, with the real Tesseract."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from PIL import Image, ImageDraw

from mmconvert.qa.checks import find_parts, word_count
from mmconvert.qa.ocr import readable
from tests.conftest import FIXTURES
from tests.conftest import copy_run as copy_shared
from tests.test_cli import run
from tests.typed import typed

if shutil.which("tesseract") is None:
    if os.environ.get("CI"):
        raise RuntimeError("tesseract is required in CI: run scripts/install-debian.sh")
    pytest.skip("tesseract is not installed (scripts/install-debian.sh)", allow_module_level=True)


def events(folder):
    path = folder / "qa.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def latest(folder):
    out = {}
    for e in events(folder):
        out[(e["id"], e["source"])] = e
    return out


def summary(folder, *args):
    result = run("qa", "summary", folder, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(scope="module")
def page_run(tmp_path_factory, sample_run):
    out = copy_shared(sample_run, tmp_path_factory.mktemp("qa") / "demo")  # qa check writes
    result = run("qa", "check", out, "--no-progress")
    assert result.exit_code == 0, result.output
    return out


def copy_run(page_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(page_run, out)
    return out


def test_good_pages_pass_every_check_and_a_rerun_adds_nothing(page_run):
    rows = [json.loads(line) for line in (page_run / "manifest.jsonl").read_text().splitlines()]
    got = events(page_run)
    assert {(e["source"], e["verdict"]) for e in got} == {
        ("auto:ocr", "accept"), ("auto:text_layer", "accept"), ("auto:image", "accept")}
    assert len(got) == 3 * len(rows)
    ocr = [e["detail"] for e in got if e["source"] == "auto:ocr"]
    assert all(d["engine"].startswith("tesseract") and d["scale"] == 3 for d in ocr)
    assert sum(d["errors"] for d in ocr) <= 3  # symbol-heavy options: Tesseract's misreads
    before = (page_run / "qa.jsonl").read_bytes()
    result = run("qa", "check", page_run, "--no-progress")
    assert "0 item(s) checked, 9 already checked" in result.output
    result = run("qa", "check", page_run, "--recheck", "--checks", "text_layer,image",
                 "--no-progress")
    assert "9 item(s) checked" in result.output and "0 event(s) appended" in result.output
    assert (page_run / "qa.jsonl").read_bytes() == before
    s = summary(page_run)
    assert (s["items"], s["accepted"], s["rejected"], s["pending"]) == (9, 0, 0, 9)
    assert s["checks"]["ocr"]["passed"] == 9 and s["checks"]["ocr"]["density"]["<50"] == 9


def test_a_blank_a_changed_and_a_missing_image_are_caught(page_run, tmp_path):
    out = copy_run(page_run, tmp_path)
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    blank, edged, gone = (out / rows[n]["images"][0]["path"] for n in (0, 1, 2))
    with Image.open(blank) as image:
        Image.new("L", image.size, 255).save(blank)
    with Image.open(edged) as image:
        drawn = image.copy()
    ImageDraw.Draw(drawn).rectangle((drawn.width - 3, 10, drawn.width - 1, 40), fill=0)
    drawn.save(edged)
    gone.unlink()
    result = run("qa", "check", out, "--recheck", "--no-progress")
    assert result.exit_code == 0, result.output
    state = latest(out)
    image0 = state[(rows[0]["id"], "auto:image")]
    assert image0["verdict"] == "reject" and image0["reason"] == "image_changed"
    assert any("is blank" in p for p in image0["detail"]["problems"])
    assert state[(rows[0]["id"], "auto:ocr")]["reason"] == "ocr_mismatch"
    edge = state[(rows[1]["id"], "auto:image")]["detail"]["problems"]
    assert any("ink at the right edge" in p for p in edge)
    assert state[(rows[2]["id"], "auto:image")]["reason"] == "missing_image"
    assert state[(rows[2]["id"], "auto:ocr")]["reason"] == "missing_image"
    # the unchanged items got no new events
    new = events(out)[len(events(page_run)):]
    assert {e["id"] for e in new} == {rows[n]["id"] for n in (0, 1, 2)}
    s = summary(out)
    assert s["rejected"] == 3
    # a rejected item's reasons are what the certain checks found; OCR's word is in its
    # check's own figures
    assert s["by_reason"] == {"image_changed": 2, "missing_image": 1}
    assert s["checks"]["ocr"]["by_reason"]["ocr_mismatch"] == 1


def test_an_image_that_shows_other_text_fails_ocr_and_the_recipe(page_run, tmp_path):
    """The manifest says one thing, the picture shows another: the OCR round trip sees it, and
    the text layer (laid out again from the row) no longer matches the image's hash."""
    out = copy_run(page_run, tmp_path)
    lines = (out / "manifest.jsonl").read_text().splitlines()
    row = json.loads(lines[3])
    row["options"] = ["Tidal heating by the companion star", "Magnetic braking of the core",
                      "Cosmic ray spallation in the corona", "Dark matter annihilation"]
    lines[3] = json.dumps(row, ensure_ascii=False)
    (out / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    (out / "qa.jsonl").unlink()
    assert run("qa", "check", out, "--no-progress").exit_code == 0
    state = latest(out)
    assert state[(row["id"], "auto:ocr")]["reason"] == "ocr_mismatch"
    assert state[(row["id"], "auto:text_layer")]["detail"]["recipe_matches_images"] is False


def test_traditional_chinese_pages_pass(tmp_path):
    out = tmp_path / "zhtw"
    source = tmp_path / "law_val.csv"
    shutil.copy(FIXTURES / "cjk" / "ceval_zhtw_law_val.csv", source)
    assert run("render", "ceval-zhtw", "--source", source, "--render", "all", "--limit", "4",
               "--out", out).exit_code == 0
    result = run("qa", "check", out, "--checks", "ocr,text_layer", "--no-progress")
    assert result.exit_code == 0, result.output
    got = [e for e in events(out) if e["source"] == "auto:ocr"]
    assert got and all(e["verdict"] == "accept" for e in got), got
    assert all(e["detail"]["engine"].endswith("chi_tra") for e in got)


def test_occlusions_are_read_without_their_covered_words(tmp_path):
    out = tmp_path / "vcr"
    assert run("occlude", "captions", "--source", FIXTURES / "coco", "--out", out,
               "--limit", "3").exit_code == 0
    assert run("qa", "check", out, "--no-progress").exit_code == 0
    got = latest(out)
    ocr = [e for (_, source), e in got.items() if source == "auto:ocr"]
    made = len((out / "manifest.jsonl").read_text().splitlines())
    assert made >= 2 and len(ocr) == made and all(e["verdict"] == "accept" for e in ocr), ocr
    assert all(e["verdict"] == "accept" for (_, s), e in got.items() if s == "auto:image")


def test_generated_images_must_show_every_option(tmp_path, monkeypatch):
    from tests.openai_server import FakeOpenAI
    from tests.test_generate_cli import KEY, generate, write_items

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MMCONVERT_CACHE", str(tmp_path / "cache"))
    fake = FakeOpenAI(key=KEY)
    fake.url = fake.start()
    try:
        fake.script("Q-0001", "cut", path="images")
        items = write_items(tmp_path / "items.jsonl", count=3)
        out = tmp_path / "gen"
        result = generate(fake, items, out, "--layout", "interleaved")
        assert result.exit_code == 0, result.output
    finally:
        fake.stop()
    assert run("qa", "check", out, "--no-progress").exit_code == 0
    state = latest(out)
    cut = state[("item-0001", "auto:options")]
    assert cut["verdict"] == "reject" and cut["reason"] == "missing_option"
    assert cut["detail"]["missing"] == ["D"]
    for other in ("item-0000", "item-0002"):
        assert state[(other, "auto:options")]["verdict"] == "accept"
        assert state[(other, "auto:ocr")]["verdict"] == "accept", state[(other, "auto:ocr")]
    assert state[("item-0000", "auto:ocr")]["detail"]["density"] == "<50"


def test_bad_input_gets_one_line(tmp_path):
    result = run("qa", "check", tmp_path)
    assert result.exit_code != 0 and "has no manifest.jsonl" in result.output
    assert len(result.output.strip().splitlines()) == 1
    (tmp_path / "manifest.jsonl").write_text("")
    result = run("qa", "check", tmp_path, "--checks", "ocr,spelling")
    assert result.exit_code != 0 and "unknown check(s) spelling" in result.output


def test_helpers():
    assert word_count("The cat sat. 貓坐著") == 6
    assert readable("A. 10⁵ ≈ Ⅳ “x”", "en") == "a10x"
    row = {"question": "Which planet is largest?", "options": ["Mercury", "Jupiter", "4"]}
    found = find_parts(typed(row), "Which planet is Iargest?\nA. Mercury\nB) Jupiter")
    assert found == {"question": True, "A": True, "B": True, "C": False}


def test_summary_as_text(page_run):
    result = run("qa", "summary", page_run)
    assert result.exit_code == 0
    assert result.output.startswith("9 items: 0 accepted, 0 rejected, 9 pending;")
    assert "ocr         checked 9, passed 9, failed 0" in result.output
    assert "CER mean" in result.output
