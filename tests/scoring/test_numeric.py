"""Numbers scored as numbers (``scoring.answers``' numeric rule), checked on a generated corpus
of number replies whose truth is known by construction, and against the references' own code:
DROP's number handling (lm-eval's ``tasks/drop/utils.py``), lm-eval's gsm8k answer
normalisation (its ``regex`` filter and ``exact_match`` with the task's own
``regexes_to_ignore``, read from the installed ``gsm8k.yaml``) and MATH's (lm-eval's
``hendrycks_math`` ``is_equiv``).

Where a reference compares strings and not values, it disagrees with the truth on forms it was
never meant to read (a currency mark for MATH, a unit word for gsm8k): each such form is named
below with the reference's rule that makes it differ, and the test fails on any other
disagreement, or when a named one stops happening.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from mmconvert.scoring.answers import free_metric, gold_number, said_number, score

# --- the corpus: (gold, reply, truth, gold form, reply form) --------------------------------

# base values: integers, negatives, decimals, large numbers, simple fractions
INTEGERS = [3, 5, 7, 9, 12, 15, 18, 27, 42, 64, 99, 120, 250, 365, 512, 1000, 1234, 2019, 4096,
            10000, 58000, 1234567]
NEGATIVES = [-3, -7, -15, -40, -1234]
DECIMALS = [Fraction(1, 2), Fraction(21, 5), Fraction(314, 100), Fraction(5, 4),
            Fraction(75, 1000), Fraction(1299, 100)]
FRACTIONS = [(1, 2), (3, 4), (2, 3), (5, 8)]


def plain(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    text = f"{float(value):.6f}".rstrip("0")
    assert Fraction(text) == value
    return text


def grouped(value: Fraction) -> str:
    whole = f"{abs(value.numerator) // value.denominator:,}"
    rest = plain(abs(value) - abs(value.numerator) // value.denominator)
    text = whole + (rest[1:] if rest != "0" else "")
    return ("-" if value < 0 else "") + text


def corpus() -> list[tuple[str, str, bool, str, str]]:
    cases: list[tuple[str, str, bool, str, str]] = []

    def add(gold: str, gold_value: Fraction, reply: str, reply_value: Fraction | None,
            gold_form: str, reply_form: str) -> None:
        cases.append((gold, reply, reply_value == gold_value, gold_form, reply_form))

    for n in INTEGERS:
        v = Fraction(n)
        add(str(n), v, str(n), v, "integer", "same")
        add(str(n), v, f"{n}.00", v, "integer", "trailing zeros")
        add(str(n), v, f"${n:,}", v, "integer", "currency")
        add(str(n), v, f"{n} apples", v, "integer", "unit word")
        add(str(n), v, f"-{n}", -v, "integer", "sign added")
        add(str(n), v, str(n + 1), v + 1, "integer", "off by one")
        add(str(n), v, str(n) + "0", v * 10, "integer", "digit added")
        add(str(n), v, f"0{n}", v, "integer", "leading zero")
        if n >= 1000:
            add(f"{n:,}", v, str(n), v, "thousands", "bare")
            add(str(n), v, f"{n:,}", v, "integer", "thousands")
            add(f"${n:,}.00", v, str(n), v, "currency", "bare")
            add(f"${n:,}.00", v, f"{n:,}", v, "currency", "thousands")
        else:
            add(f"{n} miles", v, str(n), v, "unit word", "bare")
            add(f"{n} miles", v, f"{n} miles", v, "unit word", "same")
            add(f"{n} miles", v, str(n * 2), v * 2, "unit word", "doubled")
            add(f"{n}%", v, str(n), v, "percent", "bare")
            add(f"{n}%", v, f"{n} %", v, "percent", "spaced percent")
    for n in NEGATIVES:
        v = Fraction(n)
        add(str(n), v, str(n), v, "negative", "same")
        add(str(n), v, str(-n), -v, "negative", "sign dropped")
        add(str(n), v, f"\u2212{-n}", v, "negative", "unicode minus")
        add(f"\u2212{-n}", v, str(n), v, "unicode minus", "ascii minus")
        add(str(n), v, f"{n - 1}", v - 1, "negative", "off by one")
        add(str(n), v, f"-${-n:,}", v, "negative", "currency")
    for v in DECIMALS:
        text = plain(v)
        add(text, v, text, v, "decimal", "same")
        add(text, v, text + "0", v, "decimal", "trailing zero")
        add(text, v, text.replace(".", ""), Fraction(text.replace(".", "")), "decimal",
            "point dropped")
        add(text, v, f"-{text}", -v, "decimal", "sign added")
        if text.startswith("0."):
            add(text, v, text[1:], v, "decimal", "no leading zero")
            add(text, v, "0" + text[2:], Fraction(text[2:]), "decimal", "zero for the point")
        add(text, v, plain(v + Fraction(1, 100)), v + Fraction(1, 100), "decimal", "off a cent")
        add(f"${text}", v, text, v, "currency", "bare")
    for a, b in FRACTIONS:
        v = Fraction(a, b)
        add(f"{a}/{b}", v, f"{a}/{b}", v, "fraction", "same")
        add(f"{a}/{b}", v, f"{a}{b}", Fraction(f"{a}{b}"), "fraction", "digits joined")
        add(f"{a}/{b}", v, f"\\frac{{{a}}}{{{b}}}", v, "fraction", "latex fraction")
        add(f"{a}/{b}", v, f"{b}/{a}", 1 / v, "fraction", "inverted")
        if v.limit_denominator(1000) == v and 1000 % b == 0:
            add(f"{a}/{b}", v, plain(v), v, "fraction", "decimal")
            add(plain(v), v, f"{a}/{b}", v, "decimal", "fraction")
    return cases


CASES = corpus()


def test_the_corpus_is_large_and_balanced():
    assert len(CASES) >= 300
    truths = Counter(case[2] for case in CASES)
    assert truths[True] >= 100 and truths[False] >= 100


def test_every_reply_scores_its_truth():
    wrong = []
    for gold, reply, truth, *_ in CASES:
        spec = {"kind": "free", "metric": free_metric([gold]), "answers": [gold],
                "extract": "answer_line"}
        assert spec["metric"] == "numeric", gold
        got = score(spec, f"Let me work it out.\nAnswer: {reply}")
        if not got["parsed"] or got["score"] != float(truth):
            wrong.append((gold, reply, truth, got))
    assert wrong == []


@pytest.mark.parametrize("gold, reply, truth", [
    # the issue's findings: five wrong replies that scored 1.0, three right ones that scored 0
    ("-15", "15", 0.0), ("-7", "7", 0.0), ("4.2", "42", 0.0), ("0.5", "05", 0.0),
    ("1/2", "12", 0.0), ("1234", "$1,234.00", 1.0), ("3", "3 apples", 1.0),
    ("120 miles", "120", 1.0)])
def test_the_issue_s_replies(gold, reply, truth):
    spec = {"kind": "free", "metric": free_metric([gold]), "answers": [gold],
            "extract": "whole"}
    assert score(spec, reply)["score"] == truth


@pytest.mark.parametrize("reply, read", [
    ("Answer: 15 or -15", "ambiguous"), ("Answer: 2024-01-05", "ambiguous"),
    ("Answer: I cannot tell", "no number"), ("The total is 15.", "unparsed"),
    ("Answer: 15\nAnswer: 16", "ambiguous")])
def test_a_reply_with_no_number_or_two_is_unparsed_never_guessed(reply, read):
    got = score({"kind": "free", "metric": "numeric", "answers": ["15"],
                 "extract": "answer_line"}, reply)
    assert (got["score"], got["parsed"], got["extra"]["read"]) == (0.0, False, read)


def test_answer_lines_that_say_one_number_twice_are_one_answer():
    spec = {"kind": "free", "metric": "numeric", "answers": ["15"], "extract": "answer_line"}
    got = score(spec, "Answer: 15 apples\n...\nAnswer: $15")
    assert (got["score"], got["answer"]) == (1.0, "15")


def test_gold_numbers_and_other_answers():
    assert [gold_number(g) for g in ("World War 2", "3:15", "2 feet 3 inches", "A4")] == \
        [None] * 4
    assert free_metric(["12", "twelve"]) == "any-of"
    assert free_metric(["Paris"]) == "exact_match"
    spec = {"kind": "free", "metric": "any-of", "answers": ["12", "twelve"],
            "extract": "whole"}
    assert score(spec, "twelve")["score"] == 1.0 and score(spec, "12.0")["score"] == 1.0
    assert score(spec, "21")["score"] == 0.0
    assert said_number("x2 v1.2") == (None, "no number")


@pytest.mark.parametrize("metric, reply, value", [
    ("exact", "Paris", 1.0), ("exact", "paris", 0.0), ("f1", "Paris France", 2 / 3),
    ("exact_match", "the Paris.", 1.0)])
def test_an_item_s_own_metric(metric, reply, value):
    got = score({"kind": "free", "metric": metric, "answers": ["Paris"], "extract": "whole"},
                reply)
    assert got["score"] == pytest.approx(value) and got["extra"]["metric"] == metric


# --- the references' own code -------------------------------------------------------------------

lm_eval = pytest.importorskip("lm_eval", reason="the references are lm-eval's task code")


def drop_em(reply: str, gold: str) -> bool:
    from lm_eval.tasks.drop.utils import get_metrics

    return get_metrics(reply, gold)[0] == 1.0


def gsm8k_em(reply: str, gold: str) -> bool:
    """lm-eval's gsm8k: its strict regex filter on a reply written as its target is
    ("#### N"), then its exact_match with the task's own options."""
    import yaml
    from lm_eval.api.metrics import exact_match_hf_evaluate
    from lm_eval.filters.extraction import RegexFilter

    config = yaml.safe_load((Path(lm_eval.__file__).parent / "tasks" / "gsm8k" /
                             "gsm8k.yaml").read_text())
    strict = next(f for f in config["filter_list"] if f["name"] == "strict-match")
    regex = next(step for step in strict["filter"] if step["function"] == "regex")
    kept = RegexFilter(regex_pattern=regex["regex_pattern"]).apply(
        [[f"Reasoning.\n#### {reply}"]], [{}])[0][0]
    options = {k: v for k, v in config["metric_list"][0].items()
               if k in ("ignore_case", "ignore_punctuation", "regexes_to_ignore")}
    return exact_match_hf_evaluate([kept], [f"#### {gold}"], **options)["exact_match"] == 1.0


