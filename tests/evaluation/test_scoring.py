"""The family scorers and the paired statistics, on known answers."""

from __future__ import annotations

import pytest

from mmconvert.corpora.babilong import score_babilong
from mmconvert.corpora.longbench import qa_f1
from mmconvert.evaluation.scoring import (
    option_letter,
    read_judgement,
    score_contains,
    score_mcq,
    score_row,
)
from mmconvert.evaluation.stats import mcnemar_exact, paired_bootstrap


@pytest.mark.parametrize("response, letter", [
    ("Answer: B", "B"), ("... so the answer is (C).", "C"), ("答案：D", "D"), ("答案是 A", "A"),
    ("A", "A"), ("(B)", "B"), ("B. because it is", "B"), ("Final answer: **C**", "C"),
    ("A or B? Let me think. Answer: A", "A"), ("the answer is a cell", None),
    ("I cannot tell", None), ("Answer: E", None),  # E is not among 4 options
])
def test_option_letters_in_the_forms_the_seeds_accept(response, letter):
    assert option_letter(response, 4) == letter


def test_an_unparsed_mcq_answer_is_counted_apart():
    scored = score_mcq("I am not sure.", ["a", "b", "c", "d"], "B")
    assert (scored.value, scored.answer, scored.parsed) == (0.0, None, False)
    assert score_mcq("Answer: B", ["a", "b"], "B").value == 1.0


def test_babilong_counts_the_labels_the_reply_names():
    assert score_babilong("John is in the hallway.", "hallway", "Where is John?", "qa1").value \
        == 1.0
    # a chain of thought names several places; the conclusion after "Answer:" counts
    cot = "John went to the kitchen, then the hallway. Answer: hallway"
    assert score_babilong(cot, "hallway", "Where is John?", "qa1").value == 1.0
    assert score_babilong("kitchen or hallway", "hallway", "Where is John?", "qa1").value == 0.0
    # labels the question names do not count; digits are words
    assert score_babilong("2", "two", "How many objects is Mary carrying?", "qa7").value == 1.0
    assert score_babilong("apple, milk", "apple,milk", "What is Mary carrying?",
                          "qa8").value == 1.0
    assert not score_babilong("no idea", "hallway", "Where is John?", "qa1").parsed


def test_longbench_token_f1_as_its_metric():
    assert qa_f1("Paris", "Paris") == 1.0
    assert qa_f1("The capital is Paris, France", "Paris") == pytest.approx(2 * 0.25 / 1.25)
    assert qa_f1("the", "a") == 0.0
    assert qa_f1("巴黎市", "巴黎", chinese=True) == pytest.approx(0.8)


def test_rows_are_scored_by_their_family():
    mcq = {"renderer": {"name": "page"}, "corpus": "mmlu-redux", "options": ["x", "y"],
           "answer": "B"}
    assert score_row(mcq, "Answer: B").value == 1.0
    babi = {"renderer": {"name": "page"}, "corpus": "babilong", "options": [],
            "answer": ["garden"], "question": "Where is Mary?", "metadata": {"task": "qa1"}}
    assert score_row(babi, "Mary is in the garden.").value == 1.0
    longbench = {"renderer": {"name": "page"}, "corpus": "longbench", "subset": "hotpotqa_e",
                 "options": [], "answer": ["Place 1"], "language": "en"}
    assert score_row(longbench, "Answer: Place 1").value == 1.0
    free = {"renderer": {"name": "page"}, "corpus": "items", "options": [],
            "answer": ["Shakespeare"]}
    assert score_row(free, "It was William Shakespeare.").value == 1.0
    assert score_contains("nothing", ["x"]).value == 0.0
    vcr = {"renderer": {"name": "occlude"}, "language": "en",
           "masked_spans": [{"text": "in front of a mirror"}, {"text": "his head"}]}
    scored = score_row(vcr, "in front of a mirror, his hat")
    assert scored.value == 0.5 and scored.extra["exact_match"] == [1.0, 0.0]


def test_a_judge_s_reply_is_read_or_marked_unparsed():
    assert read_judgement("Reasoning... SCORE: 7").value == 0.7
    assert not read_judgement("It is fine.").parsed
    assert not read_judgement("SCORE: 70").parsed


def test_paired_bootstrap_and_exact_mcnemar():
    image = [1.0] * 6 + [0.0] * 4
    text = [1.0] * 10
    low, high = paired_bootstrap(image, text, seed=0)
    assert low <= -0.4 <= high < 0 and (low, high) == paired_bootstrap(image, text, seed=0)
    assert paired_bootstrap(text, text) == (0.0, 0.0)
    # 4 discordant pairs, all one way: 2 x 0.5^4
    assert mcnemar_exact([v == 1.0 for v in image], [True] * 10) == pytest.approx(0.125)
    assert mcnemar_exact([True, False], [False, True]) == 1.0
    assert mcnemar_exact([True], [True]) == 1.0
