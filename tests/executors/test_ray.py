"""``--executor ray`` on real local Ray clusters (on 127.0.0.1): the run folders it
writes are byte-identical to the local executor's, for render, occlude, sweep, transform and
qa check; and its bad input (Ray missing, no cluster at the address, a dying worker) is one
line.

Most commands here join one cluster that ``ray start`` keeps for the module (``cluster``), as
a user's runs join theirs; a few start a cluster of their own, as a run without
--ray-address does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, SAMPLE

pytest.importorskip("ray")
# a real local Ray cluster: the slowest tests, left out of the fast lane (pytest -m "not slow")
# slow; and run in a pytest of their own after the others (the README's test command)
pytestmark = [pytest.mark.slow, pytest.mark.ray_cluster]


def mmconvert(*args, env=None) -> subprocess.CompletedProcess:
    """The CLI in a process of its own (a Ray cluster is started and left per process)."""
    import os

    return subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def cluster():
    """The environment of a command that joins one local cluster (``ray start --head``, 4
    CPUs) kept for the module: a command that starts a cluster of its own takes about 4.5 s
    more (the shipped sample on 2 workers: 7.7 s, against 3.1 s joining one). The cluster
    keeps Ray's default, token authentication, which a driver joining by address takes up
    only with RAY_AUTH_MODE=token (Ray 2.60). It is stopped with its process group (Ray's
    workers end with their raylet), never with ``ray stop``, which would stop every
    cluster on the machine."""
    import os
    import shutil
    import signal
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: sockets go under it
    head = subprocess.Popen(
        [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
         "--num-cpus", "4", "--node-ip-address", "127.0.0.1", "--port", "0",
         "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = folder / "ray_current_cluster"
    try:
        deadline = time.time() + 120
        while not address.exists() and head.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        assert address.exists(), "ray start --head did not start"
        yield {"RAY_ADDRESS": address.read_text().strip(), "RAY_AUTH_MODE": "token"}
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # SIGTERM left its GCS and raylet running
        head.wait()
        shutil.rmtree(folder, ignore_errors=True)


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def same(a: Path, b: Path) -> None:
    left, right = tree(a), tree(b)
    assert sorted(left) == sorted(right)
    differ = [name for name in left if left[name] != right[name]]
    assert differ == [], differ


EXIT_RACE = """
import threading, time
import ray
from mmconvert.executors.ray import RayExecutor

RayExecutor(1).start()


def stage_loop():  # as a dataset's executor loop, still running past its stage's last row
    end = time.monotonic() + 3
    while time.monotonic() < end:
        ray.get(ray.put(1))
        time.sleep(0.01)
    print("the loop ended", flush=True)


threading.Thread(target=stage_loop, name="StreamingExecutor-1", daemon=True).start()
time.sleep(0.3)
"""


def test_ray_is_shut_down_at_exit_only_after_ray_datas_threads_end(cluster):
    """A Ray Data thread still calling Ray at exit is waited for before Ray is shut down:
    once shut down, its next call started Ray again from that thread (Ray's auto-init),
    and the run's stderr got "SIGTERM handler is not set ..." after its summary (seen once,
    in CI). Here such a thread runs 3 s past the script's end."""
    done = subprocess.run([sys.executable, "-c", EXIT_RACE], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **cluster})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the loop ended\n" and "SIGTERM" not in done.stderr, done.stderr


def test_render_on_ray_writes_the_local_run_folder_byte_for_byte(tmp_path, cluster):
    local, ray = tmp_path / "local", tmp_path / "ray"
    made = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", local, "--workers",
                     "2", "--pdf")
    assert made.returncode == 0, made.stderr
    started = time.perf_counter()
    made = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", ray, "--workers",
                     "2", "--pdf", "--executor", "ray")
    assert made.returncode == 0, made.stderr
    # the run's stderr is the run's own: its note and summary line, no Ray log lines
    assert [line.split(":")[0] for line in made.stderr.splitlines()] == [
        "mmlu-redux", f"9 item(s) rendered (9 page(s)) into {ray} in "
        + made.stderr.splitlines()[1].split(" in ")[1].split(":")[0]]
    assert time.perf_counter() - started < 120
    same(local, ray)

    # a sweep and a qa check of that run, on Ray, are the local ones too
    sweeps = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        sweeps[name] = tmp_path / f"sweep-{name}"
        made = mmconvert("sweep", local, "--ppi", "72,150", "--rotate", "90", "--out",
                         sweeps[name], "--workers", "2", *extra, env=cluster if extra else {})
        assert made.returncode == 0, made.stderr
    same(sweeps["local"], sweeps["ray"])

    transformed = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        transformed[name] = tmp_path / f"transform-{name}"
        made = mmconvert("transform", local, "--apply", "blur:1.5", "--apply", "jpeg:75",
                         "--out", transformed[name], "--workers", "2", *extra,
                         env=cluster if extra else {})
        assert made.returncode == 0, made.stderr
    same(transformed["local"], transformed["ray"])

    events = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        folder = tmp_path / f"qa-{name}"
        subprocess.run(["cp", "-r", str(local), str(folder)], check=True)
        made = mmconvert("qa", "check", folder, "--checks", "ocr,text_layer", "--no-progress",
                         *extra, env=cluster if extra else {})
        assert made.returncode == 0, made.stderr
        events[name] = [{k: v for k, v in json.loads(line).items() if k != "at"}
                        for line in (folder / "qa.jsonl").read_text().splitlines()]
        for event in events[name]:
            event["detail"].pop("seconds", None)
    assert events["local"] == events["ray"] and len(events["ray"]) == 18


