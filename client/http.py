"""``Client`` and ``AsyncClient``: the service's endpoints as methods, over httpx.

One pooled httpx client per instance (keep-alive, so a billing loop does not pay a TCP
handshake per count). Retries happen only where repeating cannot change an answer:
no response at all (connection refused or reset, timeouts) and 503 (the server or its
load balancer says "not now": loading, draining). Anything else is returned or raised
at once. Backoff doubles from ``backoff`` seconds, capped at ``max_backoff``; a 503's
``Retry-After`` (seconds) is honoured within the same cap.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx

from . import calls
from .calls import Call
from .errors import TokserveConnectionError, TokserveError, error_from_response
from .results import EncodeBatchResult, EncodeResult, RenderChatResult, TokenizerInfo, TokenizerList

#: what a request failed with, when no response arrived: worth trying again
_RETRY_ERRORS = (httpx.TransportError,)


class _Base:
    """What both clients share: settings, headers, the retry rule, error mapping."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 30.0,
                 retries: int = 2, backoff: float = 0.1, max_backoff: float = 5.0,
                 headers: dict[str, str] | None = None) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        delay = self.backoff * (2 ** attempt)
        if response is not None:
            try:
                delay = max(delay, float(response.headers.get("Retry-After", "")))
            except ValueError:
                pass
        return min(delay, self.max_backoff)

    @staticmethod
    def _result(call: Call, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            raise error_from_response(response.status_code, body,
                                      response.headers.get("X-Request-ID"))
        return call.parse(response.json() if call.json_response else response.text)

    @staticmethod
    def _no_response(call: Call, error: Exception) -> TokserveConnectionError:
        return TokserveConnectionError(
            0, "connection_error", f"no response from {call.method} {call.path}: "
            f"{type(error).__name__}: {error}")


class Client(_Base):
    """Blocking client. Use as a context manager, or call ``close()``.

        >>> with Client("http://127.0.0.1:8000") as tok:
        ...     tok.count("hello world", tokenizer="o200k_base")
        2
    """

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers,
                                  timeout=self._timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _run(self, call: Call) -> Any:
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(call.method, call.path, json=call.body,
                                              headers=call.headers)
            except _RETRY_ERRORS as e:
                if attempt == self.retries:
                    raise self._no_response(call, e) from e
                time.sleep(self._delay(attempt, None))
                continue
            if response.status_code == 503 and attempt < self.retries:
                time.sleep(self._delay(attempt, response))
                continue
            return self._result(call, response)
        raise AssertionError("unreachable")

    # ---- endpoints (docs/API.md) ----------------------------------------------------
    def encode(self, text: str | None = None, *, texts: Sequence[str] | None = None,
               tokenizer: str | None = None, **options: Any
               ) -> EncodeResult | EncodeBatchResult:
        """``POST /encode``. ``options``: ``special_tokens``, ``add_special_tokens``,
        ``return_offsets``, ``offset_units``, ``return_tokens`` (as the contract)."""
        return self._run(calls.encode(text, texts, tokenizer, options))

    def count(self, text: str | None = None, *, texts: Sequence[str] | None = None,
              messages: Sequence[dict] | None = None, tokenizer: str | None = None,
              **options: Any) -> int | list[int]:
        """``POST /count``: an ``int``, or one per text for ``texts``."""
        return self._run(calls.count(text, texts, messages, tokenizer, options))

    def decode(self, ids: Sequence[int] | None = None, *,
               batch_ids: Sequence[Sequence[int]] | None = None,
               tokenizer: str | None = None, **options: Any) -> str | list[str]:
        """``POST /decode``: the text, or one per row for ``batch_ids``."""
        return self._run(calls.decode(ids, batch_ids, tokenizer, options))

    def render_chat(self, messages: Sequence[dict], *, tokenizer: str | None = None,
                    **options: Any) -> RenderChatResult:
        """``POST /render_chat``; ``options`` as the contract (``add_generation_prompt``…)."""
        return self._run(calls.render_chat(messages, tokenizer, options))

    def tokenizers(self) -> TokenizerList:
        return self._run(calls.tokenizers())

    def tokenizer(self, name: str) -> TokenizerInfo:
        """``GET /tokenizers/{name}``: one version with its manifest."""
        return self._run(calls.tokenizer(name))

    def models(self) -> dict[str, Any]:
        """``GET /models``: the model names the server accepts and their tokenizers."""
        return self._run(calls.models())

    def health(self) -> dict[str, Any]:
        return self._run(calls.health())

    def metrics(self) -> str:
        return self._run(calls.metrics())

    def reload(self, admin_token: str | None = None) -> dict[str, Any]:
        """``POST /admin/reload`` (rescan artifact roots) with the admin token."""
        return self._run(calls.reload(admin_token))

    def get_encoding(self, name: str | None = None):
        """A tiktoken-style object whose work happens on this server (see ``remote``)."""
        from .remote import RemoteEncoding

        return RemoteEncoding(self, name)


class AsyncClient(_Base):
    """The same methods as ``Client``, as coroutines. ``async with AsyncClient(...)``."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers,
                                       timeout=self._timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _run(self, call: Call) -> Any:
        for attempt in range(self.retries + 1):
            try:
                response = await self._http.request(call.method, call.path,
                                                    json=call.body, headers=call.headers)
            except _RETRY_ERRORS as e:
                if attempt == self.retries:
                    raise self._no_response(call, e) from e
                await asyncio.sleep(self._delay(attempt, None))
                continue
            if response.status_code == 503 and attempt < self.retries:
                await asyncio.sleep(self._delay(attempt, response))
                continue
            return self._result(call, response)
        raise AssertionError("unreachable")

    async def encode(self, text: str | None = None, *, texts: Sequence[str] | None = None,
                     tokenizer: str | None = None, **options: Any
                     ) -> EncodeResult | EncodeBatchResult:
        return await self._run(calls.encode(text, texts, tokenizer, options))

    async def count(self, text: str | None = None, *, texts: Sequence[str] | None = None,
                    messages: Sequence[dict] | None = None, tokenizer: str | None = None,
                    **options: Any) -> int | list[int]:
        return await self._run(calls.count(text, texts, messages, tokenizer, options))

    async def decode(self, ids: Sequence[int] | None = None, *,
                     batch_ids: Sequence[Sequence[int]] | None = None,
                     tokenizer: str | None = None, **options: Any) -> str | list[str]:
        return await self._run(calls.decode(ids, batch_ids, tokenizer, options))

    async def render_chat(self, messages: Sequence[dict], *, tokenizer: str | None = None,
                          **options: Any) -> RenderChatResult:
        return await self._run(calls.render_chat(messages, tokenizer, options))

    async def tokenizers(self) -> TokenizerList:
        return await self._run(calls.tokenizers())

    async def tokenizer(self, name: str) -> TokenizerInfo:
        return await self._run(calls.tokenizer(name))

    async def models(self) -> dict[str, Any]:
        return await self._run(calls.models())

    async def health(self) -> dict[str, Any]:
        return await self._run(calls.health())

    async def metrics(self) -> str:
        return await self._run(calls.metrics())

    async def reload(self, admin_token: str | None = None) -> dict[str, Any]:
        return await self._run(calls.reload(admin_token))

    def get_encoding(self, name: str | None = None):
        """The async twin of ``Client.get_encoding`` (its methods are coroutines)."""
        from .remote import AsyncRemoteEncoding

        return AsyncRemoteEncoding(self, name)


__all__ = ["Client", "AsyncClient", "TokserveError"]
