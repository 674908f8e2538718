"""``render niah``: haystacks of the lengths asked (in a tokenizer's tokens or in words), needles
at the depths asked, RULER's kinds, and ``eval``'s accuracy by length × depth against a real
HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mmconvert.corpora import LoadReport, LoadRequest, resolve
from mmconvert.corpora.niah import NiahOptions, sentences
from mmconvert.manifest import JsonlLog
from tests.conftest import FIXTURES
from tests.test_cli import run

TIKTOKEN = "tiktoken:o200k_base"


def items(seed: int = 0, source: Path | None = None, **options):
    report = LoadReport()
    request = LoadRequest(seed=seed, source=source, options=NiahOptions(**options))
    return resolve("niah").load(request, report), report


def test_lengths_and_depths_are_reached_in_words():
    made, _ = items(lengths=["1k", "4k"], depths=[0, 25, 50, 75, 100])
    assert len(made) == 10
    for item in made:
        niah = item.metadata["niah"]
        reached = len(item.context.split())
        assert reached == niah["length_reached"] <= niah["length_target"]
        assert niah["length_target"] - reached < 20  # within a sentence of the target
        (needle,) = niah["needles"]
        assert item.context[needle["offset"]:].startswith(needle["text"])
        before = len(item.context[:needle["offset"]].split())
        assert abs(100 * before / reached - niah["depth"]) <= 100 * 20 / reached
        assert item.answer == [needle["value"]] and needle["key"] in item.question


def test_lengths_in_tokens_of_a_tokenizer_and_the_needles_in_order(monkeypatch):
    pytest.importorskip("tiktoken")
    from mmconvert.tokens import load_tokenizer
    from tests.test_stats import tiktoken_files

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    count = load_tokenizer(TIKTOKEN).count
    made, _ = items(lengths=["2k"], depths=[10, 90], length_tokenizer=TIKTOKEN,
                    needle_kind="multi-query")
    for item in made:
        niah = item.metadata["niah"]
        assert count(item.context) == niah["length_reached"] <= 2048
        assert 2048 - niah["length_reached"] < 30
        assert niah["unit"] == "tokens" and niah["tokenizer"]["name"] == TIKTOKEN
        asked = [n for n in niah["needles"] if n["asked"]]
        assert len(niah["needles"]) == 4 and len(asked) == 2
        assert item.answer == [n["value"] for n in asked]
        for needle in niah["needles"]:  # every needle whole, where the row says
            assert item.context[needle["offset"]:].startswith(needle["text"])


def test_the_same_seed_gives_the_same_set_and_another_seed_other_needles():
    first, _ = items(seed=3, lengths=["1k"], depths=[50], needle_kind="multi-value")
    again, _ = items(seed=3, lengths=["1k"], depths=[50], needle_kind="multi-value")
    other, _ = items(seed=4, lengths=["1k"], depths=[50], needle_kind="multi-value")
    assert [(i.context, i.answer) for i in first] == [(i.context, i.answer) for i in again]
    assert first[0].answer != other[0].answer
    keys = {n["key"] for n in first[0].metadata["niah"]["needles"]}
    assert len(keys) == 1 and len(first[0].answer) == 4


def test_a_short_haystack_is_repeated_and_the_run_says_so(tmp_path):
    hay = tmp_path / "hay.txt"
    hay.write_text("A river runs by the old mill. The miller bakes bread at dawn. " * 20)
    made, report = items(lengths=["1k"], depths=[50], haystack=[str(hay)])
    assert made[0].metadata["niah"]["haystack_repeats"] > 1
    assert any("is repeated" in note for note in report.notes)
    assert "miller bakes bread" in made[0].context


def test_a_corpus_as_haystack_uses_its_items_text(tmp_path):
    made, _ = items(lengths=["1k"], depths=[0], haystack=["longbench"],
                    source=FIXTURES / "longbench")
    assert made[0].metadata["niah"]["haystack"] == ["longbench"]
    assert "Passage 1:" in made[0].context and "What is by the river?" in made[0].context
    assert made[0].metadata["niah"]["sentences"] == len(sentences(made[0].context)) + 3


@pytest.mark.parametrize(("args", "expected"), [
    (["--needle", "no placeholders here"], "a needle template needs {key} and {value}"),
    (["--lengths", "1k,lots"], "'lots' is not a length"),
    (["--depths", "0,120"], "depths are percentages from 0 to 100"),
    (["--lengths", "20", "--needle", "{key} " + "word " * 40 + "{value}"],
     "do not fit in a haystack of 20"),
])
def test_bad_options_are_one_line(tmp_path, args, expected):
    result = run("render", "niah", *args, "--out", tmp_path / "run")
    assert result.exit_code != 0 and expected in result.output
    assert "Traceback" not in result.output


def test_haystack_flags_do_not_apply_to_other_corpora(tmp_path):
    result = run("render", FIXTURES / "hub-mcq" / "arc.jsonl", "--lengths", "1k", "--out",
                 tmp_path / "run")
    assert result.exit_code != 0 and "does not apply to file" in result.output


@pytest.mark.slow
def test_eval_reports_accuracy_by_length_and_depth(tmp_path):
    pytest.importorskip("inspect_ai")
    from tests.evaluation.test_eval import text_of
    from tests.openai_server import FakeOpenAI

    out = tmp_path / "run"
    result = run("render", "niah", "--lengths", "256,1k", "--depths", "0,50,100", "--out", out)
    assert result.exit_code == 0, result.output
    rows = JsonlLog(out / "manifest.jsonl").read()
    gold = {r["question"]: r["answer"][0] for r in rows}
    depth = {r["question"]: r["metadata"]["niah"]["depth"] for r in rows}

    def answer(body):  # text: always right; image: right only at depth 0
        text, images = text_of(body)
        question = re.search(r"What is the special magic number for \S+ mentioned in the "
                             r"provided text\?", text).group(0)
        right = not images or depth[question] == 0
        return f"Answer: {gold[question] if right else '1234567'}"

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    try:
        result = run("eval", out, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--json")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    results = json.loads(result.output.split("\nresults in")[0])
    grid = results["grid"]
    assert (grid["rows"], grid["columns"]) == ("length", "depth")
    assert grid["row_values"] == ["256", "1k"] and grid["column_values"] == ["0", "50", "100"]
    for length in ("256", "1k"):
        assert [grid["cells"][length][d]["image"]["score"] for d in ("0", "50", "100")] == \
            [100.0, 0.0, 0.0]
        assert all(grid["cells"][length][d]["text"]["score"] == 100.0
                   for d in ("0", "50", "100"))
    assert grid["heat_maps"] == ["grid-image.png", "grid-text.png"]
    assert (tmp_path / "ev" / "grid-image.png").read_bytes()[:4] == b"\x89PNG"
    from mmconvert.evaluation.results import table

    shown = table(results).splitlines()
    at = shown.index("image: score by length and depth")
    assert shown[at + 2:at + 4] == [f"{'256':<18}{100.0:8.1f}{0.0:8.1f}{0.0:8.1f}",
                                    f"{'1k':<18}{100.0:8.1f}{0.0:8.1f}{0.0:8.1f}"]


@pytest.mark.slow
def test_a_dialogue_haystack_places_needles_between_turns_and_draws_a_dialogue(tmp_path):
    """MRCR's style: the haystack is the turns of dialogues of our own, each needle a turn of
    its own at the depth asked (to the turn), and the document renderer draws the dialogue
    with the needle turn in place and every character in its text layer."""
    talk = [{"role": "Caroline" if n % 2 == 0 else "Melanie",
             "content": f"Turn {n}: we talked about the garden and the {n}th tomato."}
            for n in range(30)]
    source = tmp_path / "dialogues.jsonl"
    source.write_text(json.dumps({"id": "d1", "question": "?", "context": talk}) + "\n")
    made, _ = items(lengths=["200"], depths=[0, 50, 100], haystack=[str(source)],
                    haystack_unit="turn")
    for item in made:
        niah = item.metadata["niah"]
        turns = item.metadata["turns"]
        (at,) = [i for i, t in enumerate(turns) if t["role"] == "user"]
        # between turns, at the boundary whose share of the haystack's words is nearest the
        # depth asked
        from itertools import accumulate

        from mmconvert.corpora.niah import boundary_at

        hay = [f"{t['role']}: {t['content']}" for i, t in enumerate(turns) if i != at]
        assert at == boundary_at(list(accumulate(len(h.split()) for h in hay)), niah["depth"])
        assert turns[at]["content"] == niah["needles"][0]["text"].removeprefix("user: ")
        assert item.context == "\n\n".join(f"{t['role']}: {t['content']}" for t in turns)
        offset = niah["needles"][0]["offset"]
        assert item.context[offset:].startswith(niah["needles"][0]["text"])
        assert len(item.context.split()) == niah["length_reached"] <= 200
        assert niah["haystack_unit"] == "turn"
    # a haystack with no dialogues: one line
    plain = tmp_path / "plain.txt"
    plain.write_text("Just sentences. Nothing else.")
    result = run("render", "niah", "--haystack", plain, "--haystack-unit", "turn",
                 "--out", tmp_path / "bad")
    assert result.exit_code != 0 and "needs --haystack dialogues" in result.output
    from mmconvert.renderers.document.browser import has_chromium

    if not has_chromium():
        return
    out = tmp_path / "drawn"
    result = run("render", "niah", "--haystack", source, "--haystack-unit", "turn",
                 "--lengths", "200", "--depths", "50", "--renderer", "document", "--out", out)
    assert result.exit_code == 0, result.output
    (row,) = JsonlLog(out / "manifest.jsonl").read()
    import pymupdf

    with pymupdf.open(out / row["pdf"]) as doc:
        text = "".join(page.get_text() for page in doc)
    needle = row["metadata"]["niah"]["needles"][0]
    assert text.index("Turn 0:") < text.index(needle["value"]) < text.rindex("Turn ")
    assert "user" in text and "Melanie" in text  # speaker labels
    assert run("qa", "check", out, "--checks", "text_layer").exit_code == 0
    (event,) = JsonlLog(out / "qa.jsonl").read()
    assert event["verdict"] == "accept"


def test_a_needle_sits_at_the_asked_share_of_the_tokens_not_of_the_sentences(tmp_path):
    """A haystack of sentences of very different lengths: the needle lands at the sentence
    boundary nearest the asked share of the words (RULER's depth, in tokens or words), the row
    records the depth asked and reached, the grid bins the reached one, and a needle that
    cannot come near its depth (few boundaries) is flagged."""
    long = " ".join(["word"] * 60) + "."
    text = " ".join([long] * 4 + ["Short one."] * 40)  # 240 words, then 80
    hay = tmp_path / "hay.txt"
    hay.write_text(text)
    made, _ = items(lengths=["400"], depths=[25, 50, 75], haystack=[str(hay)])
    for item in made:
        niah = item.metadata["niah"]
        share = 100 * niah["tokens_before_needle"] / niah["length_reached"]
        assert abs(share - niah["depth_reached"]) < 0.01
        # by sentences, 25 % of 44 was the 11th sentence: past all four long ones, 76 % of the
        # words; by words it is the second long sentence's end
        assert abs(niah["depth_reached"] - niah["depth"]) < 8, niah
        assert item.metadata["grid"]["depth"] == niah["depth"]
    tight, _ = items(lengths=["200"], depths=[40], haystack=[str(hay)])
    (item,) = tight
    assert item.metadata["niah"]["depth_off"] is True  # boundaries at 0, 30 %, 60 %, ...
    assert item.metadata["grid_flag"].startswith("the needle is at ")
