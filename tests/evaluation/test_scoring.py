"""The one scorer (``scoring.answers``) and the paired statistics, on known answers."""

from __future__ import annotations

import pytest

from mmconvert.evaluation.judge import read_judgement
from mmconvert.evaluation.paired import mcnemar_exact, paired_bootstrap
from mmconvert.scoring.answers import (
    babilong,
    extract_choice,
    extract_free,
    longbench_metric,
    ruler_match,
    score,
)
from mmconvert.scoring.spec import score_row, spec_of

OPTIONS = ["red", "blue", "green", "yellow"]


@pytest.mark.parametrize("response, letter", [
    ("Answer: B", "B"), ("answer: b", "B"), ("... so the answer is (C).", "C"),
    ("答案：D", "D"), ("答案是 A", "A"), ("正确答案为 C", "C"), ("故选B", "B"),
    ("A", "A"), ("(B)", "B"), ("b.", "B"), ("**C**", "C"), ("B. because it is", "B"),
    ("Final answer: **C**", "C"), ("$\\boxed{D}$", "D"), ("\\boxed{\\text{(B)}}", "B"),
    ("**Answer:** A", "A"), ("The correct option is D.", "D"), ("I choose option c", "C"),
    ("A or B? Let me think. Answer: A", "A"), ("I think the answer is A.\nAnswer: B", "B"),
    ("Answer: blue", "B"), ("Answer:\nC", "C"),
    # unparsed: nothing named, the article a, a letter past the options
    ("the answer is a cell", None), ("I cannot tell", None), ("Answer: E", None),
    # ambiguous: two letters, or two answer lines that differ
    ("Answer: A or B", None), ("Answer: A/B", None), ("答案：A或B", None),
    ("Answer: A\nlater...\nAnswer: C", None),
])
def test_option_letters_in_the_forms_models_write(response, letter):
    assert extract_choice(response, 4, OPTIONS)[0] == letter


def test_ambiguity_is_unparsed_and_said_so():
    assert extract_choice("Answer: A or B", 4, OPTIONS) == (None, "ambiguous")
    got = score({"kind": "choice", "answers": ["A"], "options": OPTIONS}, "Answer: A or B")
    assert (got["score"], got["parsed"], got["extra"]["read"]) == (0.0, False, "ambiguous")
    got = score({"kind": "choice", "answers": ["B"], "options": OPTIONS}, "I am not sure.")
    assert (got["score"], got["answer"], got["parsed"]) == (0.0, None, False)


def test_free_form_answers_are_squad_exact_match_never_a_substring():
    spec = {"kind": "free", "metric": "exact_match", "answers": ["red", "blue", "yellow"],
            "extract": "answer_line"}
    assert score(spec, "Answer: Red.")["score"] == 1.0
    assert score(spec, "Answer: the blue")["score"] == 1.0  # articles and punctuation go
    assert score(spec, "Answer: bored")["score"] == 0.0  # "red" inside a word
    got = score(spec, "It is not red; I would say green.")  # no answer line was asked for
    assert (got["score"], got["parsed"]) == (0.0, False)
    ann = {"kind": "free", "metric": "exact_match", "answers": ["Ann"], "extract": "whole"}
    assert score(ann, "Annabel")["score"] == 0.0 and score(ann, "Ann.")["score"] == 1.0
    f1 = score({**ann, "answers": ["Ann Smith"]}, "Ann")
    assert f1["score"] == 0.0 and f1["extra"]["f1"] == pytest.approx(2 / 3)
    assert extract_free("Answer: a\nAnswer: b", "answer_line") == (None, "ambiguous")


