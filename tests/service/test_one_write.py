"""A response the middleware builds whole leaves the server in one write (``one_write``).

Observed where it matters, in the kernel: the client socket's TCP_INFO counts the
segments it received (``tcpi_segs_in``, Linux ≥ 4.2). Under stock uvicorn every
response is two (head, then body); here the direct routes and the middleware's own
refusals are one. Responses that must not be held (HEAD answers, streaming, the
framework's routes) still arrive whole.
"""

from __future__ import annotations

import socket
import struct
import sys

import httpx
import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(socket, "TCP_INFO"),
    reason="counts TCP segments through Linux's TCP_INFO")

_SEGS_IN = 140  # offset of tcpi_segs_in in struct tcp_info (linux/tcp.h, stable ABI)


def _segments_in(sock: socket.socket) -> int:
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256),
                              _SEGS_IN)[0]


class _Connection:
    """One keep-alive HTTP/1.1 connection, read response by response."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buffer = b""

    def request(self, method: str, path: str, body: bytes = b"",
                content_type: str = "application/json",
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        lines = [f"{method} {path} HTTP/1.1", "host: test",
                 f"content-length: {len(body)}", f"content-type: {content_type}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                      if line.lower().startswith(b"content-length:"))
        if method == "HEAD":
            length = 0
        while len(self.buffer) < length:
            self._read()
        payload, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, payload

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, "the server closed the connection"
        self.buffer += chunk

    def segments_per_response(self, n: int = 40, **request) -> float:
        """Mean segments received per response over ``n`` requests (after one warm-up)."""
        status, _ = self.request(**request)
        before = _segments_in(self.sock)
        for _ in range(n):
            assert self.request(**request)[0] == status
        return (_segments_in(self.sock) - before) / n


@pytest.fixture(scope="module")
def served(server_process):
    with server_process("--workers", "1") as srv:
        yield srv


REQUESTS = {
    "count": dict(method="POST", path="/count", body=b'{"text":"hello world"}'),
    "encode": dict(method="POST", path="/encode",
                   body=b'{"text":"hello world","return_offsets":true}'),
    "decode": dict(method="POST", path="/decode", body=b'{"ids":[24912,2375]}'),
    "422 from the operation": dict(method="POST", path="/count", body=b'{"txt":"a"}'),
    "415 refusal": dict(method="POST", path="/count", body=b"hello", content_type="text/plain"),
}


@pytest.mark.parametrize("name", REQUESTS)
def test_a_direct_response_is_one_segment(served, name):
    conn = _Connection(served.port)
    per_response = conn.segments_per_response(**REQUESTS[name])
    # one data segment per response; a pure ACK now and then (a slow answer lets the
    # delayed-ACK timer fire first) stays well under the two that stock uvicorn sends
    assert 1 <= per_response < 1.5, per_response


def test_the_framework_routes_are_unchanged(served):
    """Not asked to hold: a GET through FastAPI is written as before, head then body."""
    conn = _Connection(served.port)
    assert conn.segments_per_response(method="GET", path="/healthz") >= 1.9


def test_held_heads_never_strand_a_response(server_process):
    """HEAD answers and refusals have no body write to join: the head goes alone,
    and the keep-alive connection goes on serving."""
    with server_process("--workers", "1", env={"TOKSERVE_AUTH_TOKEN": "t0ken"}) as srv:
        conn = _Connection(srv.port)
        for _ in range(3):
            assert conn.request("HEAD", "/healthz")[0] == 200
            assert conn.request("HEAD", "/tokenizers")[0] == 401
            assert conn.request("POST", "/count", b'{"text":"hi"}')[0] == 401
            status, body = conn.request("POST", "/count", b'{"text":"hi"}',
                                        headers={"authorization": "Bearer t0ken"})
            assert status == 200 and b'"count":1' in body
        # and an ordinary client sees nothing different
        r = httpx.post(srv.url + "/count", json={"text": "hello world"},
                       headers={"authorization": "Bearer t0ken"})
        assert r.status_code == 200 and r.json()["count"] == 2
