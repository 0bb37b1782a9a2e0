"""tiktoken-style encodings whose work happens on a tokserve server.

``client.get_encoding("o200k_base")`` returns an object with tiktoken's ``encode``,
``encode_ordinary``, ``encode_batch``, ``decode``, ``name`` and ``n_vocab``, so moving
a counter from a local ``tokserve.get_encoding`` to the service is one line.

tiktoken's special-token rules are kept exactly (see ``tokserve.encoding``): the three
common combinations map to the contract's ``special_tokens`` policy in one request; a
partial ``allowed_special`` set is split here, at the allowed literals (which the server
lists in ``/tokenizers/{name}``), and the pieces are encoded as ordinary text in one
batch request. A disallowed literal raises ``ValueError`` before any request is sent
whenever the literal list is known.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, AbstractSet, Any, Literal

from .errors import DisallowedSpecialToken

if TYPE_CHECKING:
    from .http import AsyncClient, Client
    from .results import TokenizerInfo

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]


def _plan(text: str, allowed: AllowedSpecial, disallowed: DisallowedSpecial,
          specials: dict[str, int] | None) -> str | list[str | int]:
    """A contract policy for the whole text, or the text cut into ordinary pieces
    (``str``) and allowed special ids (``int``). ``specials`` is None when unknown yet;
    the plan then asks for it by raising ``LookupError``."""
    if allowed == "all" and (disallowed == "all" or not disallowed):
        return "allow"
    if not allowed:
        if not disallowed:
            return "text"
        if disallowed == "all":
            return "reject"
    if specials is None:
        raise LookupError("special tokens needed")
    every = set(specials)
    allowed_set = every if allowed == "all" else set(allowed)
    disallowed_set = every - allowed_set if disallowed == "all" else set(disallowed)
    for literal in sorted(disallowed_set, key=len, reverse=True):
        if literal in text:
            raise DisallowedSpecialToken(literal)
    keep = sorted(allowed_set & every, key=len, reverse=True)
    if not keep:
        return "text"
    parts: list[str | int] = []
    pos = 0
    for match in re.finditer("|".join(map(re.escape, keep)), text):
        parts.append(text[pos:match.start()])
        parts.append(specials[match.group()])
        pos = match.end()
    parts.append(text[pos:])
    return parts


def _stitch(parts: list[str | int], encoded: list[Any]) -> list[int]:
    ids: list[int] = []
    rows = iter(encoded)
    for part in parts:
        if isinstance(part, int):
            ids.append(part)
        else:
            ids.extend(next(rows).ids)
    return ids


class _RemoteBase:
    def __init__(self, name: str | None) -> None:
        self._name = name
        self._info: TokenizerInfo | None = None

    def __repr__(self) -> str:
        return f"<RemoteEncoding {self._name or '(server default)'!r}>"


class RemoteEncoding(_RemoteBase):
    """Blocking remote encoding (from ``Client.get_encoding``)."""

    def __init__(self, client: Client, name: str | None) -> None:
        super().__init__(name)
        self._client = client

    @property
    def info(self) -> TokenizerInfo:
        """The server's description of this tokenizer (fetched once)."""
        if self._info is None:
            name = self._name or self._client.tokenizers().default
            self._info = self._client.tokenizer(name)
        return self._info

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def n_vocab(self) -> int:
        return self.info.vocab_size

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.info.special_tokens)

    def encode(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
               disallowed_special: DisallowedSpecial = "all") -> list[int]:
        try:
            plan = _plan(text, allowed_special, disallowed_special, None)
        except LookupError:
            plan = _plan(text, allowed_special, disallowed_special, self.info.special_tokens)
        if isinstance(plan, str):
            return self._client.encode(text, tokenizer=self._name, special_tokens=plan).ids
        pieces = [p for p in plan if isinstance(p, str)]
        batch = self._client.encode(texts=pieces, tokenizer=self._name, special_tokens="text")
        return _stitch(plan, batch.results)

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encode(text, disallowed_special=())

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                     allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: DisallowedSpecial = "all") -> list[list[int]]:
        """One request for the whole batch when the rules allow (``num_threads`` is
        accepted for tiktoken compatibility; the server spreads the work)."""
        try:
            policy = _plan("", allowed_special, disallowed_special, None)
        except LookupError:
            policy = None
        if isinstance(policy, str):
            batch = self._client.encode(texts=list(text), tokenizer=self._name,
                                        special_tokens=policy)
            return [row.ids for row in batch.results]
        return [self.encode(t, allowed_special=allowed_special,
                            disallowed_special=disallowed_special) for t in text]

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8
                              ) -> list[list[int]]:
        return self.encode_batch(text, disallowed_special=())

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        return self._client.decode(list(tokens), tokenizer=self._name, errors=errors)

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        return self._client.decode(batch_ids=batch, tokenizer=self._name, errors=errors)

    def count(self, text: str, **options: Any) -> int:
        """Ours: the server's count without transferring the ids."""
        return self._client.count(text, tokenizer=self._name, **options)


class AsyncRemoteEncoding(_RemoteBase):
    """The async twin of ``RemoteEncoding`` (from ``AsyncClient.get_encoding``)."""

    def __init__(self, client: AsyncClient, name: str | None) -> None:
        super().__init__(name)
        self._client = client

    async def info(self) -> TokenizerInfo:
        if self._info is None:
            name = self._name or (await self._client.tokenizers()).default
            self._info = await self._client.tokenizer(name)
        return self._info

    async def encode(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: DisallowedSpecial = "all") -> list[int]:
        try:
            plan = _plan(text, allowed_special, disallowed_special, None)
        except LookupError:
            info = await self.info()
            plan = _plan(text, allowed_special, disallowed_special, info.special_tokens)
        if isinstance(plan, str):
            return (await self._client.encode(text, tokenizer=self._name,
                                              special_tokens=plan)).ids
        pieces = [p for p in plan if isinstance(p, str)]
        batch = await self._client.encode(texts=pieces, tokenizer=self._name,
                                          special_tokens="text")
        return _stitch(plan, batch.results)

    async def encode_ordinary(self, text: str) -> list[int]:
        return await self.encode(text, disallowed_special=())

    async def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                           allowed_special: AllowedSpecial = frozenset(),
                           disallowed_special: DisallowedSpecial = "all") -> list[list[int]]:
        try:
            policy = _plan("", allowed_special, disallowed_special, None)
        except LookupError:
            policy = None
        if isinstance(policy, str):
            batch = await self._client.encode(texts=list(text), tokenizer=self._name,
                                              special_tokens=policy)
            return [row.ids for row in batch.results]
        return [await self.encode(t, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special) for t in text]

    async def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        return await self._client.decode(list(tokens), tokenizer=self._name, errors=errors)

    async def count(self, text: str, **options: Any) -> int:
        return await self._client.count(text, tokenizer=self._name, **options)
