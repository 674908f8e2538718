"""``mmconvert curve``: a model's accuracy against vision tokens, from one command, against a
real OpenAI-compatible server on 127.0.0.1 whose accuracy is a known function: an image is
read right when it has PIXELS_PER_CHARACTER or more, a text when the sentence the answer needs
is whole in it. Every point's image score and text baseline equal that function; the budgets
are met exactly; the curve names its rule and the date it was checked."""

from __future__ import annotations

import json

import pytest

from mmconvert.vision_tokens import RULE_SOURCES
from tests.evaluation.test_frontier import codeword_items, known_reader, legible
from tests.evaluation.test_text_budget import needed
from tests.openai_server import FakeOpenAI
from tests.test_cli import run
from tests.test_stats import tiktoken_files
from tests.typed import typed_rows

pytest.importorskip("inspect_ai")


@pytest.mark.slow
def test_a_curve_scores_each_budget_by_known_functions_and_meets_it(tmp_path, monkeypatch):
    from inspect_ai.log import read_eval_log

    items = codeword_items(tmp_path / "items.jsonl", 6, 12, (1, 6, 11))
    out = tmp_path / "curve"
    fake = FakeOpenAI(answer=known_reader(out), models=("reader", "reader-2"))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    args = ["curve", items, "--model", "reader,reader-2", "--base-url", url, "--tokenizer",
            "tiktoken:o200k_base", "--ratio-model", "qwen2.5-vl,qwen3-vl", "--budgets",
            "128,256,1024", "--recipe", "readbench", "--out", out]
    try:
        result = run(*args)
        assert result.exit_code == 0, result.output
        sent = len(fake.requests("chat"))
        again = run(*args)  # resumed: nothing drawn, nothing sent, the same curves
        assert again.exit_code == 0 and len(fake.requests("chat")) == sent
    finally:
        fake.stop()
    found = json.loads((out / "curve.json").read_text())
    assert [(c["model"], c["rule"]["name"]) for c in found["curves"]] == [
        ("reader", "qwen2.5-vl"), ("reader-2", "qwen3-vl")]
    for curve, key in zip(found["curves"], ("qwen2-vl", "qwen3-vl"), strict=True):
        assert curve["rule"] == {"name": curve["rule"]["name"],
                                 "source": RULE_SOURCES[key][0], "checked": RULE_SOURCES[key][1]}
        assert [p["name"] for p in curve["points"]] == ["budget-128", "budget-256",
                                                        "budget-1024"]
        for point in curve["points"]:
            budget = point["target"]["vision_budget"]
            drawn = typed_rows(out / point["run"])
            assert [r["target"]["vision_tokens"] for r in drawn] == [budget] * len(drawn)
            assert point["exact"] == len(drawn) and point["vision_tokens"] == budget
            assert {r["target"]["model"] for r in drawn} == {curve["rule"]["name"]}
            right = [legible(r, sum(i["width"] * i["height"] for i in r["images"]))
                     for r in drawn]
            assert point["accuracy"] == pytest.approx(100 * sum(right) / len(right), abs=1e-3)
            # the last evaluation's log (the resumed one answered from the cache)
            log = read_eval_log(str(sorted((out / "evals" / curve["model"] / point["name"] /
                                            "logs").glob("*text-budget*.eval"))[-1]))
            kept = [needed(int(s.id[-2:])) in " ".join(c.text for c in s.input[-1].content
                                                      if getattr(c, "text", None))
                    for s in log.samples]
            assert point["text_baseline"] == pytest.approx(100 * sum(kept) / len(kept),
                                                           abs=1e-3)
        accuracy = [p["accuracy"] for p in curve["points"]]
        baseline = [p["text_baseline"] for p in curve["points"]]
        assert accuracy == sorted(accuracy) and baseline == sorted(baseline)
        assert baseline[0] < baseline[-1] and curve["text"] == 100.0
    assert (out / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert "vision tokens by qwen2.5-vl's rule (checked 2026-11-24)" in result.output
    assert "reader-2 on " in result.output and "vision tokens by qwen3-vl's rule" in result.output


def test_bad_curve_options_are_one_line(tmp_path):
    for extra, said in [
        (["--budgets", "64", "--ratios", "2"], "give --budgets or --ratios, not both"),
        (["--budgets", "0"], "budgets are whole vision tokens over 0"),
        (["--ratio-model", "qwen2.5vl"], "did you mean 'qwen2.5-vl'?"),
        (["--model", "a,b,c", "--ratio-model", "qwen2.5-vl,glm-4.1v"],
         "--ratio-model: 2 rules for 3 models; give one for all or one per model"),
        # a curve of no score: it rendered and asked, then said "curves in curve.json"
        (["--modality", "text"],
         "--modality: each point's figure is its image condition's score; give image among"),
        # a probe asks its own condition: the conditions given were left unasked, silently
        (["--probe", "transcribe", "--modality", "image,text"], "give --modality or --probe"),
    ]:
        args = ["curve", "mmlu-redux", "--model", "m", "--tokenizer", "t.json",
                "--ratio-model", "qwen2.5-vl", "--out", tmp_path / "c", *extra]
        result = run(*args)
        assert result.exit_code == 2 and said in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_vtcbenchs_two_modes_are_a_recipe_with_or_without_a_size_per_model():
    from mmconvert.evaluation.curve import CurveOptions, point_config, points_of

    fixed = CurveOptions(model="m", tokenizer="t.json", ratio_model="qwen2.5-vl",
                         recipe="vtcbench")
    assert points_of(fixed) == [("fixed", None)]
    assert "target" not in point_config("c", fixed, None, "qwen2.5-vl").values  # its pages
    ratio = CurveOptions(model="m,n", tokenizer="t.json", ratio_model="qwen2.5-vl,glm-4.1v",
                         recipe="vtcbench", ratios=[2], move_width=False)
    assert ratio.pairs() == [("m", "qwen2.5-vl"), ("n", "glm-4.1v")]
    ((label, target),) = points_of(ratio)
    config = point_config("c", ratio, target, "glm-4.1v").values
    assert label == "ratio-2" and config["style"] == "vtcbench"
    assert config["target"] == {"target_ratio": 2, "tokenizer": "t.json",
                                "ratio_model": "glm-4.1v", "move_width": False}


KEY = "sk-test-never-written-0123456789"


def curve_args(items, models: str, url: str, budgets: str, out) -> list[str]:
    """``mmconvert curve``'s arguments for ``items`` in ReadBench's pages, for qwen2.5-vl's
    rule, against the endpoint at ``url``."""
    return [str(a) for a in ("curve", items, "--model", models, "--base-url", url,
                             "--tokenizer", "tiktoken:o200k_base", "--ratio-model",
                             "qwen2.5-vl", "--budgets", budgets, "--recipe", "readbench",
                             "--out", out)]


def readbench_curve(fake: FakeOpenAI, monkeypatch, items, models: str, budgets: str, out):
    """``mmconvert curve`` (``curve_args``) against ``fake``, started and stopped here."""
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    try:
        return run(*curve_args(items, models, url, budgets, out))
    finally:
        fake.stop()


@pytest.mark.slow
def test_a_curve_of_unparsed_replies_says_so_everywhere(tmp_path, monkeypatch):
    """Issue 53: replies with no answer line made every point 0.0 %, and only each point's
    results.json said they were unparsed. Now curve.json, the table and a warning say it; two
    models whose names make the same folder name keep their own folders."""
    items = codeword_items(tmp_path / "items.jsonl", 2, 4, (1,))
    out = tmp_path / "curve"
    fake = FakeOpenAI(answer=lambda body: "I think it is ZEPHYR000.", models=("org/m", "org_m"))
    result = readbench_curve(fake, monkeypatch, items, "org/m,org_m", "256", out)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "curve.json").read_text())
    for curve in found["curves"]:
        point = curve["points"][0]
        assert point["accuracy"] == 0.0
        assert point["unparsed_share"] == {"image": 100.0, "text": 100.0, "text-budget": 100.0}
    lines = result.output.splitlines()
    for model in ("org/m", "org_m"):
        assert (f"warning: {model} budget-256: 100.0 % of the image replies were unparsed "
                "(scored 0: no answer in a form the scorer reads; above 10 %)") in lines
    header = next(line for line in lines if line.startswith("point "))
    assert "unparsed" in header
    assert sorted(p.name for p in (out / "evals").iterdir()) == [
        "org_m", "org_m-" + __import__("hashlib").sha256(b"org/m").hexdigest()[:8]]


