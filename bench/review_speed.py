"""How fast the review page answers a verdict with 5,000 items in the run.

    python bench/review_speed.py [--items 5000] [--verdicts 200]

Builds a run folder of N items (one real page render of the shipped sample, its row copied N
times under new ids) with three automatic events per item in qa.jsonl, starts the review server
and measures, against the same measurement on a 50-item run as the baseline:

- the server: start-up (manifest and qa.jsonl read), GET /api/state (size and time), and
  POST /api/verdict round trips over HTTP (p50 / p95 / max);
- the page, in headless Chromium (Debian's, via Playwright; skipped without it): from the
  key press "a" to the next item on screen (timed by the page from the key event's time
  stamp), and the page's own fetch time of the verdict.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.manifest import JsonlLog  # noqa: E402
from mmconvert.qa.events import event  # noqa: E402
from mmconvert.qa.review import ReviewServer, ReviewState  # noqa: E402


def build(folder: Path, template: Path, count: int) -> None:
    shutil.copytree(template, folder)
    rows = JsonlLog(template / "manifest.jsonl").read()
    out, events = [], []
    for n in range(count):
        row = dict(rows[n % len(rows)], id=f"item-{n:05d}")
        out.append(row)
        for check in ("ocr", "text_layer", "image"):
            failed = check == "ocr" and n % 37 == 0
            events.append(event(row["id"], f"auto:{check}", "reject" if failed else "accept",
                                "ocr_mismatch" if failed else "ok", {"cer": 0.01}))
    JsonlLog(folder / "manifest.jsonl").rewrite(out)
    JsonlLog(folder / "qa.jsonl").rewrite(events)


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):6.1f} ms, p95 {p95:6.1f} ms, max {ordered[-1]:6.1f} ms"


def measure_server(folder: Path, verdicts: int) -> tuple[ReviewServer, dict]:
    started = time.perf_counter()
    server = ReviewServer(ReviewState(folder))
    startup = time.perf_counter() - started
    threading.Thread(target=server.serve_forever, daemon=True).start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port)
    started = time.perf_counter()
    conn.request("GET", "/api/state")
    state = conn.getresponse().read()
    state_ms = 1000 * (time.perf_counter() - started)
    ids = [item[0] for item in json.loads(state)["items"]]
    times = []
    for n in range(verdicts):
        body = json.dumps({"id": ids[(n * 7) % len(ids)], "reviewer": "bench",
                           "verdict": "reject" if n % 3 == 0 else "accept",
                           "reason": "unreadable" if n % 3 == 0 else "ok"})
        started = time.perf_counter()
        conn.request("POST", "/api/verdict", body=body,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        assert response.status == 200
        times.append(1000 * (time.perf_counter() - started))
    conn.close()
    return server, {"startup_s": startup, "state_ms": state_ms, "state_kb": len(state) / 1024,
                    "verdict": times}


def measure_page(port: int, presses: int) -> dict | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        return None
    if chromium is None:
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.locator("#item-id")).to_have_text(re.compile(r"\S"))
        load_ms = 1000 * (time.perf_counter() - started)
        page.locator("#reviewer").fill("bench")
        page.keyboard.press("Escape")
        shown, fetched = [], []
        for _ in range(presses):
            before = page.locator("#item-id").inner_text()
            page.keyboard.press("a")
            expect(page.locator("body")).to_have_attribute(
                "data-verdict", re.compile("^" + re.escape(before) + " "))
            shown.append(float(page.locator("body").get_attribute("data-verdict").split()[1]))
            message = page.locator("#message").inner_text()
            assert "saved in" in message, message
            fetched.append(float(message.rsplit("saved in ", 1)[1].split()[0]))
        browser.close()
    return {"load_ms": load_ms, "shown": shown, "fetched": fetched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--verdicts", type=int, default=200)
    parser.add_argument("--presses", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template"
        subprocess.run([sys.executable, "-m", "mmconvert", "render", "mmlu-redux", "--source",
                        str(ROOT / "mmconvert/samples/mmlu-redux"), "--out", str(template),
                        "--no-progress"], check=True, capture_output=True, cwd=ROOT)
        for label, count in (("baseline", 50), ("measured", args.items)):
            folder = Path(tmp) / f"run{count}"
            build(folder, template, count)
            server, figures = measure_server(folder, args.verdicts)
            page = measure_page(server.port, args.presses)
            server.shutdown()
            server.server_close()
            print(f"{label}: {count} items, {3 * count} automatic events")
            print(f"  server start-up {figures['startup_s']:.2f} s; GET /api/state "
                  f"{figures['state_ms']:.1f} ms ({figures['state_kb']:.0f} KiB)")
            print(f"  verdict over HTTP ({args.verdicts}): {percentiles(figures['verdict'])}")
            if page is None:
                print("  page: skipped (no chromium or playwright)")
                continue
            print(f"  page load to first item {page['load_ms']:.0f} ms")
            print(f"  page, key 'a' to next item shown ({args.presses}): "
                  f"{percentiles(page['shown'])}")
            print(f"  page, verdict fetch as the page timed it: {percentiles(page['fetched'])}")


if __name__ == "__main__":
    main()
