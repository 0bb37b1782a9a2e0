"""/decode/stream over a real server: the WebSocket and the NDJSON POST.

Deltas joined equal /decode of the same ids (random ids, ids that split characters);
no delta is ever taken back; an invalid id mid-stream ends the stream with an error frame
in the contract's envelope after the deltas before it; the NDJSON answer streams while
the request body is still uploading (full duplex on one HTTP/1.1 connection).
"""

from __future__ import annotations

import json
import random
import socket

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

import tokserve
from tokserve.service.runtime.settings import Settings

TEXT = "Streaming 東京タワー 🗼 and 👩‍👩‍👧‍👦 with naïve café — Ελληνικά"


def _ws_url(server) -> str:
    return server.url.replace("http://", "ws://") + "/decode/stream"


def _ws_stream(server, messages: list[dict], **kw) -> tuple[list[dict], int | None]:
    frames = []
    with connect(_ws_url(server), **kw) as ws:
        try:
            for message in messages:
                ws.send(json.dumps(message))
        except ConnectionClosed:  # the server ended the stream: read what it sent
            pass
        try:
            while True:
                frames.append(json.loads(ws.recv(timeout=30)))
        except ConnectionClosed as closed:
            return frames, closed.rcvd.code if closed.rcvd else None


def _ndjson(client, messages: list[dict]) -> list[dict]:
    body = "".join(json.dumps(m) + "\n" for m in messages)
    r = client.post("/decode/stream", content=body,
                    headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
    return [json.loads(line) for line in r.text.splitlines()]


def _chunks(ids: list[int], rng: random.Random) -> list[list[int]]:
    out, i = [], 0
    while i < len(ids):
        n = rng.randint(1, 3)
        out.append(ids[i:i + n])
        i += n
    return out


@pytest.mark.parametrize("tokenizer", ["o200k_base", "deepseek-v4"])
@pytest.mark.parametrize("transport", ["websocket", "ndjson"])
def test_stream_equals_decode(server, client, tokenizer, transport):
    tok = tokserve.load(tokenizer)
    rng = random.Random(7)
    real = tok.encode(TEXT)
    split = [i for i in real if tok.decode([i]).count("\ufffd")]
    assert split  # this text has ids that split characters
    for trial in range(6):
        ids = real if trial == 0 else [rng.choice(real + split + [rng.randrange(
            tok.vocab_size - 300)]) for _ in range(rng.randint(1, 30))]
        messages = [{"tokenizer": tokenizer}] + [{"ids": c} for c in _chunks(ids, rng)]
        if transport == "websocket":
            frames, code = _ws_stream(server, messages + [{"flush": True}])
            assert code == 1000
        else:
            frames = _ndjson(client, messages)
        assert frames[-1]["done"] is True and frames[-1]["ids"] == len(ids)
        assert frames[-1]["tokenizer"] == f"{tokenizer}@1"
        texts = [f["text"] for f in frames]
        whole = client.post("/decode", json={"tokenizer": tokenizer, "ids": ids}).json()["text"]
        assert "".join(texts) == whole
        so_far = ""
        for delta in texts[:-1]:  # sent as soon as complete, never taken back
            assert delta
            so_far += delta
            assert whole.startswith(so_far)


@pytest.mark.parametrize("transport", ["websocket", "ndjson"])
def test_an_invalid_id_mid_stream_ends_it_with_an_error_frame(server, client, transport):
    ids = tokserve.load("o200k_base").encode("hello world")
    messages = [{"ids": ids}, {"ids": [1, 10**9]}, {"ids": ids}]
    if transport == "websocket":
        frames, code = _ws_stream(server, messages + [{"flush": True}])
        assert code == 1008
    else:
        frames = _ndjson(client, messages)
    assert frames[0] == {"text": "hello world"}
    err = frames[1]["error"]
    assert err["code"] == "unknown_token_id" and err["ids"] == [10**9]
    assert len(frames) == 2  # nothing after the error


@pytest.mark.parametrize("bad,code", [
    ({"ids": ["x"]}, "invalid_request"), ({"ids": [1], "unknown": 1}, "invalid_request"),
    ({"tokenizer": "nope", "ids": [1]}, "tokenizer_not_found"),
    ({"model": "gpt4o"}, "unknown_model")])
def test_malformed_messages_are_error_frames(server, client, bad, code):
    frames, close = _ws_stream(server, [bad])
    assert frames[-1]["error"]["code"] == code and close == 1008
    assert _ndjson(client, [bad])[-1]["error"]["code"] == code


def test_options_go_in_the_first_message_only(server):
    frames, close = _ws_stream(server, [{"ids": [24912]}, {"tokenizer": "cl100k_base"}])
    assert frames[0] == {"text": "hello"} and close == 1008
    assert "first message" in frames[1]["error"]["message"]


def test_model_skip_special_and_strict(server):
    harmony = tokserve.load("o200k_harmony")
    ids = harmony.encode("<|start|>hi", special_tokens="allow")
    frames, _ = _ws_stream(server, [{"model": "openai/gpt-oss-20b", "skip_special_tokens": True,
                                     "ids": ids}, {"flush": True}])
    assert "".join(f["text"] for f in frames) == "hi"
    assert frames[-1]["model"] == "openai/gpt-oss-20b"
    o200k = tokserve.load("o200k_base")
    broken = next(i for i in o200k.encode("🗼") if o200k.decode([i]) == "\ufffd")
    frames, close = _ws_stream(server, [{"errors": "strict", "ids": [broken]}, {"flush": True}])
    assert frames[-1]["error"]["code"] == "invalid_utf8" and close == 1008


def test_ndjson_answers_while_the_body_is_still_uploading(server):
    """Full duplex: the first delta arrives before the second line is sent."""
    host, port = "127.0.0.1", int(server.url.rsplit(":", 1)[1])
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(b"POST /decode/stream HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")

        def chunk(data: bytes) -> None:
            sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))

        chunk(b'{"ids": [24912]}\n')
        received = b""
        while b'{"text":"hello"}' not in received:
            data = sock.recv(4096)
            assert data, received
            received += data
        assert b"done" not in received
        chunk(b'{"ids": [2375]}\n')
        sock.sendall(b"0\r\n\r\n")
        while b'"done":true' not in received:
            data = sock.recv(4096)
            assert data
            received += data
    assert b'{"text":" world"}' in received


