"""``mmconvert eval``'s own cost, against a local OpenAI-compatible server.

    python bench/eval_speed.py [--items 1000] [--delay 0.2] [--concurrency 16]

1. Scoring 10,000 stored responses (MCQ, BABILong, LongBench, VCR spans) with the family
   scorers: seconds (target under 5).
2. ``mmconvert eval`` as a whole process on ITEMS rendered option blocks x 2 conditions at
   CONCURRENCY against a server answering in DELAY s. The bound is requests x delay /
   concurrency (25 s for the defaults); the baseline, in the same run, is the plain ``openai``
   async client sending the same requests at the same concurrency. mmconvert's overhead per
   request = (its wall time - the baseline's) / requests.
3. The same command again: every answer from the response cache, and the number of requests
   the server saw (target 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.openai_server import FakeOpenAI  # noqa: E402


def scoring_seconds(count: int = 10_000) -> float:
    from mmconvert.scoring.spec import score_row

    rng = random.Random(0)
    rows = [
        {"renderer": {"name": "page"}, "corpus": "mmlu-redux", "options": list("wxyz"),
         "answer": "C"},
        {"renderer": {"name": "page"}, "corpus": "babilong", "options": [],
         "answer": ["garden"], "question": "Where is Mary?", "metadata": {"task": "qa1"}},
        {"renderer": {"name": "page"}, "corpus": "longbench", "subset": "hotpotqa_e",
         "options": [], "answer": ["the old archive in Place 1"], "language": "en"},
        {"renderer": {"name": "occlude"}, "language": "en",
         "masked_spans": [{"text": "in front of a mirror"}, {"text": "a red umbrella"}]},
    ]
    replies = ["Let me think step by step about each option. The answer is (C).",
               "Mary went to the kitchen and then to the garden. Answer: garden",
               "The documents say it is kept in the old archive in Place 1. Answer: Place 1",
               "A man standing in front of a mirror holding a red umbrella."]
    score_row(rows[3], replies[3])  # load the tokenizer once, as a run does
    started = time.perf_counter()
    for _ in range(count):
        k = rng.randrange(4)
        score_row(rows[k], replies[k])
    return time.perf_counter() - started


def make_run(folder: Path, items: int) -> tuple[Path, dict[str, str]]:
    source = folder / "items.jsonl"
    rng = random.Random(1)
    with open(source, "w", encoding="utf-8") as handle:
        for i in range(items):
            options = [f"option {rng.randrange(10**6)} of item {i}" for _ in range(4)]
            handle.write(json.dumps({"id": f"q-{i:05d}", "question": f"Question {i}?",
                                     "options": options, "answer": "ABCD"[i % 4]}) + "\n")
    run = folder / "run"
    subprocess.run([sys.executable, "-m", "mmconvert", "render", str(source), "--out",
                    str(run), "--workers", "2"], check=True, capture_output=True)
    key = {}
    for line in (run / "manifest.jsonl").read_text().splitlines():
        row = json.loads(line)
        key[row["text_prompt"]] = row["answer"]
    return run, key


def baseline_seconds(run: Path, url: str, concurrency: int) -> float:
    """The same requests with the plain openai async client, CONCURRENCY at a time."""
    import base64

    from openai import AsyncOpenAI

    rows = [json.loads(line) for line in (run / "manifest.jsonl").read_text().splitlines()]
    requests = []
    for row in rows:
        image = (run / row["images"][0]["path"]).read_bytes()
        uri = "data:image/png;base64," + base64.b64encode(image).decode()
        requests.append([{"type": "image_url", "image_url": {"url": uri}},
                         {"type": "text", "text": row["prompt"]}])
        requests.append(row["text_prompt"])

    async def main() -> float:
        client = AsyncOpenAI(base_url=url, api_key="none", max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(content):
            async with gate:
                await client.chat.completions.create(
                    model="reader", messages=[{"role": "user", "content": content}],
                    temperature=0, max_tokens=1024)

        started = time.perf_counter()
        await asyncio.gather(*(one(c) for c in requests))
        return time.perf_counter() - started

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    seconds = scoring_seconds()
    print(f"[{'ok' if seconds < 5 else 'MISS'}] scoring 10,000 stored responses: {seconds:.2f} s "
          "(target < 5 s)")

    with tempfile.TemporaryDirectory() as tmp:
        run, key = make_run(Path(tmp), args.items)

        def answer(body):
            content = body["messages"][-1]["content"]
            if isinstance(content, str):
                return f"Answer: {key.get(content, 'A')}"
            return "Answer: A"

        fake = FakeOpenAI(answer=answer, delay=args.delay, models=("reader",))
        url = fake.start()
        requests = 2 * args.items
        bound = requests * args.delay / args.concurrency
        base = baseline_seconds(run, url, args.concurrency)
        seen = len(fake.requests())
        command = [sys.executable, "-m", "mmconvert", "eval", str(run), "--model", "reader",
                   "--base-url", url, "--out", str(Path(tmp) / "ev"), "--concurrency",
                   str(args.concurrency), "--no-progress"]
        env = {**os.environ, "OPENAI_API_KEY": "none"}
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        if done.returncode:
            raise SystemExit(done.stderr)
        sent = len(fake.requests()) - seen
        print(f"{args.items} items x 2 conditions = {requests} requests at concurrency "
              f"{args.concurrency}, server {args.delay * 1000:.0f} ms; bound {bound:.1f} s")
        print(f"  openai client baseline: {base:.1f} s")
        print(f"  mmconvert eval (whole process, start-up included): {wall:.1f} s, "
              f"{sent} requests; overhead {1000 * (wall - base) / requests:.1f} ms/request "
              f"over the baseline, {wall / bound:.2f}x the bound")
        started = time.perf_counter()
        again = subprocess.run(command, capture_output=True, text=True, env=env)
        cached = time.perf_counter() - started
        resent = len(fake.requests()) - seen - sent
        print(f"[{'ok' if again.returncode == 0 and resent == 0 else 'MISS'}] re-run from the "
              f"cache: {cached:.1f} s, {resent} request(s) sent")
        fake.stop()


if __name__ == "__main__":
    main()
