"""An evaluation's conditions, each in a process of its own, share one ``--concurrency``: a
real server on 127.0.0.1 counts the requests it holds at once."""

from __future__ import annotations

import json

import pytest

from tests.openai_server import FakeOpenAI
from tests.test_cli import run

pytest.importorskip("inspect_ai")


def most_at_once(requests) -> int:
    """The most of ``requests`` the server held at one moment."""
    edges = sorted((t, step) for entry in requests
                   for t, step in ((entry.started, 1), (entry.finished, -1)))
    held = most = 0
    for _, step in edges:  # at one instant, an end comes before a start (-1 sorts first)
        held += step
        most = max(most, held)
    return most


def test_the_conditions_processes_share_the_whole_concurrency(sample_run, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-written")
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("m",), delay=0.25)
    url = fake.start()
    try:
        out = tmp_path / "ev"
        # the whole text first, alone: the next evaluation answers it from the cache
        assert run("eval", sample_run, "--model", "m", "--base-url", url, "--modality",
                   "text", "--concurrency", "4", "--out", out).exit_code == 0
        first = len(fake.requests("chat"))
        result = run("eval", sample_run, "--model", "m", "--base-url", url, "--modality",
                     "image,text,blank", "--concurrency", "4", "--out", out)
        assert result.exit_code == 0, result.output
    finally:
        fake.stop()
    items = len((sample_run / "manifest.jsonl").read_text().splitlines())
    assert first == items
    # the text's requests were not sent again, and the image's and the blank page's were
    assert len(fake.requests("chat")) == first + 2 * items
    # never more than --concurrency in flight, over three processes each allowed all 4 ...
    # ... and all 4 used: split evenly (4 // 3 = 1 each), the cached text's share sat idle
    # and the server saw at most 2
    assert most_at_once(fake.requests("chat")[first:]) == 4


def test_a_judges_requests_take_the_same_slots(tmp_path, monkeypatch):
    """Free-form answers graded by ``--judge-model``: the judge's requests, made while each
    answer is scored, count against ``--concurrency`` too (they took none)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-written")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(f'{{"id": "q-{n}", "question": "Name {n}?", "answer": "x{n}"}}\n'
                             for n in range(8)))
    assert run("render", items, "--out", tmp_path / "run").exit_code == 0

    def answer(body):
        text = json.dumps(body["messages"])
        return "SCORE: 10" if "You are grading" in text else "It is x1."

    fake = FakeOpenAI(answer=answer, models=("reader", "judge"), delay=0.25)
    url = fake.start()
    try:
        result = run("eval", tmp_path / "run", "--model", "reader", "--judge-model", "judge",
                     "--modality", "image,text", "--concurrency", "2", "--base-url", url,
                     "--out", tmp_path / "ev")
        assert result.exit_code == 0, result.output
    finally:
        fake.stop()
    asked = fake.requests("chat")
    # a judgement an item (the image's and the text's replies are one, judged once: cached)
    assert sum("You are grading" in json.dumps(e.body) for e in asked) >= 8
    assert most_at_once(asked) == 2
