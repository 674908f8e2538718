"""A judge model for free-form answers (VisTW-Dialogue style): the rubric ``eval
--judge-model`` asks it with, and how its reply is read."""

from __future__ import annotations

import re

from ..rows import QuestionRow, Row
from ..scoring.spec import Scored, accepted

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


def judge_prompt(row: Row, response: str) -> str:
    question = row.question if isinstance(row, QuestionRow) else None
    return RUBRIC.format(question=question or row.text_prompt or "",
                         reference=" / ".join(accepted(row)) or "(none given)",
                         answer=response)


def read_judgement(reply: str) -> Scored:
    found = re.findall(r"SCORE\s*[:：]\s*(\d+(?:\.\d+)?)", reply, flags=re.IGNORECASE)
    if not found or float(found[-1]) > 10:
        return Scored(0.0, None, parsed=False, extra={"judge": reply[:300]})
    return Scored(float(found[-1]) / 10, found[-1], extra={"judge": reply[:300]})
