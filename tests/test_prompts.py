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


# --- per-family templates -----------------------------------------------------------------


def corpus_pair(corpus, item, style="cot", prompt_dir=None):
    from mmconvert.corpora import resolve

    c = resolve(corpus)
    return Prompts(prompt_dir).pair(item, c.part_for(item), style, c.prompt_keys(item))


BABI = make_item(corpus="babilong", context="Mary moved to the bathroom.",
                 question="Where is Mary?", answer=["bathroom"],
                 metadata={"task": "qa1", "length": "0k"})


def test_babilong_prompts_carry_the_task_instruction():
    image, text = corpus_pair("babilong", BABI)
    assert image.startswith("The text contains facts about where people are")
    assert "Mary moved" not in image and "Question: Where is Mary?" in image
    assert "Text:\nMary moved to the bathroom." in text
    qa10 = make_item(context="x", question="Is Bill in the park?", answer=["maybe"],
                     metadata={"task": "qa10"})
    assert "yes, no or maybe" in corpus_pair("babilong", qa10)[0]


def test_longbench_prompts_per_subset():
    item = make_item(subset="narrativeqa", context="Once upon a time.", question="Who?",
                     answer=["x"], metadata={"length_bin": "0-512"})
    image, _ = corpus_pair("longbench", item, "direct")
    assert "a book or a film script" in image and image.rstrip().endswith("Answer:")
    item.subset = "hotpotqa_e"
    assert "from the passages" in corpus_pair("longbench", item)[0]
    item.subset = "qasper_e"  # no instruction of its own: the LongBench default
    assert "from the document" in corpus_pair("longbench", item)[0]


def test_chinese_exam_prompts_in_the_item_script():
    item = make_item(corpus="tmmluplus", language="zh-TW", question="臺灣最高的山？",
                     options=["玉山", "雪山", "合歡山", "阿里山"], answer="A")
    image, text = corpus_pair("tmmluplus", item)
    assert "選項見圖片" in image and "（A/B/C/D）" in image and "玉山" not in image
    assert "A. 玉山" in text
    item.language = "zh"
    image, _ = corpus_pair("cmmlu", item)
    assert "选项见图片" in image


def test_prompt_dir_replaces_an_instruction(tmp_path):
    (tmp_path / "babilong" / "qa1").mkdir(parents=True)
    (tmp_path / "babilong" / "qa1" / "instruction.txt").write_text("Find Mary.\n")
    image, text = corpus_pair("babilong", BABI, prompt_dir=tmp_path)
    assert image.startswith("Find Mary.\n") and text.startswith("Find Mary.\n")


# phrases that forbid the reasoning a chain-of-thought prompt asks for
NO_REASONING = ("no other words", "no explanation", "only the answer and", "do not output",
                "only give", "Reply with only")


@pytest.mark.parametrize("corpus,item", [
    *[("longbench", make_item(subset=subset, context="c", question="q", answer=["x"],
                              metadata={"length_bin": "0-512"}))
      for subset in ("narrativeqa", "hotpotqa_e", "2wikimqa_e", "triviaqa_e", "qasper_e")],
    *[("babilong", make_item(context="c", question="q", answer=["x"],
                             metadata={"task": f"qa{n}"})) for n in range(1, 11)],
])
def test_chain_of_thought_prompts_never_forbid_reasoning(corpus, item):
    """A cot prompt asks for steps, then 'Answer: ...': no sentence of it (the task's
    instruction included) says to give only the answer and no other words."""
    for prompt in corpus_pair(corpus, item, "cot"):
        assert "step by step" in prompt
        assert not [p for p in NO_REASONING if p.lower() in prompt.lower()], prompt
    image, text = corpus_pair(corpus, item, "direct")
    assert "step by step" not in image + text