SPY = """
import mmconvert.runfolder as runfolder

write = runfolder.RunFolder.write


def spied(self, output, *args):
    with open({log!r}, "a") as log:
        log.write(f"{{len(output.files)}} {{len(output.written)}}\\n")
    return write(self, output, *args)


runfolder.RunFolder.write = spied
"""


@pytest.mark.parametrize("store", ["files", "shards"])
def test_occlude_on_ray_writes_the_local_run_folder_byte_for_byte(tmp_path, store, cluster):
    # the driver's sink is watched: on Ray, only rows reach it (files written by the workers,
    # a sharded run's packed into shards on the cluster)
    (tmp_path / "spy").mkdir()
    (tmp_path / "spy" / "sitecustomize.py").write_text(SPY.format(log=str(tmp_path / "sink")))
    folders = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        folders[name] = tmp_path / name
        made = mmconvert("occlude", "captions", "--source", FIXTURES / "coco", "--out",
                         folders[name], "--workers", "2", "--store", store, "--shard-rows",
                         "1", *extra, env={"PYTHONPATH": str(tmp_path / "spy"), **cluster} if extra
                         else {})
        assert made.returncode == 0, made.stderr
    same(folders["local"], folders["ray"])
    assert (folders["ray"] / "shards").is_dir() == (store == "shards")
    sunk = [tuple(map(int, line.split())) for line in
            (tmp_path / "sink").read_text().splitlines()]
    rows = (folders["ray"] / "manifest.jsonl").read_text().splitlines()
    assert len(sunk) == len(rows) >= 2  # as many shards, packed at once
    assert all(files == 0 and written >= 2 for files, written in sunk), sunk


def test_a_renderer_that_leaves_items_out_by_a_rule_runs_on_ray(tmp_path):
    """The occluder drops a stacked image over --max-height (``ItemFiltered``, an error with
    a keyword-only field): the error crosses from the actor to the driver as itself, under
    --on-error skip, and the run is the local one, skips included.

    The machine also holds the address a `ray start` cluster leaves for ``ray.init()`` to
    join (``ray/ray_current_cluster`` in Ray's temporary folder): a run without --ray-address
    starts a cluster of its own all the same."""
    import shutil
    import tempfile

    # short: Ray's socket paths go under it
    ray_tmp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:9")
    folders = {}
    try:
        for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
            folders[name] = tmp_path / name
            made = mmconvert("occlude", "captions", "--source", FIXTURES / "coco", "--out",
                             folders[name], "--workers", "2", "--max-height", "240",
                             "--on-error", "skip", *extra, env={"RAY_TMPDIR": str(ray_tmp)})
            assert made.returncode == 0, made.stderr
            assert "Traceback" not in made.stderr and "TypeError" not in made.stderr
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    same(folders["local"], folders["ray"])
    skipped = [json.loads(line) for line in
               (folders["ray"] / "skipped.jsonl").read_text().splitlines()]
    assert skipped and all("over --max-height 240" in s["reason"] for s in skipped)


