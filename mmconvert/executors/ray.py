"""The Ray Data executor: the same ordered map, run as a Ray Data ``map_batches`` stage over a
pool of actors, on a local Ray cluster of ``--workers`` CPUs or the cluster at
``--ray-address``.

Each actor builds its own worker once (``make_worker``, pickled, as for worker processes);
tasks and results cross the object store pickled; the dataset keeps task order
(``preserve_order``), so the caller's one sink writes exactly what the local executors write:
the same manifest rows in the same order, the same bytes. A worker that needs threads (OCR,
network requests) runs its batch in that many threads inside the actor.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import pickle
import socket
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from ..errors import MMConvertError, UsageError, first_line, needs
from .base import ClusterExecutor

INSTALL_HINT = needs("--executor ray", "Ray", "ray")
# tasks a batch (an actor call) at most; small, so that results stream back in order soon
BATCH = 4
# batches each actor gets in a window at least (a smaller window gets smaller batches): the
# window's last batches leave the other actors idle, at most about 1/16 of its time
BATCHES_PER_ACTOR = 16
# tasks a Ray Data stage, and their pickled bytes at most (captions carry their photos): what
# the driver holds at once (each stage starts its actors again)
WINDOW = 10_000
WINDOW_BYTES = 256 * 2**20
RETRIES = 1
# Ray Data's threads in the driver, waited for at exit before Ray is shut down (``_shutdown``)
RAY_DATA_THREADS = ("StreamingExecutor-", "ray-data-metadata-prefetch")
LINGER = 30.0  # seconds they are waited for, in all


def import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def reachable(address: str, timeout: float = 5.0) -> None:
    """A one-line error unless something listens at ``address`` (host:port; Ray's own
    client would retry for minutes)."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as sock:
            speaks = speaks_grpc(sock)
    except (OSError, ValueError) as err:
        raise MMConvertError(f"no Ray cluster at {address} ({err.__class__.__name__}: "
                             f"{err}); start one with `ray start --head`, or leave out "
                             "--ray-address for a local one") from None
    if not speaks:  # Ray's client would wait for minutes on a port that is not its GCS
        raise MMConvertError(f"something listens at {address}, but it is not a Ray cluster "
                             "(no gRPC answer within "
                             f"{timeout:g} s); give the head node's GCS port (ray start "
                             "--head prints it, 6379 by default)")


def asks_for_token(err: BaseException) -> bool:
    """Whether Ray could not join a cluster because the cluster wants a token this process
    did not send (Ray 2.60 starts clusters with token authentication, and a driver that
    names the address sends the token only with RAY_AUTH_MODE=token; its error says only
    "Failed to connect", the reason is in the error it was raised from)."""
    return any("InvalidAuthToken" in str(cause) for cause in _causes(err))


def speaks_grpc(sock: socket.socket) -> bool:
    """Whether the server on ``sock`` answers as an HTTP/2 (gRPC) server does, as Ray's GCS
    is: its first frame after the client's preface is SETTINGS (RFC 9113, 3.4)."""
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    head = b""
    try:
        while len(head) < 9:
            got = sock.recv(9 - len(head))
            if not got:
                return False
            head += got
    except TimeoutError:
        return False
    return head[3] == 0x04


