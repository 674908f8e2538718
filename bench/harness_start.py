"""How long a harness run takes to start: from launching ``lm_eval`` (and ``lmms-eval``, where
``.venv-lmms-eval`` is made) on ``mmconvert harness``'s tasks to the first request reaching a
local OpenAI-compatible server, and to the end of the run, over the test fixtures' gsm8k and
arc_easy and their text twins (the README's example, one call).

Also, in one process: what the runtime's task object costs to build (``Harness.original``,
with lm-eval's dataset loading) and how many times lm-eval's ``ConfigurableTask`` is built
in the run (issue 54, part 6).

    python bench/harness_start.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.test_cli import run  # noqa: E402

LM = ROOT / "tests" / "fixtures" / "lm-eval"
TASKS = "gsm8k,arc_easy"
# counts lm-eval's ConfigurableTask builds and datasets.load_dataset calls in the harness's
# process (a sitecustomize on its path)
COUNTER = '''
import atexit, os, sys
def _count():
    try:
        from lm_eval.api import task
    except Exception:
        return
    import datasets
    original = task.ConfigurableTask.__init__
    built = []
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self.config.task)
    task.ConfigurableTask.__init__ = __init__
    load = datasets.load_dataset
    def load_dataset(*args, **kwargs):
        built.append("load_dataset")
        return load(*args, **kwargs)
    datasets.load_dataset = load_dataset
    atexit.register(lambda: open(os.environ["MMCONVERT_BUILT"], "w").write("\\n".join(built)))
_count()
'''


def once(harness: str, python: str, folder: Path, url: str, first: list[float],
         scratch: Path) -> tuple[float, float, list[str]]:
    names = ",".join(f"mmconvert_{t}{twin}" for t in TASKS.split(",") for twin in ("", "_text"))
    built = scratch / "built.txt"
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{scratch}{os.pathsep}{ROOT}",
           "MMCONVERT_BUILT": str(built)}
    if harness == "lm-eval":
        args = [python, "-m", "lm_eval", "--model", "local-chat-completions",
                "--apply_chat_template", "--model_args",
                f"model=reader-1,base_url={url}/chat/completions,max_images=4,"
                "num_concurrent=1,max_retries=1"]
    else:
        args = [python, "-m", "lmms_eval", "--model", "openai", "--model_args",
                f"model_version=reader-1,base_url={url},num_concurrent=1,max_retries=1"]
    args += ["--tasks", names, "--include_path", str(folder),
             "--output_path", str(scratch / "out")]
    first.clear()
    start = time.time()
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=scratch)
    end = time.time()
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    tasks = built.read_text().split("\n") if built.is_file() else []
    return first[0] - start, end - start, tasks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    given = parser.parse_args()
    first: list[float] = []

    def answer(body):
        if not first:
            first.append(time.time())
        return "Answer: A #### 7"

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    lmms = ROOT / ".venv-lmms-eval" / "bin" / "python"
    try:
        with tempfile.TemporaryDirectory() as scratch_dir:
            scratch = Path(scratch_dir)
            (scratch / "sitecustomize.py").write_text(COUNTER)
            for harness, python in (("lm-eval", sys.executable), ("lmms-eval", str(lmms))):
                if not Path(python).is_file():
                    print(f"{harness}: not installed here ({python}); skipped")
                    continue
                folder = scratch / harness
                result = run("harness", harness, TASKS, "--recipe", "readbench", "--source",
                             LM, "--out", folder)
                assert result.exit_code == 0, result.output
                starts, totals = [], []
                for _ in range(given.repeat):
                    to_first, total, built = once(harness, python, folder, url, first, scratch)
                    starts.append(to_first)
                    totals.append(total)
                tasks = [name for name in built if name != "load_dataset"]
                print(f"{harness}: first request after {statistics.median(starts):.2f} s "
                      f"(runs {', '.join(f'{s:.2f}' for s in starts)}), whole run "
                      f"{statistics.median(totals):.2f} s; lm-eval's ConfigurableTask built "
                      f"{len(tasks)} times ({', '.join(sorted(tasks))}); datasets loaded "
                      f"{built.count('load_dataset')} times")
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
