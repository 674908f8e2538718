"""Prompt pairs: what is not in the image is in the prompt; templates can be replaced."""

from __future__ import annotations

import pytest

from mmconvert.errors import UsageError
from mmconvert.prompts import Prompts
from tests.conftest import make_item

MCQ = make_item(question="Which?", options=["red", "blue"], answer="B")
CTX = make_item(question="Who?", context="Ann met Bob.", answer=["Ann"])
BOTH = make_item(question="Who?", context="Ann met Bob.", options=["Ann", "Bob"], answer="A")


def test_mcq_options_in_the_image():
    image, text = Prompts().pair(MCQ, "options", "cot")
    assert "Which?" in image and "A. red" not in image and "(A or B)" in image
    assert "Which?\n\nA. red\nB. blue" in text


def test_context_in_the_image_and_direct_style():
    image, text = Prompts().pair(CTX, "context", "direct")
    assert "Ann met Bob." not in image and "Question: Who?" in image
    assert "Ann met Bob." in text and text.rstrip().endswith("Reply with only the answer.")


def test_context_question_with_options():
    image, text = Prompts().pair(BOTH, "context", "cot")
    assert "Ann met Bob." not in image and "A. Ann" in image
    image, _ = Prompts().pair(BOTH, "options", "cot")
    assert "Ann met Bob." in image and "A. Ann" not in image
    image, _ = Prompts().pair(BOTH, "all", "cot")
    assert "Ann" not in image and "letter of the correct option (A or B)" in image


def test_prompt_dir_replaces_templates_by_name(tmp_path):
    (tmp_path / "mcq_image_cot.txt").write_text("Q: {question} [{letters}]\n", encoding="utf-8")
    image, text = Prompts(tmp_path).pair(MCQ, "options", "cot")
    assert image == "Q: Which? [A or B]\n"
    assert "A. red" in text  # the shipped twin is still used


def test_bad_templates(tmp_path):
    (tmp_path / "mcq_image_cot.txt").write_text("{nope}", encoding="utf-8")
    with pytest.raises(UsageError, match=r"mcq_image_cot.txt: unknown placeholder \{nope\}"):
        Prompts(tmp_path).pair(MCQ, "options", "cot")
    with pytest.raises(UsageError, match="--prompt-dir .*: no such folder"):
        Prompts(tmp_path / "missing")
