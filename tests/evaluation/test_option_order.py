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
    from tests.typed import typed

    assert option_order([typed({"id": "a", "answer": "B", "metadata": {}})], []) is None


def test_shuffle_options_takes_its_own_seed(tmp_path):
    """``--shuffle-options SEED`` draws each permutation from SEED and the item's id, apart
    from ``--seed``: the sample stays the run seed's while the options' order changes, and a
    bare ``--shuffle-options`` is ``--shuffle-options <--seed>``."""
    from mmconvert.corpora.choices import shuffle_options
    from mmconvert.items import Item

    def rendered(*flags):
        out = tmp_path / "-".join(flags)
        assert run("render", "mmlu-redux", "--source", SAMPLE, "--sample", "2", *flags,
                   "--out", out).exit_code == 0
        return (JsonlLog(out / "manifest.jsonl").read(),
                json.loads((out / "run.json").read_text())["config"]["shuffle_options"])

    plain, _ = rendered("--seed", "1")
    own, recorded = rendered("--seed", "1", "--shuffle-options", "5")
    bare, bare_recorded = rendered("--seed", "5", "--shuffle-options")
    assert (recorded, bare_recorded) == (5, True)
    assert [row["id"] for row in own] == [row["id"] for row in plain]  # --seed's sample
    for row in own:
        original = Item(id=row["id"], corpus="mmlu-redux", subset=row["subset"], split="test",
                        question=row["question"],
                        options=row["metadata"]["original_options"],
                        answer=row["metadata"]["original_answer"])
        drawn = shuffle_options(original, 5)
        assert (row["options"], row["answer"]) == (drawn.options, drawn.answer)
    same = {row["id"]: row["options"] for row in bare}
    assert all(same[row["id"]] == row["options"] for row in own if row["id"] in same)
    assert any(row["options"] != row["metadata"]["original_options"] for row in own)


@pytest.mark.parametrize("value", ["-1", "x"])
def test_a_bad_shuffle_seed_is_one_line(value, tmp_path):
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--shuffle-options", value,
                 "--out", tmp_path / "unused")
    assert result.exit_code == 2 and f"'{value}'" in result.output
    assert not (tmp_path / "unused").exists()


@pytest.mark.parametrize("value", ["-2", "'seven'", "1.5"])
def test_a_bad_shuffle_seed_in_a_config_is_one_line(value, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"shuffle_options: {value}\n")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--config", config,
                 "--out", tmp_path / "unused")
    assert result.exit_code != 0
    line, = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert line.startswith(f"Error: --config {config}: shuffle_options: expected true, false "
                           "or a seed")
