"""``mmconvert generate`` end to end against a real HTTP server on 127.0.0.1 that speaks the
OpenAI API (tests/openai_server.py): the openai client is used as it is, nothing is mocked."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.openai_server import FakeOpenAI
from tests.test_cli import run

KEY = "sk-test-do-not-write-me-0123456789"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake():
    server = FakeOpenAI(key=KEY)
    server.url = server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def api_env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MMCONVERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def write_items(path: Path, count: int = 6, long_every: int = 0) -> Path:
    """Items whose question carries a unique tag ``Q-000N`` for the server's scripts."""
    with path.open("w") as handle:
        for n in range(count):
            context = f"Passage {n}: " + ("the committee met and argued at length. " * (
                40 if long_every and n % long_every == 0 else 3))
            handle.write(json.dumps({
                "id": f"item-{n:04d}", "context": context.strip(),
                "question": f"Q-{n:04d}: which statement follows?",
                "options": [f"Option {c} of {n}" for c in "ABCD"], "answer": "B"}) + "\n")
    return path


def generate(fake, items, out, *args):
    return run("generate", items, "--out", out, "--image-base-url", fake.url,
               "--chat-base-url", fake.url, "--no-progress", *args)


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]


def skipped(folder: Path) -> list[dict]:
    path = folder / "skipped.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def image_requests(fake, tag: str | None = None) -> list:
    return [r for r in fake.requests("images") if tag is None or tag in r.prompt]


def test_generate_writes_images_rows_and_spend(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 6, long_every=3)
    out = tmp_path / "run"
    result = generate(fake, items, out, "--concurrency", 4)
    assert result.exit_code == 0, result.output
    assert f"6 item(s) rendered (6 image(s)) into {out}" in result.output
    manifest = rows(out)
    assert [r["id"] for r in manifest] == [f"item-{n:04d}" for n in range(6)]
    layouts = set()
    for row in manifest:
        generation, calls = row["generation"], row["provenance"]["calls"]
        layouts.add(generation["layout"])
        assert generation["layout_from"] == "chat" and "layout" in calls
        long = row["id"] in ("item-0000", "item-0003")
        assert generation["size"] == ("1536x1024" if long else "1024x1536")
        assert generation["template"] == f"generate_{generation['layout']}_{generation['font']}"
        if generation["layout"] == "background":
            assert generation["depiction"] in generation["image_prompt"]
            assert "depiction" in calls
        else:
            assert generation["depiction"] is None and "depiction" not in calls
        # the item's text goes into the image prompt whole
        for part in (row["context"], row["question"], *row["options"]):
            assert part in generation["image_prompt"]
        assert row["text_in_image"].endswith("D. Option D of " + row["id"][-1])
        (image,) = row["images"]
        data = (out / image["path"]).read_bytes()
        assert image["role"] == "generated" and hashlib.sha256(data).hexdigest() == image["sha256"]
        with Image.open(io.BytesIO(data)) as jpeg:
            assert jpeg.format == "JPEG" and max(jpeg.size) == 1024
            assert jpeg.size == (image["width"], image["height"])
        original = out / row["original"]["path"]
        assert hashlib.sha256(original.read_bytes()).hexdigest() == row["original"]["sha256"]
        assert (row["original"]["width"], row["original"]["height"]) == tuple(
            int(v) for v in generation["size"].split("x"))
        assert calls["image"]["response_id"].startswith("req_")
        assert calls["image"]["cost"]["source"] == "usage"
        assert row["provenance"]["cost_usd"] == pytest.approx(
            sum(c["cost"]["usd"] for c in calls.values()), abs=1e-6)
        assert "image" in row["prompt"] and row["question"] in row["text_prompt"]
    assert layouts == {"background", "interleaved"}
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete"
    spend = info["spend"]
    assert spend["total_usd"] == pytest.approx(
        sum(r["provenance"]["cost_usd"] for r in manifest), abs=1e-5)
    assert spend["per_item_usd"]["item-0001"] == manifest[1]["provenance"]["cost_usd"]
    assert spend["usage"]["image_output_tokens"] == 2 * 6240 + 4 * 6240
    assert info["api"]["this_run"]["image_requests"] == 6
    assert len(image_requests(fake)) == 6
    # the key is read from the environment and written nowhere
    for folder in (out, tmp_path / "cache"):
        for path in folder.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path


