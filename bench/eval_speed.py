"""``mmconvert eval``'s own cost, against a local OpenAI-compatible server.

    python bench/eval_speed.py [--items 1000] [--delay 0.2] [--concurrency 16]

1. Scoring 10,000 stored responses (MCQ, BABILong, LongBench, VCR spans) with the family
   scorers: seconds (target under 5).
2. ``mmconvert eval`` as a whole process on ITEMS rendered option blocks x 2 conditions at
   CONCURRENCY against a server answering in DELAY s. The bound is requests x delay /
   concurrency (25 s for the defaults); the baseline, in the same run, is the plain ``openai``
   async client sending the same requests at the same concurrency, a whole process too. The
   two alternate ``--repeat`` times; mmconvert's overhead per request = (its median wall time
   - the baseline's) / requests. The server runs in a process of its own (so that neither
   client shares an interpreter with it) with a deep listen backlog; ``--load N`` keeps N
   busy processes running meanwhile, to show that the figures hold on a loaded machine.
3. The same command again: every answer from the response cache, and the number of requests
   the server saw (target 0).

    python bench/eval_speed.py --baseline RUN URL CONCURRENCY   # the baseline's process
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.typed import typed  # noqa: E402


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
    rows = [typed(row) for row in rows]  # as a run's reader hands them over
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


def serve_apart(answer, delay: float):
    """The bench's server in a forked process: its URL, a function giving the requests it has
    answered so far, and one that stops it."""
    here, there = multiprocessing.Pipe()

    def serve() -> None:
        fake = FakeOpenAI(answer=answer, delay=delay, models=("reader",))
        there.send(fake.start())
        while there.recv() == "count":
            there.send(len(fake.requests()))
        fake.stop()

    process = multiprocessing.get_context("fork").Process(target=serve, daemon=True)
    process.start()
    url = here.recv()

    def count() -> int:
        here.send("count")
        return here.recv()

    def stop() -> None:
        here.send("stop")
        process.join(timeout=10)

    return url, count, stop


def busy(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--load", type=int, default=0,
                        help="busy processes kept running while the clients are timed")
    parser.add_argument("--baseline", nargs=3, metavar=("RUN", "URL", "CONCURRENCY"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        run, url, concurrency = args.baseline
        baseline_seconds(Path(run), url, int(concurrency))
        return

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

        url, count, stop_server = serve_apart(answer, args.delay)
        requests = 2 * args.items
        bound = requests * args.delay / args.concurrency
        env = {**os.environ, "OPENAI_API_KEY": "none"}
        stop_load = multiprocessing.Event()
        load = [multiprocessing.Process(target=busy, args=(stop_load,), daemon=True)
                for _ in range(args.load)]
        for process in load:
            process.start()
        times: dict[str, list[float]] = {"baseline": [], "mmconvert": []}
        sent = []

        def evaluation(out: str) -> list[str]:
            return [sys.executable, "-m", "mmconvert", "eval", str(run), "--model", "reader",
                    "--base-url", url, "--out", str(Path(tmp) / out), "--concurrency",
                    str(args.concurrency), "--no-progress"]

        for round_ in range(args.repeat):
            order = ("baseline", "mmconvert") if round_ % 2 == 0 else ("mmconvert", "baseline")
            for who in order:
                seen = count()
                command = ([sys.executable, __file__, "--baseline", str(run), url,
                            str(args.concurrency)] if who == "baseline"
                           else evaluation(f"ev{round_}"))  # a folder, and a cache, each
                started = time.perf_counter()
                done = subprocess.run(command, capture_output=True, text=True, env=env)
                times[who].append(time.perf_counter() - started)
                if done.returncode:
                    raise SystemExit(f"{who}: {done.stderr.strip()[-2000:]}")
                if who == "mmconvert":
                    sent.append(count() - seen)
        load_avg = os.getloadavg()[0]
        base, wall = (statistics.median(times[k]) for k in ("baseline", "mmconvert"))
        overhead = 1000 * (wall - base) / requests
        print(f"{args.items} items x 2 conditions = {requests} requests at concurrency "
              f"{args.concurrency}, server {args.delay * 1000:.0f} ms (its own process); bound "
              f"{bound:.1f} s; {args.load} busy process(es), load {load_avg:.2f}, "
              f"{os.cpu_count()} cores")
        print("  openai client baseline (whole process): "
              + ", ".join(f"{t:.2f}" for t in times["baseline"]) + f" s (median {base:.2f})")
        print("  mmconvert eval (whole process): "
              + ", ".join(f"{t:.2f}" for t in times["mmconvert"]) + f" s (median {wall:.2f}), "
              f"requests {sent}")
        print(f"[{'ok' if overhead < 1 else 'MISS'}] overhead {overhead:.2f} ms/request over "
              f"the baseline (goal < 1); {wall / bound:.2f}x the bound")
        seen = count()
        started = time.perf_counter()
        again = subprocess.run(evaluation("ev0"), capture_output=True, text=True, env=env)
        cached = time.perf_counter() - started
        resent = count() - seen
        stop_load.set()
        print(f"[{'ok' if again.returncode == 0 and resent == 0 else 'MISS'}] re-run from the "
              f"cache: {cached:.1f} s, {resent} request(s) sent")
        stop_server()


if __name__ == "__main__":
    main()