def test_a_killed_sharded_run_on_ray_resumes_to_the_local_shards(tmp_path, cluster):
    """Killed with shards packing on the cluster, and started again at once (the cluster
    outlives the killed driver, so a pack task of the killed run may still be running): the
    shards and manifest are the local run's."""
    import os
    import signal

    from tests.test_converter import long_items

    source = long_items(tmp_path / "docs.jsonl", n=24, words=1500)
    args = ["render", source, "--store", "shards", "--shard-rows", "3", "--workers", "2",
            "--no-progress"]
    local, out = tmp_path / "local", tmp_path / "ray"
    assert mmconvert(*args, "--out", local).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "mmconvert", *map(str, args), "--out",
                             str(out), "--executor", "ray"], stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **cluster})
    deadline = time.time() + 120
    while time.time() < deadline and len(list((out / "shards").glob("shard-*"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    recorded = (out / "manifest.jsonl").read_text().count("\n") \
        if (out / "manifest.jsonl").exists() else 0
    assert recorded < 24, "the kill should land mid-run"
    made = mmconvert(*args, "--out", out, "--executor", "ray", env=cluster)
    assert made.returncode == 0, made.stderr
    done = tree(out)
    assert json.loads(done.pop("run.json"))["status"] == "complete"  # its notes name the kill
    assert done == {name: data for name, data in tree(local).items() if name != "run.json"}


def test_no_cluster_at_the_address_is_one_line_and_quick(tmp_path):
    started = time.perf_counter()
    made = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "x",
                     "--executor", "ray", "--ray-address", "127.0.0.1:9")
    assert made.returncode == 1
    assert made.stderr.splitlines()[-1].startswith(
        "Error: no Ray cluster at 127.0.0.1:9 (ConnectionRefusedError")
    assert time.perf_counter() - started < 30
    # nothing was rendered, and the folder can be run again
    assert not (tmp_path / "x" / "manifest.jsonl").exists() or \
        (tmp_path / "x" / "manifest.jsonl").read_text() == ""


def test_a_cluster_that_asks_for_a_token_is_one_line_naming_ray_auth_mode(tmp_path, cluster):
    """Ray's own error says only "Failed to connect"; why is in the error under it."""
    made = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "x",
                     "--executor", "ray",
                     env={"RAY_ADDRESS": cluster["RAY_ADDRESS"], "RAY_AUTH_MODE": "disabled",
                          "RAY_gcs_server_port_wait_time_s": "1"})  # Ray retries 20 s else
    assert made.returncode == 1
    line = made.stderr.splitlines()[-1]
    assert line == made.stderr.strip().splitlines()[-1] and "Traceback" not in made.stderr
    assert line.startswith(f"Error: the Ray cluster at {cluster['RAY_ADDRESS']} asks for its "
                           "authentication token") and "RAY_AUTH_MODE=token" in line


def test_ray_missing_is_the_install_hint(monkeypatch):
    from mmconvert.errors import UsageError
    from mmconvert.executors.ray import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(UsageError, match=r"pip install 'mmconvert\[ray\]'"):
        import_ray()


def test_a_budget_is_refused_on_ray(tmp_path):
    made = mmconvert("generate", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "g",
                     "--executor", "ray", "--budget", "1", "--limit", "1",
                     env={"OPENAI_API_KEY": "not-a-key"})  # in this process only
    assert made.returncode == 2
    assert "--budget is kept by one process" in made.stderr.splitlines()[-1]


def test_ray_address_without_ray_is_a_usage_error(tmp_path):
    made = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "x",
                     "--ray-address", "127.0.0.1:6379")
    assert made.returncode == 2 and "--ray-address needs --executor ray" in made.stderr


def _exit_on_five(x: int) -> int:
    if x == 5:
        import os

        os._exit(1)  # the worker process dies, as a kill or the OOM killer would end it
    return x


def _dying_worker():
    return _exit_on_five


def test_a_worker_that_dies_every_time_is_one_line_not_an_endless_retry():
    from mmconvert.errors import MMConvertError
    from mmconvert.executors.ray import RayExecutor

    started = time.perf_counter()
    with pytest.raises(MMConvertError) as err:
        list(RayExecutor(2).map(_dying_worker, range(10)))
    message = str(err.value)
    assert "\n" not in message and message.startswith("a Ray worker failed (ActorDiedError")
    assert "running the command again resumes" in message
    assert time.perf_counter() - started < 120


def _side(x: int) -> int:
    if x == 5:
        import os

        os._exit(1)
    if x < 0:
        raise OSError(f"{x}: no space left on device")
    return x * 2


def test_a_side_task_runs_on_the_cluster_and_gives_its_result_or_its_error():
    from mmconvert.errors import MMConvertError
    from mmconvert.executors.ray import RayExecutor

    executor = RayExecutor(2)
    futures = [executor.submit(_side, x) for x in (1, 2, -1)]
    assert futures[0].result(timeout=120) == 2 and futures[1].result(timeout=120) == 4
    with pytest.raises(OSError, match="no space left"):  # the task's own exception
        futures[2].result(timeout=120)
    with pytest.raises(MMConvertError) as err:  # retried once, then one line
        executor.submit(_side, 5).result(timeout=120)
    assert "\n" not in str(err.value) and str(err.value).startswith("a Ray worker failed")