def test_a_rerun_and_an_overwrite_pay_for_nothing(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 4)
    out = tmp_path / "run"
    assert generate(fake, items, out).exit_code == 0
    first = (out / "manifest.jsonl").read_bytes()
    images = {p.name: p.read_bytes() for p in (out / "images").iterdir()}
    sent = len(fake.requests())
    again = generate(fake, items, out)
    assert "0 item(s) rendered" in again.output and "4 already done" in again.output
    redone = generate(fake, items, out, "--overwrite")
    assert redone.exit_code == 0 and "4 item(s) rendered" in redone.output
    assert len(fake.requests()) == sent  # all from the response cache
    assert (out / "manifest.jsonl").read_bytes() == first
    assert {p.name: p.read_bytes() for p in (out / "images").iterdir()} == images
    info = json.loads((out / "run.json").read_text())["api"]["this_run"]
    assert info["image_cached"] == 4 and info.get("image_requests", 0) == 0
    assert info["paid_usd"] == 0


def test_dry_run_calls_nothing_and_writes_nothing(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 3)
    out = tmp_path / "run"
    result = generate(fake, items, out, "--dry-run", "--layout", "interleaved",
                      "--font", "standard")
    assert result.exit_code == 0, result.output
    assert fake.requests() == [] and not out.exists()
    assert "=== item-0002: layout interleaved, font standard, size 1024x1536" in result.stdout
    assert "--- image (generate_interleaved_standard), gpt-image-1" in result.stdout
    assert "Q-0001: which statement follows?\n\nA. Option A of 1" in result.stdout
    # 3 images at the published 0.25 plus their prompts' text tokens at $5/M
    assert "requests: 3 image, at most 0 chat; estimated cost $0.75" in result.stderr
    assert result.stderr.rstrip().endswith("nothing was called")


def test_dry_run_with_auto_layout_shows_both_layouts(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 1)
    result = generate(fake, items, tmp_path / "run", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "--- chat (layout), gpt-4o-mini" in result.stdout
    assert "--- chat (depiction), gpt-4o-mini" in result.stdout
    assert "<depiction written by the chat model>" in result.stdout
    assert "at most 2 chat" in result.stderr and fake.requests() == []


def test_retry_after_is_honoured_and_5xx_backs_off(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 3)
    out = tmp_path / "run"
    fake.script("Q-0001", "429:1", path="images")
    fake.script("Q-0002", "500", "500", path="images")
    result = generate(fake, items, out, "--layout", "interleaved", "--max-tries", 3)
    assert result.exit_code == 0, result.output
    assert len(rows(out)) == 3 and skipped(out) == []
    limited = image_requests(fake, "Q-0001")
    assert [r.status for r in limited] == [429, 200]
    assert limited[1].started - limited[0].finished >= 0.95  # Retry-After: 1
    assert [r.status for r in image_requests(fake, "Q-0002")] == [500, 500, 200]
    this_run = json.loads((out / "run.json").read_text())["api"]["this_run"]
    assert this_run["http_429"] == 1 and this_run["http_500"] == 2


def test_failures_are_recorded_the_run_goes_on_and_retry_failed_retries(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 5)
    out = tmp_path / "run"
    fake.script("Q-0001", "500", "500", path="images")
    fake.script("Q-0002", "malformed", path="images")
    fake.script("Q-0003", "refuse", path="images")
    result = generate(fake, items, out, "--layout", "interleaved", "--max-tries", 2)
    assert result.exit_code == 0, result.output
    assert "2 item(s) rendered" in result.output
    assert "3 failed at the API (see skipped.jsonl; --retry-failed tries them again)" in \
        result.output
    reasons = {r["id"]: r["reason"] for r in skipped(out)}
    assert {r["stage"] for r in skipped(out)} == {"generate"}
    assert reasons["item-0001"].startswith("image API: HTTP 500 after 2 tries: The server had")
    assert reasons["item-0002"] == ("image API: malformed response (not JSON: Unterminated "
                                    "string starting at)")
    assert reasons["item-0003"].startswith("image API: refused by the content policy: Your "
                                           "request was rejected")
    assert len(image_requests(fake, "Q-0003")) == 1  # a refusal is not retried
    sent = len(fake.requests())
    assert "0 item(s) rendered" in generate(fake, items, out, "--layout", "interleaved").output
    assert len(fake.requests()) == sent  # failed items wait for --retry-failed
    retried = generate(fake, items, out, "--layout", "interleaved", "--retry-failed")
    assert retried.exit_code == 0 and "3 item(s) rendered" in retried.output
    assert skipped(out) == [] and [r["id"] for r in rows(out)] == [
        "item-0000", "item-0004", "item-0001", "item-0002", "item-0003"]
    assert len(image_requests(fake)) == sent + 3


def test_a_request_that_times_out_fails_after_its_tries(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 2)
    out = tmp_path / "run"
    fake.script("Q-0001", "slow:2", "slow:2", path="images")
    result = generate(fake, items, out, "--layout", "interleaved", "--max-tries", 2,
                      "--timeout", 0.4)
    assert result.exit_code == 0, result.output
    (failure,) = skipped(out)
    assert len(failure.pop("source_sha256")) == 64  # a mended item is tried again on resume
    assert failure == {"id": "item-0001", "stage": "generate",
                       "reason": "image API: timed out after 2 tries (0.4 s each)"}


def test_a_chat_refusal_is_recorded(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 2)
    out = tmp_path / "run"
    fake.script("Q-0000", "refuse", path="chat")
    result = generate(fake, items, out, "--layout", "background")
    assert result.exit_code == 0, result.output
    (failure,) = skipped(out)
    assert failure["reason"] == "chat API: refused: I can't help with that."
    assert image_requests(fake, "Q-0000") == []


def test_budget_stops_before_the_request_that_would_pass_it(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 6)
    out = tmp_path / "run"
    args = ("--layout", "interleaved", "--size", "1024x1536", "--concurrency", 1)
    result = generate(fake, items, out, *args, "--budget", 1)
    assert result.exit_code == 3
    # each image costs 6240 output tokens at $40/M plus its prompt: a little over $0.25
    assert "3 item(s) rendered (3 image(s))" in result.output
    assert result.output.splitlines()[-1].startswith(
        "Error: budget $1.00 reached ($0.75")
    assert result.output.splitlines()[-1].endswith(
        "3 of 6 item(s) done, 3 not started; re-run with a higher --budget to go on "
        "(finished work is kept)")
    assert len(rows(out)) == 3 and skipped(out) == [] and len(image_requests(fake)) == 3
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "stopped: budget" and info["api"]["this_run"]["paid_usd"] <= 1
    resumed = generate(fake, items, out, *args, "--budget", 5)
    assert resumed.exit_code == 0 and "3 already done" in resumed.output
    assert len(image_requests(fake)) == 6  # nothing asked twice


def test_budget_holds_with_requests_in_flight(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 12)
    out = tmp_path / "run"
    result = generate(fake, items, out, "--layout", "interleaved", "--concurrency", 8,
                      "--budget", 1.3)
    assert result.exit_code == 3
    info = json.loads((out / "run.json").read_text())
    assert info["api"]["this_run"]["paid_usd"] <= 1.3
    assert len(image_requests(fake)) == len(rows(out)) <= 5


def test_budget_needs_prices_for_the_models(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 1)
    result = generate(fake, items, tmp_path / "run", "--image-model", "my-image-model",
                      "--layout", "interleaved", "--budget", 1)
    assert result.exit_code == 2
    assert result.output.startswith("Error: --budget needs a price for my-image-model, which "
                                    "the price table (shipped) lacks; give --price-table FILE")
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"as_of": "2026-11-01", "models": {"my-image-model": {
        "kind": "image", "per_million_tokens": {"text_input": 0, "output": 10},
        "per_image": {"high": {"1024x1536": 0.07}}}}}))
    priced = generate(fake, items, tmp_path / "run", "--image-model", "my-image-model",
                      "--layout", "interleaved", "--budget", 1, "--price-table", table)
    assert priced.exit_code == 0, priced.output
    (row,) = rows(tmp_path / "run")
    assert row["provenance"]["cost_usd"] == pytest.approx(6240 * 10 / 1e6)


