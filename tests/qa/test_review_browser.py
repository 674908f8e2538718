"""The review page in real headless Chromium (Debian's ``chromium``, driven by Playwright with
that executable): reject by keyboard and by button, accept, move with j/k, reload, filter."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from mmconvert.qa.events import QaLog, event
from tests.qa.test_review_server import Serving, qa_events, rendered  # noqa: F401 (fixture)

CHROMIUM = os.environ.get("MMCONVERT_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover
    sync_playwright = None
if CHROMIUM is None or sync_playwright is None:
    if os.environ.get("CI"):
        raise RuntimeError("the review page tests need Debian's chromium "
                           "(scripts/install-debian.sh) and playwright (pip install -e '.[test]')")
    pytest.skip("chromium or playwright is missing", allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def site(rendered, tmp_path):  # noqa: F811
    folder = tmp_path / "demo"
    shutil.copytree(rendered, folder)
    # one item already failed an automatic check
    QaLog(folder).append(event("astronomy-004", "auto:ocr", "reject", "ocr_mismatch",
                               {"cer": 0.3}))
    serving = Serving(folder)
    yield folder, serving
    serving.close()


def wait_for_message(page, pattern: str) -> str:
    expect(page.locator("#message")).to_have_text(re.compile(pattern))
    return page.locator("#message").inner_text()


def test_review_by_keyboard_and_buttons_survives_a_reload(browser, site):
    folder, serving = site
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(f"http://127.0.0.1:{serving.port}/")
    expect(page.locator("#position")).to_have_text("1 of 9")
    expect(page.locator("#item-id")).to_have_text("astronomy-000")
    expect(page.locator("#images img")).to_have_count(1)
    expect(page.locator("#counts")).to_contain_text("1 auto-flagged")
    # OCR's disagreement alone marks the item for review; it does not reject it
    expect(page.locator("#counts")).to_contain_text("1 awaiting review")
    expect(page.locator("#counts")).to_contain_text("0 rejected")

    # no reviewer name yet: nothing is saved, the name field asks for one
    page.keyboard.press("a")
    wait_for_message(page, "Type your name")
    page.locator("#reviewer").fill("ana")
    page.keyboard.press("Escape")  # leave the field

    # 1: reject by keyboard: r, then the reason's number
    page.keyboard.press("r")
    wait_for_message(page, "Reason")
    page.keyboard.press("2")
    # the save's time is shown; how fast it is is bench/review_speed.py's to measure, not a test's
    wait_for_message(page, r"Rejected astronomy-000 \(missing_text\), saved in \d+ ms")
    expect(page.locator("#item-id")).to_have_text("astronomy-001")

    # 2: reject by button, with a reason chosen in the list and a note
    page.locator("#reason").select_option("layout")
    page.locator("#note").fill("option D runs off the page")
    page.locator("#reject").click()
    wait_for_message(page, r"Rejected astronomy-001 \(layout\)")
    expect(page.locator("#item-id")).to_have_text("astronomy-002")

    # 3: accept by button
    page.locator("#accept").click()
    wait_for_message(page, r"Accepted astronomy-002")
    expect(page.locator("#item-id")).to_have_text("astronomy-003")
    expect(page.locator("#counts")).to_contain_text("1 accepted")
    expect(page.locator("#counts")).to_contain_text("2 rejected")  # 2 votes
    expect(page.locator("#counts")).to_contain_text("3/9 reviewed")

    # j/k move
    page.keyboard.press("k")
    expect(page.locator("#item-id")).to_have_text("astronomy-002")
    expect(page.locator("#status")).to_have_text("accepted")
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("#item-id")).to_have_text("astronomy-004")
    expect(page.locator("#status")).to_have_text(
        "pending · awaiting review (an OCR check flagged it)")

    # what is on disk
    votes = [e for e in qa_events(folder) if e["source"].startswith("reviewer:")]
    assert [(e["id"], e["verdict"], e["reason"]) for e in votes] == [
        ("astronomy-000", "reject", "missing_text"), ("astronomy-001", "reject", "layout"),
        ("astronomy-002", "accept", "ok")]
    assert {e["source"] for e in votes} == {"reviewer:ana"}
    assert votes[1]["detail"] == {"note": "option D runs off the page"}

    # reload: the page shows what qa.jsonl holds, and remembers the reviewer
    page.reload()
    expect(page.locator("#counts")).to_contain_text("1 accepted")
    expect(page.locator("#counts")).to_contain_text("2 rejected")
    expect(page.locator("#reviewer")).to_have_value("ana")
    expect(page.locator("#item-id")).to_have_text("astronomy-004")  # where we were
    page.locator("#filter").select_option("rejected")
    expect(page.locator("#position")).to_contain_text("of 2")
    page.locator("#filter").select_option("flagged")
    expect(page.locator("#position")).to_have_text("1 of 1")
    page.locator("#filter").select_option("awaiting")
    expect(page.locator("#position")).to_have_text("1 of 1")
    page.locator("#filter").select_option("pending")
    expect(page.locator("#position")).to_contain_text("of 6")
    expect(page.locator("#status")).to_contain_text("pending")
    assert not errors, errors
    page.close()


@pytest.mark.slow
def test_changes_by_another_reviewer_appear(browser, site):
    folder, serving = site
    page = browser.new_page()
    page.goto(f"http://127.0.0.1:{serving.port}/")
    expect(page.locator("#item-id")).to_have_text("astronomy-000")
    status, _ = serving.json("POST", "/api/verdict", {"id": "astronomy-000", "reviewer": "bo",
                                                      "verdict": "accept"})
    assert status == 200
    # the page polls every 3 s
    expect(page.locator("#counts")).to_contain_text("1 accepted", timeout=8000)
    expect(page.locator("#status")).to_have_text("accepted", timeout=8000)
    page.close()
    assert json.loads((folder / "qa.jsonl").read_text().splitlines()[-1])["source"] == \
        "reviewer:bo"


def test_document_rows_show_their_pages_text_and_checks(browser, tmp_path):
    """A document run (Markdown typeset by the document renderer, one item over several
    pages) in the review page: every page shown and loaded, the text its pages should show
    (the typeset text, not the Markdown source), the checks' verdicts, a vote written."""
    from tests.renderers.test_document import DOCUMENTS
    from tests.test_cli import run

    long = {"id": "long", "question": "What is listed?", "context": "\n\n".join(
        f"## Section {n}\n\n| key | value |\n|--|--:|\n| k{n} | {n * 11} |" for n in range(40))}
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in [*DOCUMENTS, long]),
                      encoding="utf-8")
    folder = tmp_path / "docs"
    assert run("render", source, "--renderer", "document", "--render", "context",
               "--out", folder).exit_code == 0
    assert run("qa", "check", folder, "--checks", "text_layer,image").exit_code == 0
    pages = {json.loads(line)["id"]: len(json.loads(line)["images"])
             for line in (folder / "manifest.jsonl").read_text().splitlines()}
    assert pages["long"] > 1
    serving = Serving(folder)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(f"http://127.0.0.1:{serving.port}/")
        expect(page.locator("#position")).to_have_text("1 of 4")
        seen = {}
        for item in pages:  # in the manifest's order
            expect(page.locator("#item-id")).to_have_text(item)
            expect(page.locator("#images img")).to_have_count(pages[item])
            # every page loaded, none a broken image
            page.wait_for_function("""n => {
                const images = [...document.querySelectorAll('#images img')];
                return images.length === n
                    && images.every(i => i.complete && i.naturalWidth > 0); }""",
                                   arg=pages[item])
            seen[item] = page.locator("#text").inner_text()
            expect(page.locator("#checks")).to_contain_text("text_layer")
            if item != "long":
                page.keyboard.press("j")
        assert set(seen) == set(pages)
        # the text the pages show: typeset, so no Markdown pipes or dollar signs
        assert "Qwen2.5-VL" in seen["table"] and "|" not in seen["table"]
        assert "def loss(x, y):" in seen["code"] and "$" not in seen["code"].replace(
            "\\frac{1}{", "")
        assert seen["chat"].index("Caroline") < seen["chat"].index("Melanie")
        # a vote on a document row is written like any other
        page.locator("#reviewer").fill("ana")
        page.keyboard.press("Escape")
        expect(page.locator("#item-id")).to_have_text("long")
        page.locator("#accept").click()
        wait_for_message(page, "Accepted long")
        votes = [e for e in qa_events(folder) if e["source"] == "reviewer:ana"]
        assert [(e["id"], e["verdict"]) for e in votes] == [("long", "accept")]
        assert not errors, errors
        page.close()
    finally:
        serving.close()
