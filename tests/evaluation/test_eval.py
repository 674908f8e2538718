"""``mmconvert eval`` against a real OpenAI-compatible HTTP server on 127.0.0.1 that answers
deterministically: the right letter to a text request, "Answer: A" to an image request, so
every figure is known exactly. Never a paid API."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from mmconvert.manifest import JsonlLog
from tests.conftest import FIXTURES
from tests.openai_server import FakeOpenAI
from tests.test_cli import run

pytest.importorskip("inspect_ai")
SECRET = "sk-test-never-written-0123456789"


def rows(folder: Path) -> list[dict]:
    return JsonlLog(folder / "manifest.jsonl").read()


@pytest.fixture
def demo(sample_run) -> Path:
    return sample_run


def text_of(body: dict) -> tuple[str, bool]:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content, False
    images = any(part.get("type") == "image_url" for part in content)
    return " ".join(part.get("text", "") for part in content), images


@pytest.fixture
def server(demo):
    key = {row["text_prompt"]: row["answer"] for row in rows(demo)}

    def answer(body):
        text, images = text_of(body)
        return "Let me look. Answer: A" if images else f"Step by step... Answer: {key[text]}"

    fake = FakeOpenAI(answer=answer, models=("reader-1", "reader-2"))
    url = fake.start()
    yield fake, url
    fake.stop()


def expected_image_score(demo: Path) -> float:
    answers = [row["answer"] for row in rows(demo)]
    return 100 * answers.count("A") / len(answers)


@pytest.mark.slow
def test_eval_compares_images_with_text_item_by_item(demo, server, tmp_path, monkeypatch):
    fake, url = server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "ev"
    result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", out)
    assert result.exit_code == 0, result.output
    items = rows(demo)
    n = len(items)
    results = json.loads((out / "results.json").read_text())
    overall = results["overall"]
    image = expected_image_score(demo)
    assert overall["image"] == {"score": pytest.approx(image, abs=1e-3), "n": n, "unparsed": 0,
                                "unparsed_share": 0.0, "errors": 0}
    assert overall["text"]["score"] == 100.0 and overall["paired_n"] == n
    assert overall["delta"] == pytest.approx(image - 100, abs=1e-3)
    low, high = overall["delta_ci95"]
    assert low <= overall["delta"] <= high < 0
    wrong = sum(1 for row in items if row["answer"] != "A")  # discordant pairs, all one way
    assert overall["mcnemar_p"] == pytest.approx(2 * 0.5 ** wrong)
    assert set(results["subsets"]) == {row["subset"] for row in items}
    assert set(results["pages"]) == {"1"}
    responses = JsonlLog(out / "responses.jsonl").read()
    assert len(responses) == 2 * n and {r["condition"] for r in responses} == {"image", "text"}
    first = responses[0]
    assert first["response"] == "Let me look. Answer: A" and first["answer"] == "A"
    assert len(fake.requests("chat")) == 2 * n
    # image requests carry the page images and the image prompt; text requests the twin alone
    bodies = [r.body for r in fake.requests("chat")]
    assert sum(text_of(b)[1] for b in bodies) == n
    assert list((out / "logs").glob("*.eval"))  # inspect view opens them
    assert "image" in result.output and "McNemar" in result.output
    # the key is read from the environment and written nowhere
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    # a re-run (as after a kill) is answered from the cache: no request sent
    again = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", out)
    assert again.exit_code == 0 and len(fake.requests("chat")) == 2 * n
    assert json.loads((out / "results.json").read_text())["overall"] == overall


@pytest.mark.slow
def test_retries_429_500_and_slow_answers_and_records_unparsed_ones(demo, server, tmp_path):
    fake, url = server
    items = rows(demo)
    fake.script(items[0]["text_prompt"][:60], "429:0", "500")
    fake.script(items[1]["text_prompt"][:60], "slow:1.5")
    broken = items[2]["text_prompt"][:60]
    original = fake.answer

    def answer(body):
        text, images = text_of(body)
        if broken in text and not images:
            return "I am not sure which one it is."
        return original(body)

    fake.answer = answer
    out = tmp_path / "ev"
    result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", out,
                 "--modality", "text")
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    text = results["overall"]["text"]
    assert text["n"] == len(items) and text["errors"] == 0 and text["unparsed"] == 1
    assert text["score"] == pytest.approx(100 * (len(items) - 1) / len(items), abs=1e-3)
    assert "delta" not in results["overall"]
    statuses = [r.status for r in fake.requests("chat")]
    assert statuses.count(429) == 1 and statuses.count(500) == 1
    unparsed = next(r for r in JsonlLog(out / "responses.jsonl").read() if not r["parsed"])
    assert unparsed["answer"] is None and unparsed["score"] == 0.0


def test_a_malformed_answer_is_recorded_and_the_evaluation_goes_on(demo, server, tmp_path):
    fake, url = server
    items = rows(demo)
    fake.script(items[0]["text_prompt"][:60], *["malformed"] * 20)
    out = tmp_path / "ev"
    result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", out,
                 "--modality", "text", "--max-retries", "1", "--timeout", "5")
    assert result.exit_code == 0, result.output
    text = json.loads((out / "results.json").read_text())["overall"]["text"]
    assert text["errors"] == 1 and text["n"] == len(items) - 1
    failed = next(r for r in JsonlLog(out / "responses.jsonl").read() if r.get("error"))
    assert failed["id"] == items[0]["id"] and failed["score"] is None


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_endpoint_key_and_model_problems_are_one_line_each(demo, tmp_path, monkeypatch):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = run("eval", demo, "--model", "m", "--base-url", url, "--out", tmp_path / "a")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot reach {url} (") and \
        result.output.count("\n") == 1
    fake = FakeOpenAI(models=("reader-1",), key="right-key")
    url = fake.start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
        result = run("eval", demo, "--model", "reader-1", "--base-url", url)
        assert result.exit_code == 2 and result.output == (
            f"Error: {url} rejected the API key in OPENAI_API_KEY (HTTP 401)\n")
        monkeypatch.setenv("OPENAI_API_KEY", "right-key")
        result = run("eval", demo, "--model", "reader-2", "--base-url", url)
        assert result.exit_code == 2 and result.output == (
            f"Error: {url} serves no model 'reader-2' (it serves reader-1); did you mean "
            "'reader-1'?\n")
        assert fake.requests("chat") == []
    finally:
        fake.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    result = run("eval", demo, "--model", "gpt-4o-mini", "--base-url",
                 "https://api.example.com/v1")
    assert result.exit_code == 2 and result.output.startswith(
        "Error: no API key: set OPENAI_API_KEY (the key is read from the environment only)")


def test_dry_run_and_budget_send_nothing(demo, tmp_path):
    n = len(rows(demo))
    result = run("eval", demo, "--model", "gpt-4o-mini", "--dry-run")
    assert result.exit_code == 0
    assert result.output.startswith(f"{n} item(s) x 2 condition(s) (image, text) = {2 * n} "
                                    "request(s); vision tokens: qwen2-vl ")
    assert "cost: $" in result.output and "nothing sent" in result.output
    result = run("eval", demo, "--model", "gpt-4o-mini", "--budget", "0.0001",
                 "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 3 and "over --budget $0.00; nothing was sent" in result.output
    result = run("eval", demo, "--model", "local-model", "--budget", "1",
                 "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 2 and "has no price for local-model" in result.output


def test_each_model_prices_images_by_its_own_rule_or_says_it_cannot(demo):
    """gpt-4o-mini bills an image at 2,833 + 5,667 a tile, not gpt-4o's 85 + 170: its images
    are priced by its own rule; a model the table gives no image rule has them left out of
    the estimate, said so, and --budget refused (never priced by another model's rule)."""
    from mmconvert.vision_tokens import openai_tiles

    shown = [image for row in rows(demo) for image in row["images"]]
    mini = sum(openai_tiles(i["width"], i["height"], 2833, 5667) for i in shown)
    tiles = (sum(openai_tiles(i["width"], i["height"]) for i in shown) - 85 * len(shown)) // 170
    assert mini == 2833 * len(shown) + 5667 * tiles  # the same tiles as gpt-4o's, dearer
    result = run("eval", demo, "--model", "gpt-4o-mini", "--dry-run")
    assert f"{mini:,} image tokens by gpt-4o-mini's own rule" in result.output
    # gpt-4.1-mini bills 32 px patches (at most 1,536) times 1.62, rounded up
    from mmconvert.vision_tokens import openai_patches

    patches = sum(-(-openai_patches(i["width"], i["height"]) * 162 // 100) for i in shown)
    result = run("eval", demo, "--model", "gpt-4.1-mini", "--dry-run")
    assert f"{patches:,} image tokens by gpt-4.1-mini's own rule" in result.output


def test_a_model_the_price_table_gives_no_image_rule_is_never_priced_by_another(
        demo, monkeypatch):
    from mmconvert.api import prices

    shipped = prices.PriceTable.load
    table = shipped()
    del table.models["gpt-4.1-nano"]["image_patches"]
    monkeypatch.setattr(prices.PriceTable, "load", classmethod(lambda cls, path=None: table))
    shown = [image for row in rows(demo) for image in row["images"]]
    result = run("eval", demo, "--model", "gpt-4.1-nano", "--dry-run")
    assert result.exit_code == 0
    assert (f"its {len(shown)} image(s) are NOT priced: the price table has no image rule "
            "for gpt-4.1-nano") in result.output
    result = run("eval", demo, "--model", "gpt-4.1-nano", "--budget", "5",
                 "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 2 and \
        "no image rule (image_tiles or image_patches) for gpt-4.1-nano" in result.output


def test_a_price_table_image_rule_of_the_wrong_shape_is_one_line(tmp_path):
    from mmconvert.api.prices import PriceTable
    from mmconvert.errors import UsageError

    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"m": {"per_million_tokens": {"input": 1},
                                                  "image_patches": {"multiplier": "x"}}}}))
    with pytest.raises(UsageError, match=r"models\.m\.image_patches: expected 'multiplier' > 0"):
        PriceTable.load(table)