@pytest.mark.slow
def test_a_model_the_endpoint_does_not_list_stops_the_curve_before_anything_is_drawn(
        tmp_path, monkeypatch):
    """eval's own free check (GET /models), made once for every model before the first point
    is drawn: the curve drew its first point, and its second beside the first evaluation,
    before it said so."""
    items = codeword_items(tmp_path / "items.jsonl", 2, 12, (1,))
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    result = readbench_curve(fake, monkeypatch, items, "reader,readr", "128,256",
                             tmp_path / "c")
    assert result.exit_code != 0 and "readr" in result.output.strip().splitlines()[-1]
    assert not (tmp_path / "c" / "points").exists() and not fake.requests("chat")


@pytest.mark.slow
def test_a_failed_evaluation_ends_the_render_drawn_ahead_instead_of_waiting_for_it(tmp_path):
    """The next point is drawn in a process of its own while a point is evaluated. When that
    evaluation fails, the curve ends that render at once (a killed render resumes) and the
    command exits with why; before, the process waited at its exit for the whole of the next
    point's render (here a minute)."""
    import os
    import subprocess
    import sys
    import time

    items = codeword_items(tmp_path / "items.jsonl", 2, 12, (1,))
    driver = tmp_path / "driver.py"
    driver.write_text("""
import sys, time
from mmconvert.errors import MMConvertError
from mmconvert.evaluation import curve

drawn = curve.draw_point

def slow_second(point):  # runs in the render's process, forked after this patch
    if point[4].name.endswith("budget-256"):
        time.sleep(60)
    return drawn(point)

def endpoint_gone(*args, **kwargs):
    raise MMConvertError("the endpoint went away")

curve.draw_point, curve.evaluate = slow_second, endpoint_gone
from mmconvert.cli import main
main(sys.argv[1:])
""")
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    url = fake.start()
    env = {**os.environ, "OPENAI_API_KEY": KEY, "TIKTOKEN_CACHE_DIR": tiktoken_files()}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(driver),
             *curve_args(items, "reader", url, "128,256", tmp_path / "c"), "--no-progress"],
            capture_output=True, text=True, timeout=120, env=env)
    finally:
        fake.stop()
    seconds = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "Error: the endpoint went away", \
        (seconds, done.stderr)
    assert seconds < 30, seconds
    assert (tmp_path / "c" / "points" / "qwen2.5-vl-budget-128" / "manifest.jsonl").is_file()


@pytest.mark.slow
def test_a_curve_points_n_is_its_image_conditions_as_eval_counts_it(tmp_path, monkeypatch):
    """A point's n is the number of items its figure (the image condition's score) counts,
    as eval's results.json counts them, and as a frontier's point reads it: here one item's
    image request fails (a 500, no retry), so the image condition counts 3 items and the
    text condition, given first, 4. Before, the curve took the first condition in
    results.json's overall, which eval orders with the image's first."""
    items = codeword_items(tmp_path / "items.jsonl", 4, 12, (1,))
    out = tmp_path / "curve"
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    fake.script("shown in the image, then answer the question.\n\nQuestion: What is the code "
                "word for file 1?", *["500"] * 4, path="chat")
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    try:
        result = run(*curve_args(items, "reader", url, "256", out), "--modality", "text,image",
                     "--max-retries", 0)
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    (point,) = json.loads((out / "curve.json").read_text())["curves"][0]["points"]
    counted = json.loads((out / "evals" / "reader" / point["name"] / "results.json"
                          ).read_text())["overall"]
    assert (counted["image"]["n"], counted["text"]["n"]) == (3, 4)
    assert point["n"] == counted["image"]["n"] and point["accuracy"] == counted["image"]["score"]
