"""One compression curve against the same work done by hand, as whole processes.

    python bench/curve_speed.py [--items 30] [--budgets 128,256,1024] [--delay 0.05]
    python bench/curve_speed.py --items 1000 --delay 0.5 --concurrency 32 --floor

The local OpenAI-compatible server of the tests (``tests/openai_server.py``, answering after
``--delay`` seconds) reads every request. ``curve``: one ``mmconvert curve`` process over
``--budgets``. ``by hand``: what a researcher runs for the same figures, a ``render
--vision-budget B`` and an ``eval --modality image,text-budget,text`` per budget, each its own
process, each evaluation with a cache of its own (the whole text is asked once per budget). The
items are long contexts of our own (a needed sentence among 12-40 filler sentences). Prints the
seconds and requests of each, and checks both give the same scores.

``--floor`` (issue 57, part 4) measures the curve against the least it could take instead:
its rendering alone (a ``render --vision-budget B`` per budget, timed) plus its requests times
the server's delay over ``--concurrency``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.test_stats import tiktoken_files  # noqa: E402

FILLER = ("The committee met again on Tuesday to review the season's figures, and the minutes "
          "record a long discussion of the budget, the rota and the state of the roof. ")


def items(path: Path, count: int) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(count):
            sentences = [FILLER] * (12 + index % 29)
            sentences.insert(index % len(sentences), f"The code word is ZEPHYR{index:03d}. ")
            handle.write(json.dumps({"id": f"doc-{index:03d}",
                                     "context": "".join(sentences).strip(),
                                     "question": "What is the code word?",
                                     "answer": [f"ZEPHYR{index:03d}"]}) + "\n")


def mmconvert(*args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mmconvert", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"mmconvert {' '.join(args[:2])}: {done.stderr[-600:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--budgets", default="128,256,1024")
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--floor", action="store_true",
                        help="against rendering alone + requests x delay / concurrency, not "
                             "the work done by hand")
    args = parser.parse_args()

    def answer(body):
        parts = body["messages"][-1]["content"]
        parts = parts if isinstance(parts, list) else [{"type": "text", "text": parts}]
        text = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
        found = [w for w in text.split() if w.startswith("ZEPHYR")]
        return f"Answer: {found[0].rstrip('.') if found else 'unknown'}"

    fake = FakeOpenAI(answer=answer, models=("reader",), delay=args.delay)
    url = fake.start()
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-never-written", "PYTHONPATH": str(ROOT),
           "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR") or tiktoken_files()}
    common = ["--model", "reader", "--base-url", url, "--tokenizer", "tiktoken:o200k_base",
              "--ratio-model", "qwen2.5-vl", "--concurrency", str(args.concurrency)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "items.jsonl"
            items(data, args.items)
            before = len(fake.requests("chat"))
            curve_seconds = mmconvert("curve", str(data), *common, "--budgets", args.budgets,
                                      "--recipe", "readbench", "--limit", str(args.items),
                                      "--out", f"{tmp}/curve", "--json", env=env)
            curve_requests = len(fake.requests("chat")) - before
            curve = json.loads((Path(tmp) / "curve" / "curve.json").read_text())["curves"][0]
            if args.floor:
                drawing = sum(mmconvert("render", str(data), "--recipe", "readbench",
                                        "--vision-budget", budget, "--ratio-model",
                                        "qwen2.5-vl", "--out", f"{tmp}/alone-{budget}",
                                        env=env)
                              for budget in args.budgets.split(","))
                floor = drawing + curve_requests * args.delay / args.concurrency
                print(f"{args.items} items x {len(args.budgets.split(','))} budgets, server "
                      f"delay {args.delay:g} s, {args.concurrency} in flight, load "
                      f"{os.getloadavg()[0]:.2f}")
                print(f"  curve (one process): {curve_seconds:7.1f} s, {curve_requests} "
                      "requests")
                print(f"  rendering alone ({len(args.budgets.split(','))} render processes): "
                      f"{drawing:7.1f} s")
                print(f"  requests x delay / in flight: "
                      f"{curve_requests * args.delay / args.concurrency:7.1f} s")
                print(f"  curve / (rendering + requests x delay / in flight): "
                      f"{curve_seconds / floor:.2f}x")
                return
            before = len(fake.requests("chat"))
            hand_seconds, hand = 0.0, {}
            for budget in args.budgets.split(","):
                run = f"{tmp}/hand-{budget}"
                hand_seconds += mmconvert("render", str(data), "--recipe", "readbench",
                                          "--vision-budget", budget, "--ratio-model",
                                          "qwen2.5-vl", "--out", run, env=env)
                hand_seconds += mmconvert("eval", run, *common, "--modality",
                                          "image,text-budget,text", "--out", f"{run}-eval",
                                          env=env)
                hand[budget] = json.loads(Path(f"{run}-eval/results.json").read_text())
            hand_requests = len(fake.requests("chat")) - before
    finally:
        fake.stop()
    same = all(p["accuracy"] == hand[str(p["target"]["vision_budget"])]["overall"]["image"]
               ["score"] and p["text_baseline"] == hand[str(p["target"]["vision_budget"])]
               ["overall"]["text-budget"]["score"] for p in curve["points"])
    print(f"{args.items} items x {len(args.budgets.split(','))} budgets, server delay "
          f"{args.delay:g} s, load {os.getloadavg()[0]:.2f}")
    print(f"  curve (one process): {curve_seconds:6.1f} s, {curve_requests} requests")
    print(f"  by hand (render + eval per budget, {2 * len(hand)} processes): "
          f"{hand_seconds:6.1f} s, {hand_requests} requests")
    print(f"  curve / by hand: {curve_seconds / hand_seconds:.2f}x the time; same scores: "
          f"{'yes' if same else 'NO'}")
    for p in curve["points"]:
        print(f"    {p['name']}: image {p['accuracy']}, text at the budget {p['text_baseline']}, "
              f"whole text {p.get('text')}")


if __name__ == "__main__":
    main()
