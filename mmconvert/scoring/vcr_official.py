"""VCR's official scoring of one answer (its public ``src/evaluation/evaluation_metrics.py``,
``find_best_match``, after the refusal filter of ``utils.py``), written for mmconvert.

This module imports nothing from mmconvert: ``mmconvert export --format lmms-eval`` copies it
beside the task's ``utils.py``, so an export scores occlusions the way ``mmconvert score vcr``
does, in an environment without mmconvert.

- The answer is what follows its last ``"Assistant: "``.
- An answer holding "I can't", "I cannot", "sorry" (any case), "无法" or "抱歉" scores 0 on every
  span.
- Tokens are spaCy's, white-space tokens included: English by spaCy's English rules (the
  tokenizer of ``en_core_web_sm``), Chinese by ``zh_core_web_sm``'s words.
- Each span is scored against the answer's n-gram (n = the span's token count, sharing a token
  with it) whose joined text has the highest ``difflib`` ratio with the span: exact match (the
  same tokens in the same order) and the Jaccard index of the two token sets.
"""

from __future__ import annotations

import difflib
from functools import lru_cache

REFUSALS = ("I can't", "I cannot", "无法", "抱歉")


class ScorerUnavailable(RuntimeError):
    """What the scorer needs is not installed; the message says what to install."""


@lru_cache(maxsize=4)
def tokenizer(language: str):
    try:
        import spacy
    except ImportError:
        raise ScorerUnavailable("scoring VCR needs spaCy (pip install spacy)") from None
    if language == "zh":
        try:
            return spacy.load("zh_core_web_sm", exclude=["tok2vec", "tagger", "parser", "ner",
                                                         "attribute_ruler"]).tokenizer
        except OSError:
            raise ScorerUnavailable(
                "VCR's official protocol tokenises Chinese with spaCy's zh_core_web_sm: "
                "python -m spacy download zh_core_web_sm") from None
    return spacy.blank(language).tokenizer


def tokens(text: str, language: str) -> list[str]:
    return [token.text for token in tokenizer(language)(text)]


def refused(answer: str) -> bool:
    return any(phrase in answer for phrase in REFUSALS) or "sorry" in answer.lower()


def best_match(span: str, answer: str, language: str) -> tuple[str, float, float]:
    """(the matched n-gram, exact match, Jaccard) of ``span`` in ``answer``; ("", 0, 0) when
    no n-gram shares a token with the span."""
    joiner = "" if language == "zh" else " "
    wanted = tokens(span, language)
    said = tokens(answer, language)
    n, wanted_set = len(wanted), set(wanted)
    best, best_ratio = None, 0.0
    for i in range(len(said) - n + 1):
        gram = said[i:i + n]
        if wanted_set.isdisjoint(gram):
            continue
        ratio = difflib.SequenceMatcher(None, joiner.join(gram), span).ratio()
        if ratio > best_ratio:  # the first of equal ratios wins
            best, best_ratio = gram, ratio
    if best is None:
        return "", 0.0, 0.0
    union = set(best) | wanted_set
    return joiner.join(best), float(best == wanted), len(set(best) & wanted_set) / len(union)


def score_answer(spans: list[str], answer: str, language: str
                 ) -> tuple[bool, list[tuple[str, float, float]]]:
    """(refused, per span (match, exact match, Jaccard)) of one answer."""
    answer = answer.split("Assistant: ")[-1]
    if refused(answer):
        return True, [("", 0.0, 0.0) for _ in spans]
    return False, [best_match(span, answer, language) for span in spans]