def test_plain_get_is_426_and_other_media_types_415(client):
    r = client.get("/decode/stream")
    assert r.status_code == 426 and r.json()["error"]["code"] == "upgrade_required"
    assert r.headers["upgrade"] == "websocket"
    r = client.post("/decode/stream", content=b'{"ids": [1]}',
                    headers={"content-type": "text/plain"})
    assert r.status_code == 415
    one = client.post("/decode/stream", json={"ids": [24912]})  # a single JSON message
    assert [json.loads(x)["text"] for x in one.text.splitlines()] == ["hello", ""]


@pytest.fixture(scope="module")
def guarded(live_server, bundled):
    settings = Settings(_env_file=None, bundled_artifacts=bundled("o200k_base").parent.parent,
                        auth_token="ws-token", cors_origins=["https://app.example"])
    with live_server(settings) as srv:
        yield srv


def test_websocket_needs_the_token_and_a_known_origin(guarded):
    with pytest.raises(InvalidStatus) as refused:
        _ws_stream(guarded, [{"ids": [24912]}])
    assert refused.value.response.status_code == 403
    auth = {"additional_headers": {"Authorization": "Bearer ws-token"}}
    frames, _ = _ws_stream(guarded, [{"ids": [24912]}, {"flush": True}], **auth)
    assert frames[0] == {"text": "hello"}
    with pytest.raises(InvalidStatus):
        _ws_stream(guarded, [{"ids": [24912]}], origin="https://evil.example", **auth)
    frames, _ = _ws_stream(guarded, [{"ids": [24912]}, {"flush": True}],
                           origin="https://app.example", **auth)
    assert frames[0] == {"text": "hello"}
    r = httpx.post(guarded.url + "/decode/stream", content=b'{"ids": [1]}\n',
                   headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 401


def _handshake_status(server, host: str, origin: str | None) -> int:
    """The status a raw WebSocket handshake gets, with the Host and Origin given."""
    lines = ["GET /decode/stream HTTP/1.1", f"Host: {host}", "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
             "Sec-WebSocket-Version: 13", "Authorization: Bearer ws-token"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    return int(head.split(b" ", 2)[1])


def test_websocket_origin_is_never_judged_by_the_host_header(guarded):
    """A DNS-rebinding page (evil.example resolved to 127.0.0.1) sends its own name as
    Host and Origin alike: refused. The service's own names (loopback by default) and
    the listed origins are accepted; a request without Origin (not a browser) too."""
    port = guarded.port
    rebinding = f"evil.example:{port}"
    assert _handshake_status(guarded, rebinding, f"http://{rebinding}") == 403
    assert _handshake_status(guarded, rebinding, "null") == 403
    assert _handshake_status(guarded, f"127.0.0.1:{port}", f"http://127.0.0.1:{port}") == 101
    assert _handshake_status(guarded, f"localhost:{port}", f"https://localhost:{port}") == 101
    assert _handshake_status(guarded, f"[::1]:{port}", f"http://[::1]:{port}") == 101
    assert _handshake_status(guarded, rebinding, "https://app.example") == 101
    assert _handshake_status(guarded, rebinding, None) == 101


def test_websocket_allowed_hosts_come_from_the_settings(monkeypatch):
    monkeypatch.setenv("TOKSERVE_ALLOWED_HOSTS", "tokserve.internal, 10.0.0.5")
    assert Settings(_env_file=None).allowed_hosts == ["tokserve.internal", "10.0.0.5"]
