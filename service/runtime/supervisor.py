"""``tokserve serve --workers N``: N worker processes on one listening socket.

Why not uvicorn's ``Multiprocess``: it builds a plain ``uvicorn.Server`` in each worker,
with no way to hand it another class, and the workers here must drain on SIGTERM
(``worker.DrainingServer``); the metrics need ``mark_process_dead`` for every
worker that exits; and SIGHUP should reload artifacts in place in every worker rather
than restart them. What this supervisor does:

* binds the socket(s) once, before anything else (``listen``: a taken port is one
  error line and exit status 2, never a server that loads and says it serves), and
  starts N workers on them (``worker.run_worker``), each in its own process group, so
  a terminal's Ctrl+C reaches the supervisor only and every signal a worker gets comes
  from here;
* on Linux the workers are forked from the supervisor after it has imported the app and
  frozen the garbage collector's view of those objects (``gc.freeze``), as gunicorn's
  ``--preload`` does: the ~50 MB of Python, FastAPI, pydantic and uvicorn that every
  worker needs then stays one copy in memory, shared copy-on-write, instead of one per
  worker (benchmarks/worker_memory.py measures it). Elsewhere they are spawned;
* SIGTERM / SIGINT: forwarded to every worker (SIGTERM drains, SIGINT stops at once),
  then waits for them up to drain + grace + 5 s and kills what is left;
* SIGHUP: forwarded, so each worker rescans its artifact roots (hot reload);
* a worker that exits on its own is replaced (its live metrics removed first), unless
  it exited with ``STARTUP_FAILURE`` (nothing loadable): then everything stops, and the
  supervisor exits with that status.
"""

from __future__ import annotations

import copy
import errno
import gc
import importlib
import logging
import logging.config
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path

from .logs import default_format, logging_config
from .settings import Settings
from .worker import STARTUP_FAILURE, ServeOptions, run_worker

log = logging.getLogger("tokserve.supervisor")

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: What every worker imports, imported once by the supervisor before it forks them.
_PRELOAD = ("tokserve.service.http.app",)


def _start_method() -> str:
    """``fork`` where it is safe and pays (Linux; the supervisor runs no threads and no
    event loop when it forks), ``spawn`` elsewhere."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def preload() -> None:
    """Import what workers run and move it out of the collector's reach: a collection
    in a forked worker writes to every object it scans, which would copy the shared
    pages one by one (the pattern the ``gc.freeze`` documentation describes)."""
    for module in _PRELOAD:
        importlib.import_module(module)
    _preload_piece_models()
    gc.collect()
    gc.freeze()


def _preload_piece_models() -> None:
    """Build the models of the piece tokenizers (SentencePiece family) this server will
    serve, here, before the fork: every worker's load of the same file then takes the
    built model (``tokserve.preloaded``), whose pages the workers share. Byte-level
    tokenizers share mapped table files instead. A file that fails here is left to the
    worker's own load, which reports it properly."""
    from ... import preloaded
    from ...versions import read_manifest
    from .registry import discover
    from .settings import get_settings

    for version_dir in discover(get_settings().artifact_roots()):
        try:
            manifest, _ = read_manifest(version_dir)
            if manifest.get("format") == "hf_tokenizer_json":
                preloaded.preload(version_dir / manifest["tokenizer_file"])
        except Exception as e:  # noqa: BLE001 - reported by the worker that loads it
            log.debug("not preloaded: %s: %s", version_dir, e)


def _worker_main(options: ServeOptions, sockets: list[socket.socket], parent_pid: int) -> None:
    os.setpgrp()  # out of the terminal's process group: signals come from the supervisor
    # A forked worker inherits the supervisor's handlers; until uvicorn's are in place,
    # SIGTERM and SIGINT stop it (run_worker takes care of SIGHUP).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        code = run_worker(options, sockets, parent_pid=parent_pid)
    except SystemExit as exc:  # uvicorn's startup failure
        code = exc.code if isinstance(exc.code, int) else 1
    # Served and closed: skip the interpreter's teardown, which frees every tokenizer
    # object by object (0.9 s measured for the bundled four, per worker, on one core).
    logging.shutdown()
    os._exit(code)


