"""OpenTelemetry spans (service/tracing.py), an opt-in extra.

On: each request is a server span named after its route template, with the request
id, status, tokenizer and tokens, and its stages (``parse``, ``encode``, ``render``)
nest under it. Off, or without OpenTelemetry importable: the app serves the same, and
tokserve's code neither imports OpenTelemetry nor wraps anything (checked in a fresh
interpreter).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tokserve.service.runtime.settings import Settings

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="needs the [otel] extra")


@pytest.fixture(scope="module")
def spans():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def _ours(exporter) -> list:
    return [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == "tokserve"]


def test_each_request_is_a_span_with_its_stages(live_server, bundled, spans):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent,
                        otel=True, thread_offload_chars=1000)
    with live_server(settings) as srv:
        spans.clear()
        r = srv.client.post("/encode", json={"text": "hello world"},
                            headers={"X-Request-ID": "trace-me-1"})
        assert r.status_code == 200
        srv.client.post("/count", json={"text": "x" * 2000})  # offloaded to a thread
        srv.client.post("/render_chat", json={"tokenizer": "deepseek-v4",
                                              "messages": [{"role": "user", "content": "hi"}]})
        srv.client.get("/tokenizers/nope")
    done = _ours(spans)
    by_name: dict[str, list] = {}
    for span in done:
        by_name.setdefault(span.name, []).append(span)
    (encode,) = by_name["POST /encode"]
    assert encode.kind.name == "SERVER"
    assert encode.attributes["tokserve.request_id"] == "trace-me-1"
    assert encode.attributes["http.route"] == "/encode"
    assert encode.attributes["http.response.status_code"] == 200
    assert encode.attributes["tokserve.tokenizer"] == "o200k_base@1"
    assert encode.attributes["tokserve.tokens"] == 2
    children = {s.name for s in done if s.parent is not None
                and s.parent.span_id == encode.context.span_id}
    assert children == {"parse", "encode"}
    (count,) = by_name["POST /count"]
    (work,) = [s for s in done if s.parent is not None and s.name == "encode"
               and s.parent.span_id == count.context.span_id]
    assert work.attributes["tokserve.offloaded"] is True  # a child across the thread hop
    (chat,) = by_name["POST /render_chat"]
    assert {s.name for s in done if s.parent is not None
            and s.parent.span_id == chat.context.span_id} == {"parse", "render"}
    (missing,) = by_name["GET /tokenizers/{name}"]
    assert missing.attributes["http.response.status_code"] == 404


def test_off_or_not_installed_costs_nothing(tmp_path):
    """In a fresh interpreter: with tracing off, no tokserve module imports anything of
    OpenTelemetry (every ``import`` statement is watched; FastAPI >= 0.165 imports the
    API itself, so the process has it either way) and nothing of ours wraps the state;
    with tracing asked for while tokserve cannot import it (as if it were not installed),
    the server says why and serves without spans."""
    script = textwrap.dedent("""
        import builtins, sys
        ours = []
        blocked = "--blocked" in sys.argv
        real_import = builtins.__import__

        def watched(name, globals=None, locals=None, fromlist=(), level=0):
            caller = (globals or {}).get("__name__", "")
            if name.startswith("opentelemetry") and caller.startswith("tokserve"):
                ours.append((caller, name))
                if blocked:
                    raise ImportError(f"No module named {name!r}")
            return real_import(name, globals, locals, fromlist, level)

        builtins.__import__ = watched
        import asyncio, logging
        from tokserve.service.http.app import create_app
        from tokserve.service.runtime.state import ServiceState
        from tokserve.service.runtime.settings import Settings

        logging.basicConfig(level=logging.WARNING)
        app = create_app(Settings(_env_file=None, otel=blocked))
        assert app.tracing is None

        async def main():
            fastapi_app = app.app
            async with fastapi_app.router.lifespan_context(fastapi_app):
                assert type(fastapi_app.state.service) is ServiceState
                sent = []
                async def receive():
                    return {"type": "http.request", "body": b'{"text": "hi"}'}
                async def send(message):
                    sent.append(message)
                await app({"type": "http", "method": "POST", "path": "/count",
                           "headers": [(b"content-type", b"application/json")]},
                          receive, send)
                assert sent[0]["status"] == 200, sent
        asyncio.run(main())
        print(ours)
    """)
    for args in ([], ["--blocked"]):
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        imported = done.stdout.strip()
        if not args:
            assert imported == "[]"  # off: tokserve imported nothing of OpenTelemetry
        else:
            assert "tokserve.service.runtime.tracing" in imported  # it tried, and was refused
            assert "OpenTelemetry is not installed" in done.stderr
