"""The option-order control: on a run rendered with ``--shuffle-options``, eval reports, of the
items whose gold option the shuffle moved, how often the model's choice followed the gold
option's content (at its new letter) or the letter the gold had before (now another option, as
a memorised answer would), in the image and in the text. A real server on 127.0.0.1 that follows
the content on some items and the old letter on the others gives shares known in advance."""

from __future__ import annotations

import json

import pytest

from mmconvert.manifest import JsonlLog
from tests.conftest import SAMPLE
from tests.openai_server import FakeOpenAI
from tests.test_cli import run

pytest.importorskip("inspect_ai")


@pytest.mark.slow
def test_eval_says_whether_choices_follow_content_or_letters(tmp_path, monkeypatch):
    rendered = tmp_path / "run"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--shuffle-options", "--seed", "3",
               "--out", rendered).exit_code == 0
    rows = JsonlLog(rendered / "manifest.jsonl").read()
    by_question = {row["question"]: (number, row) for number, row in enumerate(rows)}

    def answer(body):
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content)
        number, row = next(v for q, v in by_question.items() if q in text)
        follows = row["answer"] if number % 2 == 0 else row["metadata"]["original_answer"]
        return f"Answer: {follows}"

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        result = run("eval", rendered, "--model", "reader-1", "--base-url", url, "--out",
                     tmp_path / "e")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    moved = [n for n, row in enumerate(rows)
             if row["metadata"]["original_answer"] != row["answer"]]
    assert 0 < len(moved) < len(rows)
    content = 100 * sum(1 for n in moved if n % 2 == 0) / len(moved)
    order = json.loads((tmp_path / "e" / "results.json").read_text())["option_order"]
    assert order["moved"] == len(moved)
    for condition in ("image", "text"):
        assert order[condition] == {"n": len(moved), "content": round(content, 4),
                                    "letter": round(100 - content, 4), "other": 0.0,
                                    "unparsed": 0.0}
    assert "option order: of" in result.output


def test_a_run_without_shuffled_options_has_no_option_order():
    from mmconvert.evaluation.results import option_order

    assert option_order([{"id": "a", "answer": "B", "metadata": {}}], []) is None
