"""How a model's answer to one item is scored, by the family the item belongs to.

- Multiple choice: the option letter in the forms the seeds accept ("Answer: X", "the answer is
  (B)", "答案：X", a lone letter); an answer with no letter is *unparsed*, counted apart and
  scored 0, never silently taken as wrong.
- VCR occlusions: exact match and Jaccard index of the covered spans (``score vcr``'s two
  protocols); the item's score is its spans' mean exact match.
- Corpora with their own paper's scoring (BABILong, LongBench) supply it through
  ``Corpus.score_response``.
- Anything else with accepted answers: contained after lower-casing and collapsing white space.
- An item with no gold answer (``unscorable``) is not scored at all: it is reported as unscored,
  never as 0.

Every function here is pure: the same response gives the same score, so stored responses can be
scored again without a request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# strongest first; the last match of the first pattern that matches wins
# (the letter itself must be a capital: "the answer is a cell" names no option)
_LETTER_PATTERNS = tuple(re.compile(p, re.MULTILINE) for p in (
    r"(?i:answer)\s*(?i:is|:|：)\s*(?i:option\s*)?[\(\[\*]*\s*([A-Z])\b",
    r"答案\s*(?:是|为|為)?\s*[:：]?\s*[\(（\[]?\s*([A-Z])",
    r"^\s*[\(\[\*]*([A-Z])[\)\]\*]*[.)]?\s*$",
    r"^\s*[\(\[]?([A-Z])[\)\]]?[.:)]\s",
))


@dataclass
class Scored:
    """One answer's score: ``value`` in [0, 1]; ``answer`` what was extracted (None when
    nothing could be); ``parsed`` False for an answer in no form the family reads."""

    value: float
    answer: str | None
    parsed: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def option_letter(response: str, count: int) -> str | None:
    """The option letter a response chose, among the first ``count`` letters; None if it
    names none in a form the seeds accept."""
    letters = LETTERS[:count]
    for pattern in _LETTER_PATTERNS:
        found = [f for f in pattern.findall(response) if f in letters]
        if found:
            return found[-1]
    return None


def score_mcq(response: str, options: list[str], answer: str) -> Scored:
    letter = option_letter(response, len(options))
    if letter is None:
        return Scored(0.0, None, parsed=False)
    return Scored(float(letter == answer), letter)


def _normalise(text: str) -> str:
    return " ".join(str(text).lower().split())


def score_contains(response: str, answers: list[str]) -> Scored:
    """1 when the response contains an accepted answer (case and white space aside)."""
    said = _normalise(response)
    hit = next((a for a in answers if a and _normalise(a) in said), None)
    return Scored(float(hit is not None), hit if hit is not None else said[:200])


def score_spans(response: str, spans: list[str], language: str, protocol: str) -> Scored:
    """VCR: the spans' mean exact match; their mean Jaccard index in ``extra``."""
    from ..scoring.vcr import score_item

    scored = score_item(spans, response, language, protocol=protocol)
    exact = [s.exact_match for s in scored.spans]
    jaccard = [s.jaccard for s in scored.spans]
    return Scored(sum(exact) / len(exact), " | ".join(s.match for s in scored.spans),
                  extra={"exact_match": exact, "jaccard": jaccard, "refused": scored.refused})


def accepted(row: dict[str, Any]) -> list[str]:
    answer = row.get("answer")
    return [str(a) for a in answer] if isinstance(answer, list) else (
        [] if answer is None else [str(answer)])


def unscorable(row: dict[str, Any]) -> str | None:
    """Why the item of manifest ``row`` cannot be scored (it has no gold answer to score
    against), or None. Such an item is reported as unscored, never scored 0."""
    from ..renderers import row_renderer

    if row_renderer(row).answer_spans:
        return None if row.get("masked_spans") else "no covered span to score against"
    answers = [a for a in accepted(row) if a.strip()]
    if not answers:
        return "no gold answer"
    options = row.get("options") or []
    if options and answers[0] not in LETTERS[:len(options)]:
        return f"answer {answers[0]!r} names none of its {len(options)} options"
    return None


def family_score(row: dict[str, Any], response: str, *,
                 protocol: str = "official") -> Scored | None:
    """``response`` scored by the rule of the item's family: VCR spans, the corpus' paper, the
    option letter; None for a free-form item no family rule reads (containment, or a judge
    model, scores it)."""
    from ..corpora import CORPORA
    from ..items import base_language
    from ..renderers import row_renderer

    if row_renderer(row).answer_spans:
        return score_spans(response, [s["text"] for s in row["masked_spans"]],
                           base_language(row.get("language")), protocol)
    corpus = row.get("corpus")
    if corpus in CORPORA:
        scored = CORPORA.get(corpus)().score_response(row, response)
        if scored is not None:
            return scored
    options = row.get("options") or []
    if options:
        return score_mcq(response, options, str(row.get("answer")))
    return None


def score_row(row: dict[str, Any], response: str, *, protocol: str = "official") -> Scored:
    """``response`` to the item of manifest ``row``, scored by the item's family (a free-form
    item by containment of an accepted answer)."""
    scored = family_score(row, response, protocol=protocol)
    return scored if scored is not None else score_contains(response, accepted(row))


# --- a judge model for free-form answers (VisTW-Dialogue style) ----------------------------

RUBRIC = """You are grading a model's answer to a question against the reference answer.

Question:
{question}

Reference answer:
{reference}

Model's answer:
{answer}

Score the answer from 0 to 10: 10 when it is correct and complete, 5 when it is partly correct,
0 when it is wrong, off-topic or a refusal. Judge only the content, not the style or length.
Reply with one line of the form "SCORE: N"."""


def judge_prompt(row: dict[str, Any], response: str) -> str:
    return RUBRIC.format(question=row.get("question") or row.get("text_prompt") or "",
                         reference=" / ".join(accepted(row)) or "(none given)",
                         answer=response)


def read_judgement(reply: str) -> Scored:
    found = re.findall(r"SCORE\s*[:：]\s*(\d+(?:\.\d+)?)", reply, flags=re.IGNORECASE)
    if not found or float(found[-1]) > 10:
        return Scored(0.0, None, parsed=False, extra={"judge": reply[:300]})
    return Scored(float(found[-1]) / 10, found[-1], extra={"judge": reply[:300]})