def _quiet_ray() -> None:
    """Keep Ray's own reports of a dying actor out of the run's output: mmconvert turns what
    ends a run into its one line (``_failure``), and a retried task needs no word. Ray Data
    logs the failure with its traceback (stderr), and the driver's raylet listener prints
    worker deaths on stdout, where a command's own output (``--json``) goes; both go to the
    ``mmconvert.ray`` logger at debug level instead."""
    import ray._private.worker as ray_worker

    for name in ("ray.data", "ray"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "quieted", False):
        return

    def print_to_stdstream(data, ignore_prefix: bool):
        if isinstance(data, dict) and data.get("pid") == "raylet":
            for line in data.get("lines") or []:
                logging.getLogger("mmconvert.ray").debug("raylet: %s", line)
            return
        printer(data, ignore_prefix)

    setattr(print_to_stdstream, "quieted", True)  # noqa: B010 - a mark on a function
    ray_worker.print_to_stdstream = print_to_stdstream


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null for the duration (Ray writes to it from C++)."""
    import os
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _shutdown(ray, linger: float = LINGER) -> None:
    """Ray shut down at exit, once Ray Data's threads in this process have ended. A dataset's
    executor stops its loop with a join of 2 s; under load the loop outlives that, and a Ray
    call it makes after the shutdown starts Ray again from its thread (Ray's auto-init),
    which writes "SIGTERM handler is not set because current thread is not the main
    thread." on the run's stderr after its summary (seen once, in CI, with tests beside)."""
    deadline = time.monotonic() + linger
    for thread in threading.enumerate():
        if thread.name.startswith(RAY_DATA_THREADS) and thread is not threading.current_thread():
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    ray.shutdown()


class _Actor:
    """A Ray Data callable class; ``payload`` (the pickled ``make_worker``) and ``threads``
    are set on a subclass made per run, so no constructor argument goes through the object
    store."""

    payload: bytes = b""
    threads: int | None = None
    remote: bytes = pickle.dumps(None)

    def __init__(self):
        worker = pickle.loads(self.payload)()
        after = pickle.loads(self.remote)
        self.worker = worker if after is None else (lambda task: after(worker(task)))
        self.pool = None
        if self.threads and self.threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(max_workers=self.threads)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        tasks = [pickle.loads(task) for task in batch["task"]]
        results = (list(self.pool.map(self._one, tasks)) if self.pool
                   else [self._one(task) for task in tasks])
        return {"index": batch["index"], "result": results}

    def _one(self, task) -> bytes:
        """A task's result, or the exception it raised, as data: the driver raises it in
        its turn, as the local executors do (Ray would wrap it and lose its type)."""
        try:
            return pickle.dumps((True, self.worker(task)))
        except Exception as err:  # noqa: BLE001 - handed to the driver whole
            try:
                return pickle.dumps((False, err))
            except Exception:  # noqa: BLE001 - an exception that cannot be pickled
                return pickle.dumps((False, MMConvertError(first_line(err, kind=True))))


class RayExecutor(ClusterExecutor):
    name = "ray"
    description = ("Ray Data: a local Ray cluster of --workers CPUs, or the cluster at "
                   "--ray-address")

    def __init__(self, workers: int = 1, *, address: str | None = None,
                 threads: int | None = None, window: int = WINDOW, gpu: bool = False):
        # gpu: one actor per GPU of the cluster, when it has GPUs
        super().__init__(workers, address=address, threads=threads, gpu=gpu)
        self.window = window
        self._remote: dict[Callable[..., Any], Any] = {}  # ``submit``'s Ray functions

    def start(self) -> bool:
        """Join the cluster (or start a local one); whether this call started it."""
        import os

        # Ray's C++ core logs warnings about its own internals to stderr; a run's stderr is
        # for the run's notes and its one summary line
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
        ray = import_ray()
        if ray.is_initialized():
            return False
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                   "configure_logging": False,
                                   "logging_level": logging.WARNING}
        # Ray's own convention: RAY_ADDRESS names the cluster when --ray-address does not
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address:
            reachable(address)
            options["address"] = address
        else:  # "local": a cluster of its own, never one that `ray start` left running here
            options.update(address="local", num_cpus=self.workers,
                           _node_ip_address="127.0.0.1")
        try:
            with _quiet_stderr():  # Ray's start-up banner and C++ log lines
                ray.init(**options)
        except Exception as err:  # noqa: BLE001 - Ray raises many kinds; one line for all
            if address and asks_for_token(err):
                raise MMConvertError(
                    f"the Ray cluster at {address} asks for its authentication token, which "
                    "Ray sends when joining by address only with RAY_AUTH_MODE=token (the "
                    "token from ~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN)"
                ) from None
            raise MMConvertError(f"could not start or join Ray: {first_line(err)}") from None
        # one cluster for the whole invocation (a sweep maps once a variant), left at exit
        atexit.register(_shutdown, ray)
        return True

    def map(self, make_worker: Callable[[], Callable[[Any], Any]],
            tasks: Iterable[Any], *,
            remote: Callable[[Any], Any] | None = None) -> Generator[Any, None, None]:
        ray = import_ray()
        self.start()
        _quiet_ray()
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        context.print_on_execution_start = False
        actor = type("MMConvertWorker", (_Actor,),
                     {"payload": pickle.dumps(make_worker), "threads": self.threads,
                      "remote": pickle.dumps(remote)})
        tasks = iter(tasks)
        start = 0
        # the tasks go in windows of ``window`` (or WINDOW_BYTES), each one Ray Data stage:
        # the driver never holds more than a window of them (a run is not read in at once)
        while True:
            rows: list[dict[str, Any]] = []
            size = 0
            for task in tasks:
                rows.append({"index": start + len(rows), "task": pickle.dumps(task)})
                size += len(rows[-1]["task"])
                if len(rows) >= self.window or size >= WINDOW_BYTES:
                    break
            if not rows:
                return
            try:
                yield from self._stage(ray, actor, rows, start)
            except _Raised as raised:
                raise raised.error from None
            except MMConvertError:
                raise
            except Exception as err:  # noqa: BLE001 - a worker died, or a task raised
                raise _failure(err) from None
            start += len(rows)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """``fn(*args)`` as a Ray task: no CPU of its own (a side task, mostly I/O, must not
        wait for the actors of a stage that holds every CPU), spread over the cluster's
        nodes, retried once if its worker dies."""
        ray = import_ray()
        self.start()
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = ray.remote(fn).options(
                num_cpus=0, max_retries=RETRIES, scheduling_strategy="SPREAD")
        result: Future = Future()

        def settle(done: Future) -> None:
            try:
                result.set_result(done.result())
            except Exception as err:  # noqa: BLE001 - given to the caller as local ones are
                result.set_exception(_failure(err))

        remote.remote(*args).future().add_done_callback(settle)
        return result

    def _stage(self, ray, actor, rows: list[dict[str, Any]], start: int) -> Iterator[Any]:
        """One window of tasks as a ``map_batches`` stage over an actor pool; results in
        task order, a task's exception raised (as ``_Raised``) in its turn."""
        # an actor that dies (killed, out of memory) is restarted and its batch tried once
        # more; a task that kills its worker every time fails the run, instead of Ray's
        # default of retrying for ever
        resources: dict[str, float] = {"num_cpus": 1 if not self.threads else 0.5}
        actors = self.workers
        gpus = int(ray.cluster_resources().get("GPU", 0)) if self.gpu else 0
        if gpus:
            resources["num_gpus"] = 1
            actors = gpus
        with warnings.catch_warnings():  # Ray 2.60 warns of its own keyword handling
            warnings.simplefilter("ignore")
            dataset = ray.data.from_items(rows).map_batches(
                actor, batch_size=batch_size(len(rows), actors),
                concurrency=min(actors, len(rows)),
                max_restarts=RETRIES, max_task_retries=RETRIES, **resources)
        expected = start
        for task in dataset.iter_rows():
            if task["index"] != expected:  # preserve_order guarantees it; be sure
                raise MMConvertError(f"Ray returned task {task['index']} where "
                                     f"{expected} was due")
            expected += 1
            ok, value = pickle.loads(task["result"])
            if not ok:
                raise _Raised(value)
            yield value


