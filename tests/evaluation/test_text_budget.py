"""``--modality text-budget``: each item asked as text cut to its pages' vision tokens, against a
real OpenAI-compatible server on 127.0.0.1 whose accuracy is a known function of what it is
sent: text is answered right exactly when the sentence the answer needs is whole in it; images
always right. Every score equals that function, and every cut meets its budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmconvert.manifest import JsonlLog
from mmconvert.tokens import load_tokenizer
from mmconvert.vision_tokens import image_tokens, token_rule
from tests.openai_server import FakeOpenAI
from tests.test_cli import run
from tests.test_stats import tiktoken_files

pytest.importorskip("inspect_ai")
SECRET = "sk-test-never-written-0123456789"
FILLER = ("The committee met again on Tuesday to review the season's figures, and the minutes "
          "record a long discussion of the budget, the rota and the state of the roof. ")


def needed(index: int) -> str:
    return f"The code word for file {index} is ZEPHYR{index:03d}."


@pytest.fixture
def corpus(tmp_path) -> Path:
    """Ten items whose contexts hold the needed sentence at a known place: near the start,
    in the middle or near the end of ~50 sentences."""
    items = []
    for index in range(10):
        place = (2, 25, 47)[index % 3]
        sentences = [FILLER] * 50
        sentences.insert(place, needed(index) + " ")
        items.append({"id": f"doc-{index:02d}", "context": "".join(sentences).strip(),
                      "question": f"What is the code word for file {index}?",
                      "answer": [f"ZEPHYR{index:03d}"]})
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


@pytest.fixture
def server():
    def answer(body):
        content = body["messages"][-1]["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
        file = int(text.split("code word for file ")[-1].split("?")[0])
        if any(p.get("type") == "image_url" for p in parts) or needed(file) in text:
            return f"Answer: ZEPHYR{file:03d}"
        return "Answer: unknown"

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    yield fake, url
    fake.stop()


@pytest.mark.parametrize("cut", ["head", "tail", "ends"])
def test_the_text_at_the_image_budget_is_cut_to_it_and_scored_by_what_it_keeps(
        corpus, server, tmp_path, monkeypatch, cut):
    fake, url = server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    rendered = tmp_path / "run"
    assert run("render", corpus, "--style", "readbench", "--render", "context", "--ppi", "48",
               "--out", rendered).exit_code == 0
    out = tmp_path / "eval"
    result = run("eval", rendered, "--model", "reader", "--base-url", url, "--out", out,
                 "--modality", "image,text,text-budget", "--tokenizer", "tiktoken:o200k_base",
                 "--ratio-model", "qwen2.5-vl", "--budget-cut", cut)
    assert result.exit_code == 0, result.output
    tokenizer = load_tokenizer("tiktoken:o200k_base")
    rule = token_rule("qwen2.5-vl")
    sent = {}
    for logged in fake.log:
        content = logged.body["messages"][-1]["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if not any(p.get("type") == "image_url" for p in parts):
            text = " ".join(p.get("text", "") for p in parts)
            sent.setdefault(text.split("code word for file ")[-1].split("?")[0], []).append(text)
    rows = {row["id"]: row for row in JsonlLog(rendered / "manifest.jsonl").read()}
    scores = {(r["id"], r["condition"]): r["score"]
              for r in JsonlLog(out / "responses.jsonl").read()}
    kept_somewhere = 0
    for item_id, row in rows.items():
        index = int(item_id[-2:])
        budget = image_tokens(rule, [{"width": e["width"], "height": e["height"]}
                                     for e in row["images"]])
        whole, cut_prompt = sorted(sent[str(index)], key=len, reverse=True)
        assert whole == row["text_prompt"]
        # the cut keeps the question whole and the context within the budget
        assert row["question"] in cut_prompt and cut_prompt != whole
        kept = cut_prompt.split("Document:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        assert budget - 8 <= tokenizer.count(kept) <= budget, (item_id, budget)
        assert kept.startswith(row["context"][:40]) == (cut in ("head", "ends"))
        assert kept.endswith(row["context"][-40:]) == (cut in ("tail", "ends"))
        # each score is the server's known function of what was sent
        assert scores[(item_id, "text-budget")] == float(needed(index) in cut_prompt)
        assert scores[(item_id, "text")] == 1.0 and scores[(item_id, "image")] == 1.0
        kept_somewhere += needed(index) in cut_prompt
    results = json.loads((out / "results.json").read_text())
    overall = results["overall"]
    assert overall["text-budget"]["score"] == 100 * kept_somewhere / len(rows)
    assert 0 < kept_somewhere < len(rows)
    assert overall["budget_delta"] == 100 - overall["text-budget"]["score"]
    record = results["text_budget"]
    assert record["model"] == "qwen2.5-vl" and record["cut"] == cut
    assert record["cut_items"] == len(rows) and record["tokenizer"]["name"] == \
        "tiktoken:o200k_base"


def test_a_text_budget_without_a_tokenizer_or_model_is_one_line(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    rendered = tmp_path / "run"
    assert run("render", corpus, "--limit", "1", "--out", rendered).exit_code == 0
    for extra, said in [([], "--modality text-budget cuts the text with a tokenizer: give "
                             "--tokenizer"),
                        (["--tokenizer", "tiktoken:o200k_base"],
                         "--modality text-budget: give --ratio-model")]:
        result = run("eval", rendered, "--model", "reader", "--base-url",
                     "http://127.0.0.1:9/v1", "--modality", "image,text-budget", "--dry-run",
                     *extra)
        assert result.exit_code == 2 and said in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
