"""Realistic traffic mix for tokserve (headless command in loadtests/README.md).

Weights: billing counts of chat-sized texts dominate; UIs encode 1–20 KB with offsets;
some decodes and batches. Every response body is checked, so a wrong body counts as a
failure, not just a wrong status.
"""

from __future__ import annotations

import random

from locust import HttpUser, between, task

_WORDS = ("the a service tokenizer prompt user assistant café naïve 東京 données 😀 42 "
          "def return {\"k\": 1} https://example.com\n").split(" ")


def _text(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        w = rng.choice(_WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:chars]


class TokserveUser(HttpUser):
    wait_time = between(0, 0.05)

    def on_start(self) -> None:
        self.rng = random.Random()

    def _check(self, resp, *keys: str) -> None:
        try:
            body = resp.json()
        except ValueError:
            resp.failure(f"not JSON: {resp.text[:100]!r}")
            return
        if resp.status_code != 200:
            resp.failure(f"{resp.status_code}: {body.get('error', {}).get('code')}")
        elif not all(k in body for k in ("tokenizer", "tokenizer_hash", *keys)):
            resp.failure(f"missing fields in {sorted(body)}")
        else:
            resp.success()

    @task(10)
    def count_chat_sized(self) -> None:
        text = _text(self.rng, self.rng.randint(200, 4000))
        with self.client.post("/count", json={"text": text}, name="/count",
                              catch_response=True) as resp:
            self._check(resp, "count")
            if resp.ok and resp.json()["count"] <= 0:
                resp.failure("count must be positive")

    @task(4)
    def encode_with_offsets(self) -> None:
        text = _text(self.rng, self.rng.randint(1_000, 20_000))
        payload = {"text": text, "return_offsets": True,
                   "offset_units": self.rng.choice(["char", "utf16", "byte"])}
        with self.client.post("/encode", json=payload, name="/encode offsets",
                              catch_response=True) as resp:
            self._check(resp, "ids", "offsets")
            if resp.ok:
                body = resp.json()
                if len(body["ids"]) != len(body["offsets"]) or body["count"] != len(body["ids"]):
                    resp.failure("ids/offsets/count disagree")

    @task(2)
    def decode(self) -> None:
        ids = [self.rng.randrange(0, 100_000) for _ in range(self.rng.randint(10, 500))]
        with self.client.post("/decode", json={"ids": ids, "tokenizer": "cl100k_base"},
                              name="/decode", catch_response=True) as resp:
            self._check(resp, "text")

    @task(2)
    def batch_count(self) -> None:
        texts = [_text(self.rng, self.rng.randint(50, 800)) for _ in range(self.rng.randint(2, 32))]
        with self.client.post("/count", json={"texts": texts}, name="/count batch",
                              catch_response=True) as resp:
            self._check(resp, "counts", "total")
            if resp.ok and len(resp.json()["counts"]) != len(texts):
                resp.failure("batch size mismatch")

    @task(1)
    def encode_batch(self) -> None:
        texts = [_text(self.rng, self.rng.randint(50, 2000)) for _ in range(8)]
        with self.client.post("/encode", json={"texts": texts}, name="/encode batch",
                              catch_response=True) as resp:
            self._check(resp, "results")