def test_babilong_counts_the_labels_the_reply_names_as_words():
    assert babilong("John is in the hallway.", "hallway", "Where is John?", "qa1")[0] == 1.0
    cot = "John went to the kitchen, then the hallway.\nAnswer: hallway"
    assert babilong(cot, "hallway", "Where is John?", "qa1")[0] == 1.0
    assert babilong("kitchen or hallway", "hallway", "Where is John?", "qa1")[0] == 0.0
    assert babilong("2", "two", "How many objects is Mary carrying?", "qa7")[0] == 1.0
    assert babilong("apple, milk", "apple,milk", "What is Mary carrying?", "qa8")[0] == 1.0
    assert not babilong("no idea", "hallway", "Where is John?", "qa1")[1]
    # "no" inside "not" is no answer (BABILong's code takes substrings)
    assert babilong("It is not clear", "yes", "Is Mary in the garden?", "qa6")[1] is False


def test_longbench_metrics():
    assert longbench_metric("qa_f1", "Paris", "Paris", []) == 1.0
    assert longbench_metric("qa_f1", "The capital is Paris, France", "Paris", []) == \
        pytest.approx(2 * 0.25 / 1.25)
    assert longbench_metric("classification", "Type: LOC", "LOC", ["LOC", "HUM"]) == 1.0
    assert longbench_metric("count", "There are 3 and 3", "3", []) == 1.0
    assert longbench_metric("retrieval", "Paragraph 4", "Paragraph 4", []) == 1.0


def test_ruler_counts_whole_values_any_case():
    assert ruler_match("The numbers are 1234567 and 7654321.", ["1234567", "7654321"])[0] == 1.0
    assert ruler_match("91234567", ["1234567"])[0] == 0.0
    assert ruler_match("Value: ABC-def", ["abc-DEF"])[0] == 1.0


def test_rows_are_scored_by_their_spec():
    from tests.typed import typed

    mcq = {"renderer": {"name": "page"}, "corpus": "mmlu-redux", "options": ["x", "y"],
           "answer": "B"}
    assert spec_of(typed(mcq))["kind"] == "choice"
    assert score_row(typed(mcq), "Answer: B").value == 1.0
    babi = {"renderer": {"name": "page"}, "corpus": "babilong", "options": [],
            "answer": ["garden"], "question": "Where is Mary?", "metadata": {"task": "qa1"}}
    assert spec_of(typed(babi))["metric"] == "babilong"
    assert score_row(typed(babi), "Mary is in the garden.").value == 1.0
    longbench = {"renderer": {"name": "page"}, "corpus": "longbench", "subset": "hotpotqa_e",
                 "options": [], "answer": ["Place 1"], "language": "en"}
    assert spec_of(typed(longbench))["metric"] == "longbench:qa_f1"
    assert score_row(typed(longbench), "Answer: Place 1").value == 1.0
    free = {"renderer": {"name": "page"}, "corpus": "items", "options": [],
            "answer": ["Shakespeare"], "prompt_style": "cot"}
    assert score_row(typed(free), "It was William Shakespeare.").parsed is False
    assert score_row(typed(free), "Answer: William Shakespeare").value == 0.0  # exact match
    assert score_row(typed(free), "Answer: William Shakespeare").extra["f1"] == pytest.approx(2 / 3)
    assert score_row(typed({**free, "prompt_style": "direct"}), "Shakespeare").value == 1.0
    vcr = {"renderer": {"name": "occlude"}, "language": "en",
           "masked_spans": [{"text": "in front of a mirror"}, {"text": "his head"}]}
    scored = score_row(typed(vcr), "in front of a mirror, his hat")
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


def test_longbench_chinese_metrics_and_a_missing_package_said_in_one_line(monkeypatch):
    from mmconvert.scoring.spec import missing

    assert longbench_metric("qa_f1_zh", "巴黎", "巴黎", []) == 1.0
    assert longbench_metric("qa_f1_zh", "伦敦", "巴黎", []) == 0.0
    assert longbench_metric("rouge_zh", "北京是中国的首都", "北京是中国的首都", []) == \
        pytest.approx(1.0, abs=1e-6)
    spec = {"kind": "free", "metric": "longbench:rouge_zh"}
    assert missing(spec) is None
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jieba" else real(name, *a))
    assert missing(spec) == ("scoring longbench:rouge_zh needs jieba: pip install "
                             "'mmconvert[longbench]'")