def test_chat_can_live_on_another_server(fake, tmp_path):
    chat = FakeOpenAI(layout_answer="background")  # a local server that needs no key
    chat_url = chat.start()
    try:
        items = write_items(tmp_path / "items.jsonl", 2)
        out = tmp_path / "run"
        result = run("generate", items, "--out", out, "--image-base-url", fake.url,
                     "--chat-base-url", chat_url, "--chat-model", "Qwen/Qwen2.5-14B-Instruct",
                     "--chat-api-key-env", "NO_SUCH_VARIABLE")
        assert result.exit_code == 0, result.output
        assert fake.requests("chat") == [] and len(chat.requests("chat")) == 4
        assert all(r["generation"]["chat_model"] == "Qwen/Qwen2.5-14B-Instruct"
                   for r in rows(out))
        # an unpriced chat model costs nothing known: the item's cost is unknown
        assert rows(out)[0]["provenance"]["cost_usd"] is None
    finally:
        chat.stop()


def test_a_rejected_key_stops_the_run(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    items = write_items(tmp_path / "items.jsonl", 2)
    result = generate(fake, items, tmp_path / "run", "--layout", "interleaved",
                      "--concurrency", 1)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"Error: image API at {fake.url}: HTTP 401: Incorrect API key provided.")
    assert len(fake.requests()) == 1  # not retried
    assert "sk-wrong" not in (tmp_path / "run" / "run.json").read_text()


def test_a_missing_key_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    items = write_items(tmp_path / "items.jsonl", 1)
    result = run("generate", items, "--out", tmp_path / "run", "--layout", "interleaved")
    assert result.exit_code == 2
    assert result.output == ("Error: OPENAI_API_KEY is not set: the image API key is read "
                             "from the environment only (--api-key-env names another "
                             "variable)\n")


