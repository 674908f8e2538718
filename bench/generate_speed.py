"""Speed of ``mmconvert generate`` against the local OpenAI-speaking server
(tests/openai_server.py, run as its own process) answering every request after a fixed delay.

    python bench/generate_speed.py [--items 100] [--delay 0.2] [--concurrency 8]
                                   [--image flat|photo|text]

Fixed layout (interleaved, so one image request per item). ``flat``: a plain PNG of the asked
size (the tool's overhead with the least image work); ``photo``: a 3.4 MB photo-like PNG, as
large as a real 1536x1024 response. Prints the wall time, the server's
bound (items x delay / concurrency), this process's CPU time per item (the tool's own work:
HTTP, cache write, decoding, the JPEG copy, manifest), and, as the baseline in the same run,
the plain openai client making the same requests from the same number of threads and doing
nothing with the answers. Then the same run again from the response cache, and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.config import ApiOptions  # noqa: E402
from mmconvert.converter import convert  # noqa: E402
from mmconvert.renderers.generate import GenerateConfig  # noqa: E402


def write_items(path: Path, count: int) -> None:
    with path.open("w") as handle:
        for n in range(count):
            handle.write(json.dumps({
                "id": f"b-{n:04d}", "context": f"Passage {n}. " + "Some text. " * 30,
                "question": f"Question {n}: which follows?",
                "options": [f"Option {c} {n}" for c in "ABCD"], "answer": "A"}) + "\n")


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--image", choices=["text", "flat", "photo"], default="flat")
    args = parser.parse_args()

    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"),
                               "--delay", str(args.delay), "--image", args.image],
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            os.environ.update({"OPENAI_API_KEY": "bench", "MMCONVERT_CACHE": str(tmp / "cache")})
            items = tmp / "items.jsonl"
            write_items(items, args.items)
            config = GenerateConfig(corpus=str(items),
                                    generate={"layout": "interleaved", "font": "standard"})
            api = ApiOptions(image_base_url=url, concurrency=args.concurrency)
            bound = args.items * args.delay / args.concurrency

            # warm the server and the imports with one request outside the timing
            convert(config.model_copy(update={"limit": 1}), out=tmp / "warm", api=api,
                    progress=False, log=lambda m: None)

            summary, wall, cpu = timed(lambda: convert(config, out=tmp / "run", api=api,
                                                       progress=False, log=lambda m: None))
            assert summary.rendered == args.items, summary.line()
            print(f"mmconvert generate: {args.items} items, concurrency {args.concurrency}, "
                  f"server delay {args.delay * 1000:.0f} ms, {args.image} images")
            print(f"  wall {wall:.2f} s (server bound {bound:.2f} s), "
                  f"{args.items / wall:.1f} items/s")
            print(f"  own CPU per item {cpu / args.items * 1000:.1f} ms "
                  f"(wall beyond the bound per item: {(wall - bound) / args.items * 1000:.1f} "
                  "ms)")

            _, cached_wall, cached_cpu = timed(lambda: convert(
                config, out=tmp / "again", api=api, progress=False, log=lambda m: None))
            print(f"  again from the cache: wall {cached_wall:.2f} s, CPU per item "
                  f"{cached_cpu / args.items * 1000:.1f} ms, no requests")

            import openai

            client = openai.OpenAI(api_key="bench", base_url=url, max_retries=0)
            prompts = [f"baseline {n}" for n in range(args.items)]

            def plain():
                with ThreadPoolExecutor(args.concurrency) as pool:
                    list(pool.map(lambda p: client.images.generate(
                        model="gpt-image-1", prompt=p, size="1024x1536", quality="high"),
                        prompts))

            _, base_wall, base_cpu = timed(plain)
            print(f"baseline, plain openai client, same threads, answers unused: wall "
                  f"{base_wall:.2f} s, CPU per item {base_cpu / args.items * 1000:.1f} ms")
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"peak RSS {peak:.0f} MiB")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