class Supervisor:
    def __init__(self, options: ServeOptions, sockets: list[socket.socket], workers: int,
                 on_worker_exit=None) -> None:
        self.options = options
        self.sockets = sockets
        self.count = workers
        self.on_worker_exit = on_worker_exit  # called with the pid of every worker gone
        self.workers: list[BaseProcess] = []
        self.signals: list[int] = []
        self.wake = threading.Event()
        self.exit_code = 0
        self._context = multiprocessing.get_context(_start_method())
        if self._context.get_start_method() == "fork":
            preload()

    def _start(self) -> BaseProcess:
        process = self._context.Process(target=_worker_main, name="tokserve-worker",
                                        args=(self.options, self.sockets, os.getpid()))
        process.start()
        log.info("started worker %d", process.pid)
        return process

    def _on_signal(self, sig: int, frame: object) -> None:
        self.signals.append(sig)
        self.wake.set()

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _FORWARDED}
        try:
            log.info("supervisor %d: %d workers on %s:%d", os.getpid(), self.count,
                     self.options.host, self.options.port)
            self.workers = [self._start() for _ in range(self.count)]
            stopping: float | None = None  # deadline once stopping
            while self.workers:
                self.wake.wait(0.2)
                self.wake.clear()
                while self.signals:
                    sig = self.signals.pop(0)
                    self._forward(sig)
                    if sig != signal.SIGHUP and stopping is None:
                        stopping = time.monotonic() + self._stop_budget()
                        log.info("%s: stopping %d worker(s)", signal.Signals(sig).name,
                                 len(self.workers))
                stopping = self._reap(stopping)
                if stopping is not None and time.monotonic() > stopping:
                    for process in self.workers:
                        log.error("worker %d did not stop in time; killing it", process.pid)
                        process.kill()
                    stopping = float("inf")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.exit_code

    def _stop_budget(self) -> float:
        return self.options.drain_seconds + self.options.graceful_timeout + 5

    def _forward(self, sig: int) -> None:
        for process in self.workers:
            if process.pid is not None and process.is_alive():
                try:
                    os.kill(process.pid, sig)
                except ProcessLookupError:
                    pass

    def _reap(self, stopping: float | None) -> float | None:
        """Remove exited workers; replace them unless stopping. Returns ``stopping``."""
        for index, process in reversed(list(enumerate(self.workers))):
            if process.is_alive():
                continue
            process.join()
            if self.on_worker_exit is not None:
                self.on_worker_exit(process.pid)
            if stopping is not None:
                log.info("worker %d exited (status %s)", process.pid, process.exitcode)
                del self.workers[index]
            elif process.exitcode == STARTUP_FAILURE:
                log.error("worker %d could not start serving; stopping", process.pid)
                self.exit_code = STARTUP_FAILURE
                del self.workers[index]
                self._forward(signal.SIGINT)
                stopping = time.monotonic() + self._stop_budget()
            else:
                log.warning("worker %d exited (status %s); starting another", process.pid,
                            process.exitcode)
                self.workers[index] = self._start()
        return stopping


# ==== tokserve serve ==================================================================

_METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def metrics_directory() -> Iterator[Path]:
    """The directory the workers' metric files go to (metrics.py, "Multiprocess").

    ``PROMETHEUS_MULTIPROC_DIR`` when set (in Kubernetes: an emptyDir; one directory per
    server), emptied of metric files at start and at exit; else a new temporary
    directory, removed at exit. Set in the environment here, before prometheus_client
    is imported, so this process and every worker it spawns write there.
    """
    given = os.environ.get(_METRICS_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        _empty(path)
    else:
        path = Path(tempfile.mkdtemp(prefix="tokserve-metrics-"))
        os.environ[_METRICS_ENV] = str(path)
    try:
        yield path
    finally:
        if given:
            _empty(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _empty(path: Path) -> None:
    for old in path.glob("*.db"):
        old.unlink(missing_ok=True)


#: Exit status when the address cannot be listened on (nothing was started): the CLI's
#: status for a server that cannot start as configured (no artifacts at all is 2 too).
LISTEN_FAILURE = 2


class ListenError(Exception):
    """The address cannot be bound: one line says which and why."""


def listen(host: str, port: int) -> list[socket.socket]:
    """Bound sockets for ``host:port``, one per address the name resolves to (as asyncio's
    ``create_server`` binds them: ``localhost`` is 127.0.0.1 and ::1), before anything
    else starts, so a server that cannot listen fails here, in one line, and never loads
    artifacts or says it serves (``docs/SERVICE.md``, "Readiness, drain and shutdown").

    Raises:
        ListenError: the name does not resolve or an address cannot be bound.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sockets: list[socket.socket] = []
    addresses = list(dict.fromkeys(infos))
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        sockets.append(sock)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and len(addresses) > 1:  # beside its IPv4 twin
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
        except OSError as exc:
            for opened in sockets:
                opened.close()
            shown = f"[{address[0]}]" if family == socket.AF_INET6 else address[0]
            why = (exc.strerror or str(exc)).lower()
            hint = (" (another server listens there: stop it, or pick another port with "
                    "--port or TOKSERVE_PORT)" if exc.errno == errno.EADDRINUSE else "")
            raise ListenError(f"cannot listen on {shown}:{port}: {why}{hint}") from None
        sock.set_inheritable(True)
    return sockets


def serve(settings: Settings, host: str, port: int, workers: int) -> int:
    """Run the server until it is stopped; returns the exit status."""
    log_config = logging_config(settings.log_format or default_format(), settings.log_level)
    logging.config.dictConfig(copy.deepcopy(log_config))  # dictConfig consumes its input
    try:
        sockets = listen(host, port)
    except ListenError as exc:
        log.error("%s", exc)
        return LISTEN_FAILURE
    for sock in sockets:
        address = sock.getsockname()
        shown = f"[{address[0]}]" if sock.family == socket.AF_INET6 else address[0]
        log.info("listening on http://%s:%d", shown, address[1])
    options = ServeOptions(host=host, port=port, drain_seconds=settings.drain_seconds,
                           graceful_timeout=settings.graceful_timeout, log_config=log_config,
                           load_in_background=workers <= 1)
    try:
        with metrics_directory() as directory:
            if workers <= 1:
                return run_worker(options, sockets)
            from prometheus_client.multiprocess import mark_process_dead

            return Supervisor(options, sockets, workers,
                              on_worker_exit=lambda pid: mark_process_dead(pid, str(directory))
                              ).run()
    finally:
        for sock in sockets:
            sock.close()