def batch_size(tasks: int, actors: int) -> int:
    """Tasks an actor call takes in a window of ``tasks``: ``BATCH``, or fewer when the window
    is too small to give every actor ``BATCHES_PER_ACTOR`` calls (a call costs a few ms, so
    fast items want batches; a short run of slow ones wants its work spread evenly)."""
    return max(1, min(BATCH, tasks // (actors * BATCHES_PER_ACTOR)))


class _Raised(Exception):  # noqa: N818 - a carrier, not an error of its own
    """A task's exception on its way out of the loop, past the handler of Ray's errors."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def _failure(err: BaseException) -> BaseException:
    """What a Ray failure is to the caller: the task's own exception, as local executors give
    it, or one line saying a worker failed (it died, or the cluster went)."""
    raised = _task_error(err)
    if raised is not None:
        return raised
    return MMConvertError(f"a Ray worker failed ({first_line(err, kind=True)}); what was "
                          "written stays, and running the command again resumes")


def _task_error(err: BaseException) -> BaseException | None:
    """The exception a task raised, out of Ray's wrappers (``UserCodeException``,
    ``RayTaskError``); None when Ray itself failed (a worker died, the cluster went)."""
    return next((cause for cause in _causes(err)
                 if not type(cause).__module__.startswith("ray")), None)


def _causes(err: BaseException) -> Iterator[BaseException]:
    """``err``, then what it was raised from, in turn (Ray's wrappers keep the task's own
    exception as ``cause``), each once."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = getattr(current, "cause", None) or current.__cause__
