"""The executor seam: one ordered map, whatever the backend; workers die with their parent;
pools live nowhere else; ``import mmconvert.config`` stays light."""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmconvert.executors import EXECUTORS, local_executor

PACKAGE = Path(__file__).resolve().parents[2] / "mmconvert"


def _slow_square(delay: float, x: int) -> int:
    time.sleep(delay * ((x * 7) % 5))  # later tasks often finish first
    if x == 13:
        raise ValueError("thirteen")
    return x * x


def _worker(delay: float):
    return functools.partial(_slow_square, delay)


@pytest.mark.parametrize("name", [pytest.param(n, marks=(pytest.mark.slow,
                                                          pytest.mark.ray_cluster))
                                  if n == "ray" else n for n in EXECUTORS.names()])
def test_every_executor_maps_in_task_order(name):
    executor = EXECUTORS.get(name)(3)
    assert executor.name == name and executor.description
    tasks = [x for x in range(40) if x != 13]
    assert list(executor.map(functools.partial(_worker, 0.002), tasks)) == [x * x for x in tasks]
    with pytest.raises(ValueError, match="thirteen"):
        list(executor.map(functools.partial(_worker, 0.0), range(20)))


def test_local_executor_choice():
    assert local_executor(1, 10).name == "inline"
    assert local_executor(4, 1).name == "inline"
    assert local_executor(2, 10).name == "process"
    assert local_executor(1, 10, threads=8).name == "thread"


def test_process_workers_die_with_their_parent(tmp_path):
    script = (
        "import functools, os, sys, time\n"
        "from mmconvert.executors import EXECUTORS\n"
        "def sleepy(x):\n"
        "    os.write(1, f'{os.getpid()}\\n'.encode())  # one write: lines do not interleave\n"
        "    time.sleep(120)\n"
        "def make():\n"
        "    return sleepy\n"
        "list(EXECUTORS.get('process')(2).map(make, range(2)))\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=tmp_path)
    try:
        workers = [int(parent.stdout.readline()) for _ in range(2)]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        alive = workers
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [pid for pid in workers if _alive(pid)]
        assert alive == [], "pool workers outlived their killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def test_pools_live_only_in_the_executors():
    found = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if "executors" not in p.parts
             and re.search(r"(Process|Thread)PoolExecutor", p.read_text(encoding="utf-8"))]
    assert found == []


def test_importing_the_config_stays_light():
    code = ("import sys, mmconvert.config; "
            "print(sorted({'numpy', 'openai', 'PIL', 'pymupdf', 'mmconvert.api.client'} "
            "& set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