def test_a_run_without_text_twins_says_how_to_make_one(demo, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    manifest = JsonlLog(copy / "manifest.jsonl")
    manifest.rewrite([{**row, "text_prompt": ""} for row in manifest.read()])
    result = run("eval", copy, "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 1 and result.output == (
        f"Error: {copy}: its rows have no text_prompt, the text-only twin the comparison "
        "needs; render the corpus again with this mmconvert (every renderer writes one)\n")
    result = run("eval", demo, "--model", "m", "--modality", "text-image",
                 "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 2 and "have no text-only image (only occlusions do)" in \
        result.output


@pytest.mark.slow
def test_sweeps_plot_and_compare_finds_the_shared_losses(demo, server, tmp_path):
    fake, url = server
    sweep = tmp_path / "sweep"
    # --ppi 92.9 is the base run's own PPI: that variant is the base, evaluated once
    assert run("sweep", demo, "--scale", "0.5", "--ppi", "92.9", "--out",
               sweep).exit_code == 0
    out = tmp_path / "ev-sweep"
    result = run("eval", sweep, "--model", "reader-1", "--base-url", url, "--out", out)
    assert result.exit_code == 0, result.output
    n = len(rows(demo))
    # the text twin is the same in both runs: its second pass comes from the cache
    assert len(fake.requests("chat")) == 3 * n
    record = json.loads((out / "sweep_results.json").read_text())
    assert [p["name"] for p in record["points"]] == ["base", "scale-0.5"]
    assert record["points"][0]["same_as"] == ["ppi-92.9"]
    assert "base = ppi-92.9" in result.output and result.output.count("ppi-92.9") == 1
    assert (out / "sweep-scale.png").stat().st_size > 5000
    assert record["points"][1]["image_ci95"][0] <= record["points"][1]["image"]
    second = tmp_path / "ev-2"
    assert run("eval", demo, "--model", "reader-2", "--base-url", url,
               "--out", second).exit_code == 0
    result = run("eval", "compare", out / "base", second, "--json")
    assert result.exit_code == 0, result.output
    compared = json.loads(result.output)
    lost = sorted(row["id"] for row in rows(demo) if row["answer"] != "A")
    assert [m["lost_in_images"] for m in compared["models"]] == [lost, lost]
    assert compared["mismatch"] == [{"a": "reader-1", "b": "reader-2", "both": len(lost),
                                     "either": len(lost), "jaccard": 1.0}]
    result = run("eval", "compare", second)
    assert result.exit_code == 2 and "two or more eval folders" in result.output
    # the same model evaluated twice: each row named by its folder too
    import shutil

    third = tmp_path / "again" / "ev-3"
    shutil.copytree(second, third)
    twice = run("eval", "compare", out / "base", second, third)
    assert twice.exit_code == 0, twice.output
    assert "reader-2 (ev-2)" in twice.output and "reader-2 (ev-3)" in twice.output
    # the sweep's plot holds the base run, at its scale of 1
    from mmconvert.evaluation.sweeps import axis_points, base_values

    bases = base_values(demo, record["points"])
    assert bases == {"scale": 1.0}
    points = axis_points(record["points"], "scale", bases["scale"])
    assert [(p["name"], p["value"]) for p in points] == [("scale-0.5", 0.5), ("base", 1.0)]


def test_occlusions_score_spans_with_three_conditions(tmp_path):
    occ = tmp_path / "occ"
    assert run("occlude", "captions", "--source", FIXTURES / "coco", "--limit", 2,
               "--out", occ).exit_code == 0
    # the prompts are the same for every item: an image request is answered with the spans of
    # all of them (each span finds its exact n-gram), a text request with a refusal
    spans = [span for row in rows(occ) for span in row["answer"]]

    def answer(body):
        return " ; ".join(spans) if text_of(body)[1] else "Sorry, I cannot tell."

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    try:
        result = run("eval", occ, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--modality", "image,text,text-image")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    overall = json.loads((tmp_path / "ev" / "results.json").read_text())["overall"]
    assert overall["image"]["score"] == 100.0 and overall["text-image"]["score"] == 100.0
    assert overall["text"]["score"] == 0.0 and overall["delta"] == 100.0
    assert overall["image"]["exact_match_spans"] == overall["image"]["jaccard_spans"] == 100.0
    assert overall["text"]["jaccard_spans"] == 0.0
    assert "mcnemar_p" in overall  # per-item exact match is 0 or 1 here


def test_free_form_answers_through_a_judge_model(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a-1", "question": "Who wrote Hamlet?", "options": [], '
                     '"answer": "Shakespeare"}\n'
                     '{"id": "a-2", "question": "What is the capital of France?", '
                     '"answer": "Paris"}\n')
    assert run("render", items, "--out", tmp_path / "run").exit_code == 0

    def answer(body):
        text, images = text_of(body)
        if text.startswith("You are grading"):
            reference = text.split("Reference answer:\n")[1].split("\n")[0]
            said = text.split("Model's answer:\n")[1]
            return "It matches. SCORE: 10" if reference in said else "SCORE: 2"
        return "I think it was Shakespeare." if "Hamlet" in text or images else "Lyon"

    fake = FakeOpenAI(answer=answer, models=("reader", "judge"))
    url = fake.start()
    try:
        result = run("eval", tmp_path / "run", "--model", "reader", "--judge-model", "judge",
                     "--base-url", url, "--out", tmp_path / "ev", "--json")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    results = json.loads(result.output.split("\nresults in")[0])
    assert results["judge"]["model"] == "judge"
    # image: both answered "Shakespeare" (10 and 2); text: Hamlet right, France "Lyon" (2)
    assert results["overall"]["image"]["score"] == pytest.approx(60.0)
    assert results["overall"]["text"]["score"] == pytest.approx(60.0)
    judged = JsonlLog(tmp_path / "ev" / "responses.jsonl").read()
    assert all("judge" in r["extra"] for r in judged)


def test_items_without_a_gold_answer_are_unscored_never_zero(tmp_path):
    """A file in ARC's schema read as the generic format once came out with no options and no
    answer, and eval scored it 0 % with exit 0: such items are not sent, not in n, and named."""
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a-1", "question": "Who wrote Hamlet?", "answer": "Shakespeare"}\n'
                     '{"id": "a-2", "question": "Which gas do plants take in?"}\n'
                     '{"id": "a-3", "question": "Name a prime", "answer": []}\n')
    made = run("render", items, "--out", tmp_path / "run")
    assert made.exit_code == 0, made.output
    assert "2 item(s) have no gold answer (eval reports them unscored)" in made.output
    fake = FakeOpenAI(answer=lambda body: "Answer: Shakespeare", models=("reader",))
    url = fake.start()
    try:
        dry = run("eval", tmp_path / "run", "--model", "reader", "--base-url", url,
                  "--dry-run")
        assert "1 item(s) x 2 condition(s)" in dry.output
        assert "2 item(s) have no gold answer and are left out (unscored)" in dry.output
        result = run("eval", tmp_path / "run", "--model", "reader", "--base-url", url,
                     "--out", tmp_path / "ev")
        assert result.exit_code == 0, result.output
        assert len(fake.requests("chat")) == 2  # one item, two conditions
    finally:
        fake.stop()
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert results["overall"]["image"]["n"] == 1 and results["overall"]["image"]["score"] == 100
    assert results["unscored"] == {"n": 2, "items": [
        {"id": "a-2", "reason": "no gold answer"}, {"id": "a-3", "reason": "no gold answer"}]}
    assert "2 item(s) unscored: no gold answer" in result.output
    # nothing at all to score is an error, not a 0 %
    only = tmp_path / "none.jsonl"
    only.write_text('{"id": "b-1", "question": "Which gas do plants take in?"}\n')
    assert run("render", only, "--out", tmp_path / "run2").exit_code == 0
    none = run("eval", tmp_path / "run2", "--model", "reader", "--base-url", url, "--dry-run")
    assert none.exit_code == 1
    assert "nothing to evaluate: none of its 1 selected item(s) has a gold answer" in none.output


@pytest.mark.slow
def test_a_killed_evaluation_re_runs_without_repeating_an_answered_request(demo, server,
                                                                           tmp_path):
    """A real process killed (SIGKILL, its whole group) while three requests hang; the re-run
    sends exactly the requests that were not answered before the kill."""
    import os
    import signal
    import subprocess
    import sys
    import time

    fake, url = server
    items = rows(demo)
    # the option lines are in the text twins only: three text requests hang
    hanging = [f"A. {row['options'][0]}"[:40] for row in items[:3]]
    for match in hanging:
        fake.script(match, "hang")
    out = tmp_path / "ev"
    command = [sys.executable, "-m", "mmconvert", "eval", str(demo), "--model", "reader-1",
               "--base-url", url, "--out", str(out), "--concurrency", "16"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 60
    total = 2 * len(items)
    while time.monotonic() < deadline:
        done = [r for r in fake.requests("chat") if r.status == 200]
        if len(done) >= total - len(hanging):
            break
        time.sleep(0.1)
    time.sleep(1.0)  # the client stores each answer in the cache as it arrives
    answered = {json.dumps(r.body, sort_keys=True) for r in fake.requests("chat")
                if r.status == 200}
    assert len(answered) == total - len(hanging)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    fake.release.set()  # let the hanging server threads go
    before = len(fake.requests("chat"))
    result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", out)
    assert result.exit_code == 0, result.output
    again = [json.dumps(r.body, sort_keys=True) for r in fake.requests("chat")[before:]]
    assert len(again) == len(hanging) and not set(again) & answered
    assert json.loads((out / "results.json").read_text())["overall"]["text"]["n"] == len(items)


def test_an_evaluation_whose_every_request_fails_is_an_error(demo, server, tmp_path):
    fake, url = server
    fake.script("", *["500"] * 100)
    result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out",
                 tmp_path / "ev", "--modality", "text", "--max-retries", "0", "--limit", "2")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: every request to {url} failed (the first: ")
    assert result.output.count("\n") == 1


def test_eval_of_a_sharded_run_sends_the_same_images(files_and_shards, server, tmp_path,
                                                     monkeypatch):
    fake, url = server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    plain, sharded = files_and_shards  # the session's render both ways, read only
    assert not (sharded / "images").exists()
    sent = {}
    for name, run_dir in (("files", plain), ("shards", sharded)):
        before = len(fake.requests("chat"))
        result = run("eval", run_dir, "--model", "reader-2", "--base-url", url, "--out",
                     tmp_path / f"ev-{name}", "--modality", "image")
        assert result.exit_code == 0, result.output
        sent[name] = sorted(json.dumps(r.body["messages"], sort_keys=True)
                            for r in fake.requests("chat")[before:])
    assert sent["shards"] == sent["files"] and len(sent["files"]) == len(rows(plain))


def test_a_redirect_to_another_origin_never_carries_the_key(demo, tmp_path, monkeypatch):
    thief = FakeOpenAI(models=("reader",))
    elsewhere = thief.start()
    fake = FakeOpenAI(models=("reader",), models_redirect=elsewhere.replace(
        "127.0.0.1", "localhost") + "/models")
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    try:
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev")
    finally:
        fake.stop()
        thief.stop()
    assert result.exit_code == 1, result.output
    assert "redirects to another origin" in result.output and SECRET not in result.output
    assert thief.authorizations == [] and not fake.requests("chat")


@pytest.mark.slow
def test_a_chat_request_redirected_to_another_origin_is_refused_and_never_sent(
        demo, tmp_path, monkeypatch):
    """A 307 from /chat/completions to another server: nothing reaches it (the prompts and
    images stay), and the evaluation stops in one line, scoring nothing of that server."""
    thief = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    elsewhere = thief.start()
    fake = FakeOpenAI(models=("reader",), chat_redirect=elsewhere.replace(
        "127.0.0.1", "localhost") + "/chat/completions")
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    try:
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--limit", 2, "--max-retries", 1)
    finally:
        fake.stop()
        thief.stop()
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1, result.output
    assert "redirected to another origin" in result.output and "nothing was sent" in \
        result.output
    assert thief.requests() == [] and thief.authorizations == []
    assert not (tmp_path / "ev" / "results.json").exists()


@pytest.mark.slow
def test_a_slow_loris_models_listing_is_cut_off_at_the_timeout(demo, tmp_path):
    import time

    fake = FakeOpenAI(models_trickle=1.0)
    url = fake.start()
    started = time.monotonic()
    try:
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--timeout", 3)
    finally:
        fake.stop()
    assert result.exit_code == 1, result.output
    assert "no complete answer within 3 s (--timeout)" in result.output
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("retries", [0, 1])
@pytest.mark.slow
def test_one_layer_retries_as_many_times_as_the_flag_says(demo, tmp_path, retries):
    first = rows(demo)[0]["text_prompt"].split("\n")[0]
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    fake.script(first, *["500"] * 10, path="chat")
    url = fake.start()
    try:
        run("eval", demo, "--model", "reader", "--base-url", url, "--out", tmp_path / "ev",
            "--max-retries", retries, "--modality", "text", "--limit", 1)
    finally:
        fake.stop()
    assert len(fake.requests("chat")) == retries + 1


@pytest.mark.slow
def test_a_request_that_never_answers_is_bounded_by_timeout(demo, tmp_path):
    import time

    first = rows(demo)[0]["text_prompt"].split("\n")[0]
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    fake.script(first, "hang", path="chat")
    url = fake.start()
    started = time.monotonic()
    try:
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--timeout", 2, "--max-retries", 0, "--modality",
                     "text", "--limit", 1)
    finally:
        fake.stop()
    assert time.monotonic() - started < 30
    assert result.exit_code == 1 and "no complete answer within --timeout 2 s" in \
        result.output, result.output


@pytest.mark.slow
def test_a_huge_reply_is_not_kept(demo, tmp_path):
    """A server that answers 6 MiB fails that request: nothing of it is kept, in
    responses.jsonl, inspect's cache or its logs."""
    first = rows(demo)[0]["text_prompt"]
    fake = FakeOpenAI(answer=lambda body: ("x" * (6 << 20)) if text_of(body)[0] == first
                      else "Answer: A", models=("reader",))
    url = fake.start()
    out = tmp_path / "ev"
    try:
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out", out,
                     "--modality", "text", "--max-retries", 0)
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    responses = JsonlLog(out / "responses.jsonl").read()
    failed = [r for r in responses if r.get("error")]
    assert len(failed) == 1 and "over 4 MiB" in failed[0]["error"], failed
    kept = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert kept < 2 << 20, kept


@pytest.mark.parametrize("body", [b'["reader"]', b'{"data": 5}', b'{"data": [1, "x"]}', b"\xff"])
def test_a_models_answer_of_any_shape_is_no_traceback(demo, tmp_path, body):
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",), models_body=body)
    url = fake.start()
    try:
        result = run("eval", demo, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev", "--modality", "text", "--limit", 1)
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output  # the model is checked by the first request
    assert len(fake.requests("chat")) == 1


@pytest.mark.slow
def test_results_read_accuracy_against_compression(demo, server, tmp_path, monkeypatch):
    """--tokenizer and --ratio-model: results.json holds the evaluated items' vision tokens,
    text tokens and ratio per model, the same figures mmconvert stats gives for the run."""
    from tests.test_stats import minilm_folder

    fake, url = server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "ev"
    result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", out,
                 "--tokenizer", minilm_folder(), "--ratio-model", "qwen2.5-vl",
                 "--ratio-model", "gpt-4o")
    assert result.exit_code == 0, result.output
    compression = json.loads((out / "results.json").read_text())["compression"]
    assert list(compression["ratio"]) == ["qwen2.5-vl", "gpt-4o"]
    stats = run("stats", demo, "--json", "--no-plots", "--tokenizer", minilm_folder(),
                "--models", "qwen2.5-vl,gpt-4o")
    figures = json.loads(stats.output[stats.output.index("{"):])
    assert compression["ratio"] == figures["ratio"]
    assert compression["vision_tokens_per_item"] == figures["vision_tokens_per_item"]
    assert compression["text_tokens_per_item"] == figures["text_tokens_per_item"]
    # the image score by ratio: four bins of the items by their ratio, each bin's score the
    # share of its items the server (which always answers A) got right
    gold = {row["id"]: row["answer"] for row in rows(demo)}
    ratios = sorted((i["ratio"]["qwen2.5-vl"], gold[i["id"]] == "A")
                    for i in figures["per_item"])
    bins = compression["image_score_by_ratio"]["qwen2.5-vl"]
    assert sum(b["n"] for b in bins) == len(ratios) and len(bins) == 4
    start = 0
    for b in bins:
        part = ratios[start:start + b["n"]]
        assert b["ratio"] == [part[0][0], part[-1][0]]
        assert b["score"] == pytest.approx(100 * sum(r for _, r in part) / len(part))
        start += b["n"]
    bad = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out", tmp_path / "b",
              "--ratio-model", "qwen9")
    assert bad.exit_code == 2 and "no vision-token rule for model 'qwen9'" in bad.output
    sent = len(fake.requests("chat"))
    missing = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out",
                  tmp_path / "c", "--tokenizer", tmp_path / "none.json")
    assert missing.exit_code == 2 and "no such file or folder" in missing.output
    assert len(fake.requests("chat")) == sent  # nothing sent


