"""Prometheus metrics that add up across worker processes.

Exported series (the service's own prefixed ``tokserve_``; the process and platform
series under prometheus_client's standard names):

* ``requests_total{endpoint,method,status}`` and
  ``request_duration_seconds{endpoint,method,status}`` (histogram). ``endpoint`` is the
  route template (``/tokenizers/{name}``), or ``unmatched`` for 404s, so label
  cardinality stays bounded whatever paths clients send.
* ``tokens_total{tokenizer,endpoint}``: tokens returned by /encode, /count and
  /render_chat per ``name@version`` — the billing total.
* ``cache_hits_total{kind}`` / ``cache_misses_total{kind}`` (``text``: /encode and
  /count texts; ``chat``: /render_chat and chat /count); ``cache_entries`` /
  ``cache_bytes`` (summed over the live workers).
* ``artifacts_loaded{tokenizer,tokenizer_hash}`` (1 per served version) and
  ``artifact_load_failures_total``; ``artifact_reloads_total{trigger,outcome}`` (hot
  reload: trigger ``sighup`` or ``admin``, outcome ``ok`` or ``refused_some``).
* ``build_info{version,engine}`` (always 1; ``engine`` is ``compiled`` or ``fallback``).
* ``process_cpu_seconds_total``, ``process_resident_memory_bytes``,
  ``process_virtual_memory_bytes``, ``process_open_fds``, ``process_max_fds``,
  ``process_start_time_seconds``, each ``{pid}``: one series per live worker process.
* ``python_info`` (the interpreter; prometheus_client's platform collector).

Two modes, chosen by the environment when the process starts:

* **Multiprocess** (``PROMETHEUS_MULTIPROC_DIR`` set: ``tokserve serve`` sets it, see
  ``supervisor.metrics_directory``): every value lives in a per-process mmap'd file in that
  directory and a scrape of any worker merges the files of all of them
  (prometheus_client's ``MultiProcessCollector``), so counters are totals over every
  worker that ever ran in this server, dead ones included. Gauges say how they merge
  (``multiprocess_mode``): ``livesum`` for the cache, ``livemax`` for artifacts and build
  info, counting only live workers. A worker's live-gauge files are removed when it
  exits (``mark_process_dead``, by the worker and by the supervisor), and a scrape
  removes those of pids that no longer exist (a worker killed with SIGKILL).
  Process metrics are read at scrape time from ``/proc/<pid>`` of every live worker
  (``ProcessCollector`` only knows its own process, and per-process gauges set on a
  timer would be stale).
* **Single process** (the variable unset: apps built in-process by the tests, or
  served by plain ``uvicorn``): in-memory values in one ``CollectorRegistry`` per app.

Finished requests arrive in batches (``telemetry.Telemetry``, once per event-loop
turn), so an mmap'd update is paid per turn, not per request: the histogram's sum and
buckets get one increment per batch and label set (``_push``).
"""

from __future__ import annotations

import glob
import os
import re
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from .telemetry import RequestRecord, current

disable_created_metrics()  # `*_created` series double the output and help nobody here

_PID = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))


def _pid() -> int:
    """This process's id, kept (and renewed in a forked child). prometheus_client's
    multiprocess values ask for the pid on every update, to notice a fork; with
    ``os.getpid`` that is a system call per update, several per batch of requests."""
    return _PID[0]


if getattr(values.ValueClass, "_multiprocess", False):  # before any metric is made
    values.ValueClass = values.MultiProcessValue(process_identifier=_pid)

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_ENV = "PROMETHEUS_MULTIPROC_DIR"
_LIVE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db$")


def multiprocess_dir() -> str | None:
    """The multiprocess directory this process writes to, or None (single process).

    Raises:
        RuntimeError: the variable is set but prometheus_client was imported before it
            was, so values would stay in memory and scrapes would undercount.
    """
    path = os.environ.get(_ENV)
    if not path:
        return None
    if not getattr(values.ValueClass, "_multiprocess", False):
        raise RuntimeError(
            f"{_ENV} is set but prometheus_client was imported before it was; set it "
            f"before the process starts (tokserve serve does)")
    return path


