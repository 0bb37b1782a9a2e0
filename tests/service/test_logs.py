"""Structured logs and request ids, against real ``tokserve serve`` processes.

Every line a server writes is JSON by default when stderr is not a terminal (here: a
file), uvicorn's lines included, with the same keys; each request has one access line
with its request id and never its content. The id a caller sends comes back in the
``X-Request-ID`` header and in every error body.
"""

from __future__ import annotations

import json
import logging.config
import re
import sys

import pytest
from servers import ServerProcess

SECRET = "secret-payload-do-not-log"
BASE_KEYS = {"time", "level", "logger", "message", "pid"}
ACCESS_KEYS = BASE_KEYS | {"request_id", "method", "route", "status", "duration_ms",
                           "tokenizer", "tokens", "bytes_in", "bytes_out"}
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00")


def _serve_and_log(tmp_path, *args: str) -> tuple[dict, str]:
    """Serve a few requests with known ids; returns ({id: response}, the log text)."""
    log = tmp_path / "server.log"
    answers = {}
    with ServerProcess("--log-level", "info", *args, log=log) as srv:
        c = srv.client
        answers["ok-1"] = c.post("/count", json={"text": f"hello {SECRET}"},
                                 headers={"X-Request-ID": "ok-1"})
        answers["bad-2"] = c.post("/encode", json={"text": f"<|endoftext|> {SECRET}"},
                                  headers={"X-Request-ID": "bad-2"})
        answers["lost-3"] = c.get(f"/no/such/{SECRET}", headers={"X-Request-ID": "lost-3"})
        answers["asset-4"] = c.get("/playground/nope.js", headers={"X-Request-ID": "asset-4"})
        answers["schema-5"] = c.post("/decode", json={"ids": "x"},
                                     headers={"X-Request-ID": "schema-5"})
        answers["media-6"] = c.post("/count", content=b"{}", headers={
            "X-Request-ID": "media-6", "Content-Type": "text/plain"})
        answers["tok-7"] = c.get(f"/tokenizers/{SECRET}", headers={"X-Request-ID": "tok-7"})
        answers["junk"] = c.post("/count", json={"text": "x"},
                                 headers={"X-Request-ID": "bad id with spaces"})
    return answers, log.read_text()


def test_every_line_is_json_and_each_request_has_one_access_line(tmp_path):
    answers, text = _serve_and_log(tmp_path)  # no --log-format: stderr is a file -> json
    lines = [json.loads(line) for line in text.splitlines()]  # every line parses
    assert all(BASE_KEYS <= set(line) and TIME.fullmatch(line["time"]) for line in lines)
    assert any(line["logger"] == "uvicorn.error" for line in lines)  # uvicorn's, same format
    access = [line for line in lines if line["logger"] == "tokserve.access"]
    assert all(set(line) == ACCESS_KEYS for line in access)
    by_id = {}
    for line in access:
        assert line["request_id"] not in by_id, "one access line per request"
        by_id[line["request_id"]] = line
    ok = by_id["ok-1"]
    assert (ok["method"], ok["route"], ok["status"]) == ("POST", "/count", 200)
    assert ok["tokenizer"] == "o200k_base@1" and ok["tokens"] == answers["ok-1"].json()["count"]
    assert ok["bytes_out"] == len(answers["ok-1"].content) and ok["bytes_in"] > 0
    assert ok["duration_ms"] > 0
    assert by_id["bad-2"]["status"] == 400 and by_id["lost-3"]["route"] == "unmatched"
    assert by_id["tok-7"]["route"] == "/tokenizers/{name}"  # the template, not the path
    assert SECRET not in text  # never request content


def test_the_callers_request_id_comes_back_in_the_header_and_every_error_body(tmp_path):
    answers, _ = _serve_and_log(tmp_path, "--log-format", "json")
    for rid, response in answers.items():
        if rid == "junk":
            continue
        assert response.headers["x-request-id"] == rid
        if response.status_code >= 400:
            assert response.json()["error"]["request_id"] == rid, (rid, response.text)
    assert {answers[k].status_code for k in answers} >= {200, 400, 404, 415, 422}
    junk = answers["junk"]  # not a short token: replaced by a fresh id
    assert junk.headers["x-request-id"] != "bad id with spaces"


def test_text_format_and_no_access_log(tmp_path):
    _, text = _serve_and_log(tmp_path, "--log-format", "text")
    access = [line for line in text.splitlines() if " tokserve.access[" in line]
    assert any(re.search(r"POST /count 200 [\d.]+ms request_id=ok-1 tokenizer=o200k_base@1 "
                         r"tokens=\d+ in=\d+ out=\d+$", line) for line in access), access
    assert all(not line.startswith("{") for line in text.splitlines())
    (tmp_path / "quiet").mkdir()
    _, text = _serve_and_log(tmp_path / "quiet", "--no-access-log")
    assert "tokserve.access" not in text and "uvicorn.error" in text


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_an_internal_error_is_logged_with_its_request_id(fmt):
    """A 500 logs the traceback under the request id, in the configured format."""
    from tokserve.service.runtime.logs import logging_config

    config = logging_config(fmt, "info")
    formatter = logging.config.DictConfigurator(config).configure_formatter(
        dict(config["formatters"]["main"]))
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("tokserve.errors").makeRecord(
            "tokserve.errors", logging.ERROR, __file__, 1,
            "unhandled error on %s (request_id=%s)", ("/count", "rid-9"), sys.exc_info())
    out = formatter.format(record)
    if fmt == "json":
        line = json.loads(out)
        assert line["level"] == "ERROR" and "rid-9" in line["message"]
        assert "ValueError: boom" in line["exc_info"]
    else:
        assert "ERROR tokserve.errors[" in out and "rid-9" in out and "ValueError: boom" in out