def math_equiv(reply: str, gold: str) -> bool:
    from lm_eval.tasks.hendrycks_math.utils import is_equiv

    return bool(is_equiv(reply, gold))


# (reference, gold form, reply form) -> the reference's rule that makes it differ there. Each
# is a form the reference compares as a string, or splits, where the value is what counts.
EXPLAINED = {
    # DROP splits tokens at hyphens (its _tokenize), strips the punctuation of a token that
    # float() cannot read (its _remove_punc), and compares bags of tokens
    ("drop", "integer", "sign added"): "DROP's _tokenize splits at '-': the sign is lost",
    ("drop", "negative", "sign dropped"): "DROP's _tokenize splits at '-': the sign is lost",
    ("drop", "decimal", "sign added"): "DROP's _tokenize splits at '-': the sign is lost",
    ("drop", "negative", "unicode minus"): "DROP strips U+2212 as no number's character",
    ("drop", "unicode minus", "ascii minus"): "DROP strips U+2212 as no number's character",
    ("drop", "fraction", "digits joined"): "DROP strips '/' from '1/2', leaving '12'",
    ("drop", "fraction", "decimal"): "DROP strips '/' from '1/2', leaving '12', not 0.5",
    ("drop", "decimal", "fraction"): "DROP strips '/' from '1/2', leaving '12', not 0.5",
    ("drop", "fraction", "latex fraction"): "DROP reads LaTeX as words",
    ("drop", "integer", "unit word"): "DROP compares bags of tokens: 'apples' is one more",
    ("drop", "unit word", "bare"): "DROP compares bags of tokens: 'miles' is one more",
    ("drop", "currency", "bare"): "DROP strips '.' with ',' and '$': '$1,234.00' is 123400",
    ("drop", "currency", "thousands"): "DROP strips '.' with ',' and '$': '$1,234.00' is 123400",
    # gsm8k's strict filter keeps [-0-9.,]+ right after '#### '; exact_match then compares
    # strings with ',', '$' and a final '.' removed: other spellings of one value differ
    ("gsm8k", "integer", "trailing zeros"): "gsm8k compares strings: '12.00' is not '12'",
    ("gsm8k", "integer", "leading zero"): "gsm8k compares strings: '012' is not '12'",
    ("gsm8k", "integer", "currency"): "gsm8k's filter reads no '$' after '#### ': [invalid]",
    ("gsm8k", "negative", "currency"): "gsm8k's filter reads no '$' after '#### ': [invalid]",
    ("gsm8k", "decimal", "trailing zero"): "gsm8k compares strings: '0.50' is not '0.5'",
    ("gsm8k", "decimal", "no leading zero"): "gsm8k compares strings: '.5' is not '0.5'",
    ("gsm8k", "negative", "unicode minus"): "gsm8k's filter reads '-' only, not U+2212",
    ("gsm8k", "unicode minus", "ascii minus"): "gsm8k's filter reads '-' only, not U+2212",
    ("gsm8k", "unit word", "bare"): "gsm8k compares strings: '12 miles' is not '12'",
    ("gsm8k", "unit word", "same"): "gsm8k's filter keeps '12' of '12 miles'; the gold, all",
    ("gsm8k", "percent", "bare"): "gsm8k compares strings: '12%' is not '12'",
    ("gsm8k", "percent", "spaced percent"): "gsm8k's filter keeps '12' of '12 %'",
    ("gsm8k", "currency", "bare"): "gsm8k compares strings: '1234.00' is not '1234'",
    ("gsm8k", "currency", "thousands"): "gsm8k compares strings: '1234.00' is not '1234'",
    ("gsm8k", "fraction", "same"): "gsm8k's filter keeps digits, '.' and ',': '1/2' is '1'",
    ("gsm8k", "fraction", "latex fraction"): "gsm8k's filter keeps no LaTeX",
    ("gsm8k", "fraction", "decimal"): "gsm8k's filter keeps digits, '.' and ',': '1/2' is '1'",
    ("gsm8k", "decimal", "fraction"): "gsm8k's filter keeps digits, '.' and ',': '1/2' is '1'",
    # MATH's strip_string compares LaTeX strings: it drops units in \text{}, '\%' (not '%')
    # and spaces, turns a/b into \frac{a}{b} and 0.5 into \frac{1}{2}, and nothing else
    ("math", "integer", "trailing zeros"): "MATH compares strings: '12.00' is not '12'",
    ("math", "integer", "currency"): "MATH compares strings: '$1,234' is not '1234'",
    ("math", "integer", "unit word"): "MATH compares strings: '12apples' is not '12'",
    ("math", "integer", "leading zero"): "MATH compares strings: '012' is not '12'",
    ("math", "integer", "thousands"): "MATH compares strings: '1,234' is not '1234'",
    ("math", "thousands", "bare"): "MATH compares strings: '1,234' is not '1234'",
    ("math", "currency", "bare"): "MATH compares strings: '$1,234.00' is not '1234'",
    ("math", "currency", "thousands"): "MATH compares strings: '$1,234.00' is not '1,234'",
    ("math", "unit word", "bare"): "MATH compares strings: '12miles' is not '12'",
    ("math", "percent", "bare"): "MATH drops LaTeX's '\\%', not '%': '12%' is not '12'",
    ("math", "negative", "unicode minus"): "MATH compares strings: U+2212 is not '-'",
    ("math", "unicode minus", "ascii minus"): "MATH compares strings: U+2212 is not '-'",
    ("math", "negative", "currency"): "MATH compares strings: '-$15' is not '-15'",
    ("math", "decimal", "trailing zero"): "MATH compares strings: '0.50' is not '0.5'",
    ("math", "fraction", "decimal"): "MATH turns 0.5 alone into \\frac{1}{2}: '0.75' stays",
    ("math", "decimal", "fraction"): "MATH turns 0.5 alone into \\frac{1}{2}: '0.75' stays",
}

REFERENCES = {"drop": drop_em, "gsm8k": gsm8k_em, "math": math_equiv}


def disagreements(name: str) -> dict[tuple[str, str], list[tuple[str, str, bool]]]:
    found: dict[tuple[str, str], list[tuple[str, str, bool]]] = {}
    for gold, reply, truth, gold_form, reply_form in CASES:
        if REFERENCES[name](reply, gold) != truth:
            found.setdefault((gold_form, reply_form), []).append((gold, reply, truth))
    return found


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_references_differ_only_where_their_rule_says(name):
    found = disagreements(name)
    unexplained = {form: cases for form, cases in found.items()
                   if (name, *form) not in EXPLAINED}
    assert unexplained == {}, json.dumps({" / ".join(k): v for k, v in unexplained.items()},
                                         ensure_ascii=False)
    stale = [form for (ref, *form) in EXPLAINED if ref == name and tuple(form) not in found]
    assert stale == []