class Metrics:
    """All series of one app instance (one per worker process in production)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.directory = multiprocess_dir()
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        labels = ("endpoint", "method", "status")
        self.requests = Counter("tokserve_requests", "HTTP requests.", labels, registry=r)
        self.latency = Histogram(
            "tokserve_request_duration_seconds",
            "HTTP request latency (until the response is sent).",
            labels,
            buckets=_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "tokserve_tokens", "Tokens counted per tokenizer version (billing total).",
            ("tokenizer", "endpoint"), registry=r,
        )
        self.cache_hits = Counter(
            "tokserve_cache_hits", "Result cache hits, by kind: text (/encode, /count) or "
            "chat.", ("kind",), registry=r)
        self.cache_misses = Counter(
            "tokserve_cache_misses", "Result cache misses, by kind.", ("kind",), registry=r)
        self.cache_entries = Gauge("tokserve_cache_entries", "Entries in the cache.",
                                   registry=r, multiprocess_mode="livesum")
        self.cache_bytes = Gauge(
            "tokserve_cache_bytes", "Approximate bytes held by the cache.", registry=r,
            multiprocess_mode="livesum",
        )
        self.artifacts = Gauge(
            "tokserve_artifacts_loaded", "Served artifact versions (1 each).",
            ("tokenizer", "tokenizer_hash"), registry=r, multiprocess_mode="livemax",
        )
        self.artifact_failures = Counter(
            "tokserve_artifact_load_failures", "Artifact versions refused at load.", registry=r
        )
        self.reloads = Counter(
            "tokserve_artifact_reloads", "Artifact rescans (hot reload) by trigger and outcome.",
            ("trigger", "outcome"), registry=r,
        )
        self.build_info = Gauge(
            "tokserve_build_info", "The running build: package version, engine compiled or "
            "fallback (always 1).", ("version", "engine"), registry=r,
            multiprocess_mode="livemax",
        )
        from ... import build_info

        info = build_info()
        self.build_info.labels(info["version"], info["engine"]).set(1)
        self.cache: Any = None  # the ResultCache whose size the gauges show (watch())
        self._cache_shown = (-1, -1)
        # (counter, kind) -> (child, the cache's count already added to it)
        self._cache_pushed: dict[tuple[Any, str], tuple[Any, int]] = {}
        self._artifacts_shown: set[tuple[str, str]] = set()
        self._token_children: dict[tuple[str, str], Any] = {}
        self._request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        if self.directory is None:
            PlatformCollector(registry=r)
            r.register(_Processes(None))

    # ---- per request (batched, see telemetry.py) -------------------------------------
    def record_batch(self, batch: list[RequestRecord]) -> None:
        """Telemetry sink: add a batch of finished requests to the series."""
        requests: dict[tuple[str, str, int], list[Any]] = {}
        tokens: dict[tuple[str, str], int] = {}
        for rec in batch:
            key = (rec.route, rec.method, rec.status)
            acc = requests.get(key)
            if acc is None:
                acc = requests[key] = [0, 0.0, [0] * (len(_BUCKETS) + 1)]
            acc[0] += 1
            acc[1] += rec.duration
            acc[2][bisect_left(_BUCKETS, rec.duration)] += 1  # le: first bound >= value
            if rec.tokens is not None and rec.tokenizer is not None:
                tkey = (rec.tokenizer, rec.tokens_endpoint or rec.route)
                tokens[tkey] = tokens.get(tkey, 0) + rec.tokens
        for key, (n, total, buckets) in requests.items():
            counter, histogram = self._request_child(key)
            counter.inc(n)
            _push(histogram, total, buckets)
        for tkey, n in tokens.items():
            self._token_child(tkey).inc(n)
        self.flush()

    def count_tokens(self, tokenizer: str, endpoint: str, n: int) -> None:
        """Bill ``n`` tokens of ``tokenizer`` to ``endpoint``.

        Inside a request the count goes into its record (pushed with the request's
        batch, and written to its access line); outside one, straight to the counter.
        """
        record = current.get()
        if record is None:
            self._token_child((tokenizer, endpoint)).inc(n)
            return
        record.tokenizer = tokenizer
        record.tokens_endpoint = endpoint
        record.tokens = (record.tokens or 0) + n

    def _request_child(self, key: tuple[str, str, int]) -> tuple[Any, Any]:
        children = self._request_children.get(key)
        if children is None:  # .labels() is slow-ish; keep the children
            lab = (key[0], key[1], str(key[2]))
            children = (self.requests.labels(*lab), self.latency.labels(*lab))
            self._request_children[key] = children
        return children

    def _token_child(self, key: tuple[str, str]) -> Any:
        child = self._token_children.get(key)
        if child is None:
            child = self._token_children[key] = self.tokens.labels(*key)
        return child

    # ---- state ------------------------------------------------------------------------
    def set_artifacts(self, entries: Iterable[Any]) -> None:
        """Publish exactly these loaded versions (registry entries) in the gauge: 1 for
        each, 0 for a version served before and no longer (a value in a multiprocess
        file cannot be removed, only set)."""
        served = {(entry.ref, entry.hash) for entry in entries}
        for labels in self._artifacts_shown - served:
            self.artifacts.labels(*labels).set(0)
        for labels in served:
            self.artifacts.labels(*labels).set(1)
        self._artifacts_shown = served

    def watch(self, cache: Any) -> None:
        """Show ``cache``'s size in the cache gauges and its hits and misses (which it
        counts itself, by kind: an int under the lock it holds anyway) in the counters."""
        self.flush()
        self.cache = cache
        self._cache_pushed = {
            (counter, kind): (counter.labels(kind), n)
            for counter, counts in ((self.cache_hits, cache.hits),
                                    (self.cache_misses, cache.misses))
            for kind, n in counts.items()}

    def flush(self) -> None:
        """Push what is kept in memory to the series: the cache's hits and misses since
        the last push, and its size when it changed (each worker's own; the gauges sum
        the live ones)."""
        if self.cache is not None:
            for counter, counts in ((self.cache_hits, self.cache.hits),
                                    (self.cache_misses, self.cache.misses)):
                for kind, n in counts.items():
                    child, pushed = self._cache_pushed[counter, kind]
                    if n != pushed:
                        child.inc(n - pushed)
                        self._cache_pushed[counter, kind] = (child, n)
            shown = (len(self.cache), self.cache.bytes)
            if shown != self._cache_shown:
                self._cache_shown = shown
                self.cache_entries.set(shown[0])
                self.cache_bytes.set(shown[1])

    def render(self) -> bytes:
        """The exposition of every worker (multiprocess) or of this app."""
        self.flush()
        if self.directory is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        live = live_pids(self.directory)
        registry.register(_Served(MultiProcessCollector(None, path=self.directory)))
        PlatformCollector(registry=registry)
        registry.register(_Processes(live))
        return generate_latest(registry)

    def close(self) -> None:
        """This worker is exiting: its live gauges leave the merged view now."""
        if self.directory is not None:
            self.flush()
            mark_process_dead(os.getpid(), self.directory)


def _push(histogram: Any, total: float, buckets: list[int]) -> None:
    """Add a batch of observations to a histogram child: its sum once and each
    bucket's count once, which is what ``observe`` does per observation (a
    non-cumulative count per bucket plus the sum; the exposition accumulates)."""
    histogram._sum.inc(total)
    for i, n in enumerate(buckets):
        if n:
            histogram._buckets[i].inc(n)


def live_pids(directory: str) -> list[int]:
    """Pids of the workers that have live gauges in ``directory`` and still exist; the
    live gauges of pids that are gone are removed (``mark_process_dead``)."""
    live = []
    pids = {int(m.group(1)) for path in glob.glob(os.path.join(directory, "gauge_live*.db"))
            if (m := _LIVE_FILE.search(path))}
    for pid in sorted(pids):
        if _exists(pid):
            live.append(pid)
        else:
            mark_process_dead(pid, directory)
    return live


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class _Served:
    """The merged files, less the versions no worker serves any more (0 in the
    ``artifacts_loaded`` gauge: a multiprocess value can be set, never deleted)."""

    def __init__(self, merged: MultiProcessCollector) -> None:
        self.merged = merged

    def collect(self):
        for metric in self.merged.collect():
            if metric.name == "tokserve_artifacts_loaded":
                metric.samples = [s for s in metric.samples if s.value]
            yield metric


class _Processes:
    """prometheus_client's process metrics for each live worker, labelled ``pid``
    (``pids`` None: this process).

    Under the standard names (``process_resident_memory_bytes``, ...: what
    ``ProcessCollector`` exports by default, and what dashboards and alerts written for
    any Prometheus client query), not under this service's prefix. One series per
    worker, told apart by ``pid``: a sum over ``pid`` is the server's total (memory,
    CPU, file descriptors), ``max`` its worst worker."""

    def __init__(self, pids: list[int] | None) -> None:
        self.pids = pids

    def collect(self):
        families: dict[str, Any] = {}
        for pid in self.pids if self.pids is not None else [os.getpid()]:
            collector = ProcessCollector(namespace="", pid=lambda p=pid: p,
                                         registry=None)
            for metric in collector.collect():
                family = families.get(metric.name)
                if family is None:
                    family = families[metric.name] = type(metric)(
                        metric.name, metric.documentation, labels=["pid"])
                for sample in metric.samples:
                    family.add_metric([str(pid)], sample.value)
        return list(families.values())