# the 16 free-form replies: 5 wrong ones that SQuAD's rule scored 1.0, 3 right ones it
# scored 0, and 8 it already scored right; (gold, reply, right)
NUMBER_REPLIES = [
    ("-15", "15", False), ("-7", "7", False), ("4.2", "42", False), ("0.5", "05", False),
    ("1/2", "12", False), ("1234", "$1,234.00", True), ("3", "3 apples", True),
    ("120 miles", "120", True), ("-15", "-15", True), ("4.2", "4.20", True),
    ("0.5", "1/2", True), ("1/2", "0.5", True), ("1234", "1,235", False),
    ("3", "three", False), ("Paris", "paris.", True), ("Paris", "Lyon", False)]


def test_numbers_are_scored_as_numbers_and_each_row_names_its_metric(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"n-{i:02d}", "question": f"Question {i}?",
                                         "answer": gold}) + "\n"
                             for i, (gold, _, _) in enumerate(NUMBER_REPLIES)) +
                     json.dumps({"id": "n-16", "question": "Question 16?", "answer": "Paris",
                                 "metric": "exact"}) + "\n")
    assert run("render", items, "--out", tmp_path / "run").exit_code == 0
    replies = {f"Question {i}?": reply for i, (_, reply, _) in enumerate(NUMBER_REPLIES)}
    replies["Question 16?"] = "paris"  # exact: case counts

    def answer(body):
        text, _ = text_of(body)
        return "Let me see.\nAnswer: " + next(r for q, r in replies.items() if q in text)

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    try:
        result = run("eval", tmp_path / "run", "--model", "reader", "--base-url", url,
                     "--modality", "text", "--out", tmp_path / "ev")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    scored = {r["id"]: r for r in JsonlLog(tmp_path / "ev" / "responses.jsonl").read()}
    for i, (gold, reply, right) in enumerate(NUMBER_REPLIES):
        row = scored[f"n-{i:02d}"]
        assert row["score"] == float(right), (gold, reply, row)
        assert row["extra"]["metric"] == ("exact_match" if gold == "Paris" else "numeric")
    assert scored["n-16"]["score"] == 0.0 and scored["n-16"]["extra"]["metric"] == "exact"
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert results["scoring"]["metrics"] == {
        "exact": 1, "exact_match (SQuAD normalisation; f1 beside it)": 2, "numeric": 14}


