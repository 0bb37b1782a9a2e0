"""A client that trickles its request cannot hold a connection (issue 33): the request's
head and body have deadlines (``service/http/deadlines.py``), checked on a real server over
raw sockets with deadlines of a fraction of a second."""

from __future__ import annotations

import socket
import time

import pytest
from websockets.sync.client import connect

from tokserve.service.runtime.settings import Settings

DEADLINE = 0.6


@pytest.fixture(scope="module")
def strict(live_server):
    settings = Settings(_env_file=None, header_timeout=DEADLINE, body_timeout=DEADLINE)
    with live_server(settings) as srv:
        yield srv


def _connect(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def _read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    start = time.monotonic()
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data, time.monotonic() - start
        data += chunk


def test_deadlines_headers_that_never_finish_are_408_and_closed(strict):
    with _connect(strict) as sock:
        sock.sendall(b"POST /count HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n")
        data, waited = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 408 ") and b'"request_timeout"' in data, data[:200]
    assert waited < DEADLINE + 5


def test_deadlines_a_silent_connection_is_closed(strict):
    with _connect(strict) as sock:
        data, waited = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 408 ") and waited < DEADLINE + 5


def test_deadlines_a_body_that_never_finishes_is_408_and_closed(strict):
    with _connect(strict) as sock:
        sock.sendall(b"POST /count HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
                     b"content-length: 100\r\n\r\n{\"text\": ")
        data, waited = _read_until_closed(sock)
    assert data.startswith(b"HTTP/1.1 408 ") and b"body" in data, data[:200]


def test_deadlines_a_trickle_cannot_keep_resetting_them(strict):
    """One byte of the head every fifth of the deadline: still cut at the deadline."""
    request = b"POST /count HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n" * 4
    with _connect(strict) as sock:
        start = time.monotonic()
        try:
            for byte in request:
                sock.sendall(bytes([byte]))
                time.sleep(DEADLINE / 5)
                if time.monotonic() - start > DEADLINE + 5:
                    break
        except OSError:
            pass  # closed under us: what we want
        data, _ = _read_until_closed(sock)
    assert time.monotonic() - start < DEADLINE + 5
    assert data.startswith(b"HTTP/1.1 408 "), data[:200]


def test_deadlines_a_prompt_client_is_served_on_a_kept_alive_connection(strict):
    with _connect(strict) as sock:
        for _ in range(2):
            body = b'{"text": "hello world"}'
            sock.sendall(b"POST /count HTTP/1.1\r\nhost: t\r\ncontent-type: application/json"
                         b"\r\ncontent-length: %d\r\n\r\n" % len(body))
            time.sleep(DEADLINE / 3)  # slow, but within the deadline
            sock.sendall(body)
            reply = sock.recv(65536)
            assert reply.startswith(b"HTTP/1.1 200 ") and b'"count":2' in reply, reply[:300]
            time.sleep(DEADLINE * 1.5)  # idle between requests: keep-alive's business


def test_deadlines_a_streamed_body_may_last_while_it_keeps_coming(strict):
    """NDJSON into /decode/stream: a model's tokens, for longer than the deadline, a
    chunk at a time well within it."""
    with _connect(strict) as sock:
        sock.sendall(b"POST /decode/stream HTTP/1.1\r\nhost: t\r\n"
                     b"content-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n")
        for ids in ([24912], [2375], [0], [1]):
            line = b'{"ids": %s}\n' % str(ids).encode()
            sock.sendall(b"%x\r\n%s\r\n" % (len(line), line))
            time.sleep(DEADLINE / 2)
        sock.sendall(b"0\r\n\r\n")
        data, _ = _read_until_closed_or_done(sock)
    assert data.startswith(b"HTTP/1.1 200 "), data[:300]
    assert b"hello" in data and b" world" in data


def _read_until_closed_or_done(sock: socket.socket) -> tuple[bytes, float]:
    start = time.monotonic()
    data = b""
    sock.settimeout(5)
    while not data.endswith(b"0\r\n\r\n"):
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - start


def test_deadlines_leave_a_websocket_open(strict):
    url = strict.url.replace("http://", "ws://") + "/decode/stream"
    with connect(url) as ws:
        time.sleep(DEADLINE * 2)
        ws.send('{"ids": [24912]}')
        frame = ws.recv(timeout=10)
    assert "hello" in frame