def test_a_missing_openai_package_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now fails
    items = write_items(tmp_path / "items.jsonl", 1)
    result = run("generate", items, "--out", tmp_path / "run")
    assert result.exit_code == 2
    assert result.output == ("Error: generate needs the openai client: pip install "
                             "'mmconvert[generate]'\n")
    assert run("generate", items, "--dry-run").exit_code == 0  # a dry run needs none


def test_bad_options_are_one_line_errors(tmp_path):
    items = write_items(tmp_path / "items.jsonl", 1)
    result = run("generate", items, "--layout", "sideways")
    assert result.exit_code == 2
    assert result.output == ("Error: --layout: expected auto, background, interleaved or "
                             "tokens:N (N > 0) (got 'sideways')\n")
    result = run("generate", items, "--concurrency", 0)
    assert result.output == ("Error: --concurrency: Input should be greater than or equal to "
                             "1 (got 0)\n")


def test_a_killed_run_repeats_only_the_requests_in_flight(fake, tmp_path):
    items = write_items(tmp_path / "items.jsonl", 10)
    out = tmp_path / "run"
    fake.script("Q-0005", "hang", path="images")
    fake.script("Q-0006", "hang", path="images")
    command = [sys.executable, "-m", "mmconvert", "generate", str(items), "--out", str(out),
               "--image-base-url", fake.url, "--layout", "interleaved", "--concurrency", "2",
               "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hanging = [r for r in image_requests(fake) if r.action == "hang"]
            manifest = out / "manifest.jsonl"
            done = manifest.read_text().count("\n") if manifest.exists() else 0
            if len(hanging) == 2 and done == 5:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run did not reach the hanging requests")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
    fake.release.set()
    result = generate(fake, items, out, "--layout", "interleaved", "--concurrency", 2)
    assert result.exit_code == 0, result.output
    assert "5 item(s) rendered" in result.output and "5 already done" in result.output
    counts = {f"Q-{n:04d}": len(image_requests(fake, f"Q-{n:04d}")) for n in range(10)}
    assert counts == {f"Q-{n:04d}": 2 if n in (5, 6) else 1 for n in range(10)}
    assert [r["id"] for r in rows(out)] == [f"item-{n:04d}" for n in range(10)]
    assert not list(out.rglob(".*.tmp"))


def test_a_sharded_generate_run_holds_what_a_files_run_writes(fake, tmp_path):
    from mmconvert.runfolder import read_run_file
    from mmconvert.shards import shard_files

    items = write_items(tmp_path / "items.jsonl", 4)
    plain, sharded = tmp_path / "files", tmp_path / "shards"
    assert generate(fake, items, plain).exit_code == 0
    sent = len(fake.requests())
    result = generate(fake, items, sharded, "--store", "shards", "--shard-rows", "3")
    assert result.exit_code == 0, result.output
    assert len(fake.requests()) == sent  # the same requests, answered from the cache
    assert len(shard_files(sharded)) == 2 and not (sharded / "images").exists()
    assert (sharded / "manifest.jsonl").read_bytes() == (plain / "manifest.jsonl").read_bytes()
    for row in rows(plain):
        rel = row["images"][0]["path"]
        assert read_run_file(sharded, rel) == (plain / rel).read_bytes()


def test_a_limit_starts_no_paid_request_past_it(fake, tmp_path):
    """generate's work is paid for: its --limit applies to the selection, so a concurrency
    larger than the limit sends no request for an item past it."""
    items = write_items(tmp_path / "items.jsonl", 12)
    out = tmp_path / "run"
    result = generate(fake, items, out, "--limit", 2, "--concurrency", 8)
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in rows(out)] == ["item-0000", "item-0001"]
    assert {r.prompt.split("Q-")[1][:4] for r in image_requests(fake) if "Q-" in r.prompt} \
        <= {"0000", "0001"}
    assert len(image_requests(fake)) == 2


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_by_name_and_gzip_is_read(fake, tmp_path):
    """A response of 1 MiB of gzip that inflates to 1 GiB was read whole and ended as "no
    data[0]" (or a TypeError elsewhere), nothing naming the cause; an ordinary gzip-encoded
    answer is read as before."""
    items = write_items(tmp_path / "items.jsonl", 3)
    fake.script("Q-0000", "gzipbomb", "gzipbomb", "gzipbomb", path="images")
    fake.script("Q-0001", "gzip", path="images")
    result = generate(fake, items, tmp_path / "out", "--layout", "background")
    assert result.exit_code == 0, result.output
    assert sorted(r["id"] for r in rows(tmp_path / "out")) == ["item-0001", "item-0002"]
    (bomb,) = skipped(tmp_path / "out")
    assert bomb["id"] == "item-0000" and bomb["reason"] == (
        f"image API at {fake.url}: the response's gzip body inflates past the 128 MiB a "
        "response may hold (a compression bomb); not read further")
