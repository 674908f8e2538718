"""Peak memory and time of what used to blow up, each as a whole process:

- the occluder's decode of a 7000x7000 photo (PNG RGB, PNG RGBA, JPEG) to its 300 px width;
- ``mmconvert render`` of a 2-million-character context at 1200 PPI (refused before drawing,
  over the per-item pixel limit) and at 92.9 PPI (drawn).

    python bench/memory_limits.py

Peak RSS comes from ``/usr/bin/time -f %M`` (GNU time) when it is there, else from
``resource.getrusage`` of the children.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(args: list[str]) -> tuple[float, float, str]:
    """(peak MB, seconds, last line of output) of one process."""
    started = time.perf_counter()
    if shutil.which("time") and Path("/usr/bin/time").exists():
        done = subprocess.run(["/usr/bin/time", "-f", "PEAK %M", *args], capture_output=True,
                              text=True, cwd=ROOT)
        lines = done.stderr.strip().splitlines()
        peak = int(next(line for line in reversed(lines) if line.startswith("PEAK"))[5:])
        rest = [line for line in (done.stdout + done.stderr).splitlines()
                if not line.startswith(("PEAK", "Command exited"))]
    else:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        rest = (done.stdout + done.stderr).splitlines()
    return peak / 1024, time.perf_counter() - started, (rest[-1] if rest else "")


def main() -> None:
    import numpy as np
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        noise = (np.random.default_rng(0).random((7000, 7000, 3)) * 255).astype("uint8")
        photos = {"png-rgb": tmp / "rgb.png", "png-rgba": tmp / "rgba.png",
                  "jpeg": tmp / "photo.jpg"}
        Image.fromarray(noise).save(photos["png-rgb"], compress_level=1)
        Image.fromarray(noise).convert("RGBA").save(photos["png-rgba"], compress_level=1)
        Image.fromarray(noise).save(photos["jpeg"], quality=80)
        del noise
        print("occluder decode of a 7000x7000 photo to 300 px (whole process):")
        for name, path in photos.items():
            code = ("from mmconvert.renderers.photo import open_image, decode_photo; "
                    f"print(decode_photo(open_image({str(path)!r}, 'x', 50_000_000), 300, "
                    "'x').size)")
            peak, seconds, _ = measure([sys.executable, "-c", code])
            print(f"  {name:<9} peak {peak:6.0f} MB  {seconds:5.2f} s")
        words = ("lantern harbour meadow archive signal copper river stone " * 40000)[:2_000_000]
        source = tmp / "long.jsonl"
        source.write_text(json.dumps({"question": "Which?", "context": words}) + "\n",
                          encoding="utf-8")
        print("render of one 2,000,000-character context (whole process):")
        for ppi in ("1200", "92.9"):
            peak, seconds, last = measure([sys.executable, "-m", "mmconvert.cli", "render",
                                           str(source), "--ppi", ppi, "--out",
                                           str(tmp / f"run-{ppi}"), "--no-progress"])
            print(f"  {ppi:>6} PPI peak {peak:6.0f} MB  {seconds:6.1f} s  {last[:110]}")


if __name__ == "__main__":
    main()
