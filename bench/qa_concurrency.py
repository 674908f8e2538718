"""Two review servers and a ``qa check`` on one run folder at once: is every verdict answered 200
in qa.jsonl exactly once, and does every line parse?

    python bench/qa_concurrency.py [--verdicts 1000] [--threads 20] [--rounds 3]

Each round renders nothing new: it starts two ``mmconvert qa review`` processes on the same
folder (the shipped MMLU-Redux sample), a ``mmconvert qa check --recheck`` beside them, and sends
``--verdicts`` verdicts to each server from ``--threads`` threads, every verdict with a note that
names it (up to 1.6 KB long). Before each round a line is left torn at the end of qa.jsonl, as a
writer killed mid-line leaves it. Then it reads qa.jsonl back. Everything is on 127.0.0.1 and
stops by itself.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "mmconvert" / "samples" / "mmlu-redux"


def mmconvert(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mmconvert.cli", *map(str, args)],
                            cwd=ROOT, **kwargs)


def start_server(run: Path) -> tuple[subprocess.Popen, int]:
    server = mmconvert("qa", "review", run, "--port", "0", stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    line = server.stdout.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)/", line)
    if not found:  # it stopped: qa.jsonl is damaged
        sys.exit(f"a review server did not start: {line.strip()}")
    return server, int(found.group(1))


def post(port: int, body: dict) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/api/verdict", body=json.dumps(body).encode(),
                 headers={"Content-Type": "application/json"})
    status = conn.getresponse().status
    conn.close()
    return status


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verdicts", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "demo"
        subprocess.run([sys.executable, "-m", "mmconvert.cli", "render", "mmlu-redux",
                        "--source", SAMPLE, "--out", run], cwd=ROOT, check=True,
                       capture_output=True)
        ids = [json.loads(line)["id"] for line in (run / "manifest.jsonl").read_text()
               .splitlines()]
        answered: list[str] = []
        lock = threading.Lock()
        started = time.perf_counter()
        for round_ in range(args.rounds):
            with open(run / "qa.jsonl", "ab") as handle:  # as a writer killed mid-line leaves
                handle.write(b'{"id": "torn-by-a-kill", "sou')
            servers = [start_server(run) for _ in range(2)]
            check = mmconvert("qa", "check", run, "--recheck", "--no-progress",
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

            def vote(job: tuple[int, int, int, int]) -> None:
                round_, server, n, port = job
                note = f"r{round_}-s{server}-n{n}"
                status = post(port, {"id": ids[n % len(ids)], "reviewer": f"s{server}",
                                     "verdict": "accept" if n % 3 else "reject",
                                     "reason": "ok" if n % 3 else "unreadable",
                                     "note": note + " " + "x" * (n % 5) * 400})
                if status == 200:
                    with lock:
                        answered.append(note)

            jobs = [(round_, s, n, port) for n in range(args.verdicts)
                    for s, (_, port) in enumerate(servers)]
            with ThreadPoolExecutor(args.threads) as pool:
                list(pool.map(vote, jobs))
            check.wait(timeout=600)
            for server, _ in servers:
                server.terminate()
                server.wait(timeout=30)
        seconds = time.perf_counter() - started
        raw = (run / "qa.jsonl").read_bytes()
        lines = raw.split(b"\n")
        bad = 0
        notes: dict[str, int] = {}
        for line in lines[:-1]:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            note = ((event.get("detail") or {}).get("note") or "").split(" ")[0]
            if note:
                notes[note] = notes.get(note, 0) + 1
        lost = [n for n in answered if n not in notes]
        twice = [n for n, count in notes.items() if count > 1]
        print(f"{args.rounds} round(s) x 2 servers x {args.verdicts} verdicts from "
              f"{args.threads} threads, with qa check running: {len(answered)} answered 200, "
              f"{len(notes)} in qa.jsonl, lost {len(lost)}, twice {len(twice)}, lines that do "
              f"not parse {bad}, last line whole: {lines[-1] == b''}; {seconds:.1f} s")
        sys.exit(1 if lost or twice or bad or lines[-1] != b"" else 0)


if __name__ == "__main__":
    main()
