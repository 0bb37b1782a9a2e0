"""/metrics as a scraper written for any Prometheus client sees it (issue 32, "day one"),
against real servers:

* process series under the standard names (``process_resident_memory_bytes``, ...),
  one per worker told apart by ``pid``, none under ``tokserve_process_*``;
* who may scrape: with an API token set, /metrics follows it, or takes its own
  ``TOKSERVE_METRICS_TOKEN``, or is open with ``TOKSERVE_METRICS_OPEN``; and the
  Kubernetes manifest, which scrapes by annotation with no credentials, sets what makes
  that scrape succeed when a token is added.
"""

from __future__ import annotations

import os

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from servers import LiveServer, ServerProcess
from tokserve.service.runtime.settings import Settings

_PROCESS = ("process_cpu_seconds_total", "process_resident_memory_bytes",
            "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
            "process_start_time_seconds")


def _samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def _fresh(url: str) -> httpx.Client:
    """A new connection each time (the kernel spreads them over the workers)."""
    return httpx.Client(base_url=url, timeout=10,
                        limits=httpx.Limits(max_keepalive_connections=0))


# ---- 6. the standard process series --------------------------------------------------------

def test_in_process_app_exports_the_standard_process_series(server):
    assert server.client.post("/count", json={"text": "hi"}).status_code == 200
    text = server.client.get("/metrics").text
    samples = _samples(text)
    assert "tokserve_process_" not in text
    for name in _PROCESS:
        assert [s.labels for s in samples[name]] == [{"pid": str(os.getpid())}], name
    assert samples["process_resident_memory_bytes"][0].value > 10 * 2**20
    assert "# TYPE process_cpu_seconds_total counter" in text  # the standard family type
    # the service's own series keep their prefix
    assert "tokserve_requests_total" in samples and "tokserve_build_info" in samples


def test_two_workers_one_standard_series_each_told_apart_by_pid():
    with ServerProcess("--workers", "2") as srv:
        for _ in range(40):
            with _fresh(srv.url) as client:
                text = client.get("/metrics").text
            samples = _samples(text)
            assert "tokserve_process_" not in text
            pids = {s.labels["pid"] for s in samples["process_resident_memory_bytes"]}
            for name in _PROCESS:  # every family lists the same workers
                assert {s.labels["pid"] for s in samples[name]} == pids, name
            if len(pids) == 2:
                break
        assert len(pids) == 2 and str(srv.proc.pid) not in pids, pids


# ---- 7. who may scrape -----------------------------------------------------------------------

def _settings(**kwargs) -> Settings:
    return Settings(_env_file=None, **kwargs)


def test_metrics_follow_the_api_token_by_default():
    with LiveServer(_settings(auth_token="api")) as srv, _fresh(srv.url) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers={"Authorization": "Bearer api"}).status_code == 200


def test_metrics_open_serves_metrics_without_a_token_and_nothing_else():
    with LiveServer(_settings(auth_token="api", metrics_open=True)) as srv, \
            _fresh(srv.url) as c:
        r = c.get("/metrics")
        assert r.status_code == 200 and "tokserve_requests_total" in r.text
        assert c.post("/count", json={"text": "hi"}).status_code == 401
        assert c.get("/tokenizers").status_code == 401
        doc = c.get("/openapi.json").json()
        assert doc["paths"]["/metrics"]["get"]["security"] == []
        assert "401" not in doc["paths"]["/metrics"]["get"]["responses"]
        assert doc["paths"]["/count"]["post"]["security"] == [{"bearer": []}]


def test_a_metrics_token_is_the_only_key_to_metrics():
    with LiveServer(_settings(auth_token="api", metrics_token="scrape")) as srv, \
            _fresh(srv.url) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers={"Authorization": "Bearer api"}).status_code == 401
        r = c.get("/metrics", headers={"Authorization": "Bearer scrape"})
        assert r.status_code == 200 and "tokserve_requests_total" in r.text
        # the scraper's token opens nothing else
        assert c.post("/count", json={"text": "hi"},
                      headers={"Authorization": "Bearer scrape"}).status_code == 401
        assert c.post("/count", json={"text": "hi"},
                      headers={"Authorization": "Bearer api"}).status_code == 200


def test_a_metrics_token_alone_guards_only_metrics():
    with LiveServer(_settings(metrics_token="scrape")) as srv, _fresh(srv.url) as c:
        assert c.post("/count", json={"text": "hi"}).status_code == 200
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers={"Authorization": "Bearer scrape"}).status_code == 200
        doc = c.get("/openapi.json").json()
        assert doc["paths"]["/metrics"]["get"]["security"] == [{"bearer": []}]
        assert doc["paths"]["/count"]["post"]["security"] == []


def test_open_and_token_together_are_refused():
    with pytest.raises(ValidationError, match="contradict"):
        _settings(metrics_open=True, metrics_token="scrape")


def test_the_manifests_annotated_scrape_succeeds_with_an_api_token_set():
    """Run the server with the Deployment's own environment (its address moved to a free
    loopback port) plus an API token, and scrape it the way its annotations say: their
    port and path, no credentials."""
    yaml = pytest.importorskip("yaml")
    from servers import REPO

    deployment = yaml.safe_load((REPO / "deploy/k8s/base/deployment.yaml").read_text())
    pod = deployment["spec"]["template"]
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    assert env["TOKSERVE_PORT"] == annotations["prometheus.io/port"]
    skip = {"TOKSERVE_HOST", "TOKSERVE_PORT", "TOKSERVE_ARTIFACTS", "TOKSERVE_WORKERS",
            "PROMETHEUS_MULTIPROC_DIR", "TMPDIR"}  # paths of the pod; the port is ours
    env = {k: v for k, v in env.items() if k not in skip}
    env["TOKSERVE_AUTH_TOKEN"] = "api-secret"
    with ServerProcess(env=env) as srv, _fresh(srv.url) as c:
        scrape = c.get(annotations["prometheus.io/path"])
        assert scrape.status_code == 200, scrape.text
        assert "tokserve_build_info" in scrape.text
        assert c.post("/count", json={"text": "hi"}).status_code == 401
