"""The document renderer with hostile or odd input: math in every position (typeset, or
recorded and flagged)."""

from __future__ import annotations

import os
import shutil

import pytest

from mmconvert.renderers.document import DocumentOptions, RenderState, markdown_html

if not (os.environ.get("MMCONVERT_CHROMIUM") or shutil.which("chromium")
        or shutil.which("chromium-browser")):
    if os.environ.get("CI"):
        raise RuntimeError("the document renderer tests need Debian's chromium "
                           "(scripts/install-debian.sh)")
    pytest.skip("chromium is missing", allow_module_level=True)

DELIMITERS = {"$": ("$", "$"), "$$": ("$$", "$$"), "\\(": ("\\(", "\\)"),
              "\\[": ("\\[", "\\]")}
POSITIONS = {
    "mid-paragraph": "Before {m} after.",
    "paragraph start": "{m} then words.",
    "own block": "Words.\n\n{m}\n\nMore.",
    "list item": "- first {m} tail\n- second",
    "ordered item": "1. {m}",
    "table cell": "| a | b |\n|---|---|\n| {m} | x |",
    "quote": "> quoted {m} here",
    "heading": "## Heading {m}",
    "over lines": "Before {open}\nx^2 \\cdot\ny{close} after.",
}


@pytest.mark.parametrize("position", sorted(POSITIONS))
@pytest.mark.parametrize("delimiter", sorted(DELIMITERS))
def test_every_math_delimiter_is_typeset_in_every_position(delimiter, position):
    opening, closing = DELIMITERS[delimiter]
    if position == "over lines" and opening == "$":
        pytest.skip("$…$ is one line's (dollarmath's rule); a newline ends it")
    text = POSITIONS[position].format(m=f"{opening}x^2 + y{closing}", open=opening,
                                      close=closing)
    state = RenderState(DocumentOptions(), None)
    html = markdown_html(text, state)
    assert "<math" in html and state.math_errors == [], html
    from mmconvert.renderers.document import visible_text

    shown = visible_text(html)
    assert "\\" not in shown and "$" not in shown and "x^2" not in shown, shown


def test_latex_the_converter_does_not_know_is_recorded_and_drawn_as_its_source():
    state = RenderState(DocumentOptions(), None)
    html = markdown_html("a \\[ \\notacommand{x} \\] b $\\alpha$", state)
    assert state.math_errors == [{"latex": " \\notacommand{x} ",
                                  "error": "unknown command \\notacommand"}]
    assert "\\notacommand{x}" in html and "math-error" in html and "&#x003B1;" in html