@pytest.mark.parametrize("row, message", [
    ({"metric": "numbers"}, "items.jsonl line 1: field metric: unknown metric 'numbers' "
                            "(known: numeric, exact_match, f1, exact, any-of)"),
    ({"metric": "numeric", "answer": "Paris"},
     "items.jsonl line 1: field answer: answer 'Paris' is not a number, and the metric is "
     "numeric"),
    ({"metric": "numeric", "options": ["1", "2"], "answer": "A"},
     "items.jsonl line 1: field metric: metric 'numeric' scores a free-form answer; this item "
     "has 2 options, scored by their letter")])
def test_a_bad_metric_is_one_line_naming_the_row(tmp_path, row, message):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "question": "Q?", "answer": "3", **row}) + "\n")
    result = run("render", items, "--out", tmp_path / "run")
    assert result.exit_code != 0
    assert message in result.output, result.output


@pytest.mark.slow
def test_a_gzip_reply_is_read_and_a_gzip_bomb_is_named(demo, tmp_path, monkeypatch):
    """The eval client capped a reply's bytes on the wire: 1 MiB of gzip that inflates to
    1 GiB was inflated whole by httpx, and the error named a validation failure."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    scores = {}
    for action in ("ok", "gzip", "gzipbomb"):
        fake = FakeOpenAI(answer=lambda body: "Answer: B", models=("reader-1",))
        fake.script("", *[action] * 10, path="chat")
        url = fake.start()
        try:
            result = run("eval", demo, "--model", "reader-1", "--base-url", url, "--out",
                         tmp_path / action, "--modality", "image", "--limit", 2,
                         "--max-retries", 0)
        finally:
            fake.stop()
        if action == "gzipbomb":
            assert result.exit_code == 1
            assert ("failed (the first: ReplyTooLarge(\"the reply's gzip body inflates past "
                    "4 MiB (a compression bomb); not read further\"))") in result.output
        else:
            assert result.exit_code == 0, result.output
            scores[action] = json.loads((tmp_path / action / "results.json").read_text()
                                        )["overall"]["image"]
    assert scores["gzip"] == scores["ok"] and scores["ok"]["unparsed"] == 0