def test_tasks_go_to_ray_in_windows_and_come_back_in_order():
    import functools

    from mmconvert.executors.ray import RayExecutor
    from tests.executors.test_local import _worker

    executor = RayExecutor(2, window=7)
    consumed = []

    def tasks():
        for x in range(40):
            if x != 13:
                consumed.append(x)
                yield x

    results = executor.map(functools.partial(_worker, 0.0), tasks())
    first = [next(results) for _ in range(3)]
    assert first == [0, 1, 4] and len(consumed) <= 7  # one window read, not the whole list
    wanted = [x * x for x in range(40) if x != 13]
    assert first + list(results) == wanted
    with pytest.raises(ValueError, match="thirteen"):  # raised in its turn, in a later window
        list(executor.map(functools.partial(_worker, 0.0), range(20)))


def test_a_small_window_gets_smaller_batches_so_every_actor_keeps_working():
    from mmconvert.executors.ray import BATCH, batch_size

    assert batch_size(10_000, 2) == BATCH == 4  # fast items: few calls
    assert batch_size(60, 2) == 1  # 60 slow items on 2 actors: 30 calls each, not 8 and 7
    assert batch_size(100, 1) == 4 and batch_size(40, 1) == 2
    assert batch_size(1, 8) == 1


def test_dedup_embeds_on_ray_and_the_run_is_the_local_one(tmp_path, cluster):
    from tests.corpora.test_dedup import MODEL

    texts = ["The committee approved the new budget for the city library after a long debate.",
             "The committee approved the new budget for the town library after a long debate.",
             "A red fox jumped over the sleeping dog near the old wooden barn at dawn.",
             "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
             "The committee approved the new budget for the city library after a long debate."]
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps({"id": f"t{n}", "question": "Which?", "context": text,
                                          "answer": "x"}) + "\n"
                              for n, text in enumerate(texts)), encoding="utf-8")
    folders = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        folders[name] = tmp_path / name
        made = mmconvert("render", source, "--dedup", "--embedding-model", MODEL,
                         "--dedup-threshold", "0.9", "--out", folders[name], "--workers", "2",
                         "--no-progress", *extra, env=cluster if extra else {})
        assert made.returncode == 0, made.stderr
    same(folders["local"], folders["ray"])
    report = json.loads((folders["ray"] / "dedup.json").read_text())
    assert {(r["id"], r["kind"]) for r in report["removed"]} == {("t1", "near"), ("t4", "exact")}


def test_parquet_pairs_on_ray_read_their_photos_in_the_workers(tmp_path, cluster):
    import pyarrow as pa
    import pyarrow.parquet as pq

    photos = sorted((FIXTURES / "coco" / "val2017").glob("*.jpg"))
    folder = tmp_path / "vcr" / "default"
    folder.mkdir(parents=True)
    captions = [f"A man standing in front of a mirror in a small bright room number {n}."
                for n in range(6)]
    pq.write_table(pa.table({"image": [{"bytes": photos[n % len(photos)].read_bytes(),
                                        "path": "x.jpg"} for n in range(6)],
                             "caption": captions}),
                   folder / "test-00000-of-00001.parquet", row_group_size=4)
    folders = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        folders[name] = tmp_path / name
        made = mmconvert("occlude", "captions", "--source", tmp_path / "vcr", "--out",
                         folders[name], "--workers", "2", *extra,
                         env=cluster if extra else {})
        assert made.returncode == 0, made.stderr
    same(folders["local"], folders["ray"])
    assert len(list((folders["ray"] / "images").iterdir())) == 12


def test_an_address_where_something_else_listens_is_one_line_and_quick(tmp_path):
    """An HTTP server, not Ray's GCS, at --ray-address: Ray's client would wait for minutes."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.perf_counter()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        made = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "x",
                         "--executor", "ray", "--ray-address", address)
        # RAY_ADDRESS, Ray's own way to name the cluster, is taken as --ray-address is
        named = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "y",
                          "--executor", "ray", env={"RAY_ADDRESS": address})
    finally:
        server.shutdown()
    for done in (made, named):
        assert done.returncode == 1
        assert done.stderr.splitlines()[-1].startswith(
            f"Error: something listens at {address}, but it is not a Ray cluster")
    assert time.perf_counter() - started < 30


def test_a_dying_actor_prints_nothing_but_the_one_line(tmp_path):
    """Ray Data logs the failure with a traceback on stderr and the driver prints the
    raylet's word of each dead worker on stdout: a real process shows only mmconvert's line."""
    script = tmp_path / "die.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from tests.executors.test_ray import _dying_worker\n"
        "from mmconvert.errors import MMConvertError\n"
        "from mmconvert.executors.ray import RayExecutor\n"
        "try:\n"
        "    list(RayExecutor(2).map(_dying_worker, range(10)))\n"
        "except MMConvertError as err:\n"
        "    print(f'Error: {err}', file=sys.stderr)\n"
        "    sys.exit(1)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=180, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert done.stderr.startswith("Error: a Ray worker failed (ActorDiedError")
