"""Prometheus metrics, one ``CollectorRegistry`` per app (tests build many apps).

Exported series (all prefixed ``tokserve_``):

* ``requests_total{endpoint,method,status}`` and
  ``request_duration_seconds{endpoint,method,status}`` (histogram). ``endpoint`` is the
  route template (``/tokenizers/{name}``), or ``unmatched`` for 404s, so label
  cardinality stays bounded whatever paths clients send.
* ``tokens_total{tokenizer,endpoint}``: tokens returned by /encode, /count and
  /render_chat per ``name@version`` — the billing total.
* ``cache_hits_total{kind}`` / ``cache_misses_total{kind}`` (``text``: /encode and
  /count texts; ``chat``: /render_chat and chat /count); ``cache_entries`` /
  ``cache_bytes``.
* ``artifacts_loaded{tokenizer,tokenizer_hash}`` (1 per served version) and
  ``artifact_load_failures_total``; ``artifact_reloads_total{trigger,outcome}`` (hot
  reload: trigger ``sighup`` or ``admin``, outcome ``ok`` or ``refused_some``).

With ``--workers N`` each worker process keeps its own counters (scrape each worker, or
run one worker per container and let the load balancer fan out, as docker-compose does).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

disable_created_metrics()  # `*_created` series double the output and help nobody here

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """All series of one app instance."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
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
        self.cache_hits = Counter("tokserve_cache_hits", "Result cache hits, by kind: text "
                                  "(/encode, /count) or chat.", ("kind",), registry=r)
        self.cache_misses = Counter("tokserve_cache_misses", "Result cache misses, by kind.",
                                    ("kind",), registry=r)
        self.cache_entries = Gauge("tokserve_cache_entries", "Entries in the cache.", registry=r)
        self.cache_bytes = Gauge(
            "tokserve_cache_bytes", "Approximate bytes held by the cache.", registry=r
        )
        self.artifacts = Gauge(
            "tokserve_artifacts_loaded", "Served artifact versions (1 each).",
            ("tokenizer", "tokenizer_hash"), registry=r,
        )
        self.artifact_failures = Counter(
            "tokserve_artifact_load_failures", "Artifact versions refused at load.", registry=r
        )
        self.reloads = Counter(
            "tokserve_artifact_reloads", "Artifact rescans (hot reload) by trigger and outcome.",
            ("trigger", "outcome"), registry=r,
        )
        self._token_children: dict[tuple[str, str], Counter] = {}
        self._request_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def observe_request(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        key = (endpoint, method, status)
        children = self._request_children.get(key)
        if children is None:  # .labels() is slow-ish; keep the children
            lab = (endpoint, method, str(status))
            children = (self.requests.labels(*lab), self.latency.labels(*lab))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def set_artifacts(self, entries: Iterable[Any]) -> None:
        """Publish exactly these loaded versions (registry entries) in the gauge."""
        self.artifacts.clear()
        for entry in entries:
            self.artifacts.labels(entry.ref, entry.hash).set(1)

    def count_tokens(self, tokenizer: str, endpoint: str, n: int) -> None:
        child = self._token_children.get((tokenizer, endpoint))
        if child is None:
            child = self.tokens.labels(tokenizer, endpoint)
            self._token_children[(tokenizer, endpoint)] = child
        child.inc(n)

    def render(self) -> bytes:
        return generate_latest(self.registry)
