"""tiktoken's ``Encoding`` on our engine, so that ``import tokserve as tiktoken`` works.

Every method keeps tiktoken's signature, return types and exceptions (``ValueError`` for
a disallowed special token, ``KeyError`` for an id or bytes outside the vocabulary),
because code written for tiktoken catches exactly those. The work is the engine's
``Tokenizer`` (``enc.tokenizer``), which also gives what tiktoken lacks: offsets in
code points, UTF-16 units or bytes (``encode_with_offsets``), counts without lists.

Special tokens, as tiktoken defines them:

* ``allowed_special`` literals become their ids; ``"all"`` means every literal.
* ``disallowed_special`` literals found in the text raise; ``"all"`` (the default) means
  every literal not allowed. A literal in neither set is encoded as ordinary text.

The three common combinations run as one engine call with a fixed policy (``reject``,
``text``, ``allow``); only a partial ``allowed_special`` set scans literals in Python.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, AbstractSet, Any, Literal

from .errors import DisallowedSpecialToken, SpecialTokenInText, UnknownTokenId
from .formats import rank_file_bytes, tiktoken_artifact
from .offsets import Units
from .pre_tokenizers.tiktoken_exactness import check_tiktoken_pattern
from .patterns import family_for_pattern
from .text_input import repair_surrogates
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]


class Encoding:
    """A tokenizer with tiktoken's interface. Immutable and thread-safe, like ``Tokenizer``.

    Built three ways: ``tokserve.get_encoding(name)`` (cached, the usual one), tiktoken's
    constructor (``Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)``)
    or ``Encoding.from_tokenizer(tokserve.load(...))``.

    The constructor gives tiktoken's ids for any ``pat_str`` it accepts: a known pattern
    runs on its compiled scanner, another on the ``regex`` fallback when pre_tokenizers/tiktoken_exactness.py
    proves that exact, else ``UnsupportedArtifact`` names what it cannot reproduce.
    """

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> None:
        top = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
        if explicit_n_vocab and (len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab
                                 or top != explicit_n_vocab - 1):
            raise ValueError(
                f"explicit_n_vocab={explicit_n_vocab} but the ranks and special tokens hold "
                f"{len(mergeable_ranks) + len(special_tokens)} tokens up to id {top}")
        if family_for_pattern(pat_str, "tiktoken") < 0:
            check_tiktoken_pattern(pat_str)  # the regex fallback must split as tiktoken does
        artifact = tiktoken_artifact(rank_file_bytes(mergeable_ranks), name=name,
                                     pattern=pat_str, special_tokens=dict(special_tokens))
        self._setup(Tokenizer(artifact), pat_str, dict(mergeable_ranks), None)

    @classmethod
    def from_tokenizer(cls, tokenizer: Tokenizer, *,
                       reopen: Callable[[], Encoding] | None = None) -> Encoding:
        """Wrap a loaded engine tokenizer. ``reopen``: how to get this encoding again in
        any process (``get_encoding`` passes itself bound to the name it was given): such
        an encoding pickles as that call and unpickles to the cached instance."""
        pre = tokenizer.artifact.pre_tokenizer or {}  # piece tokenizers may have none
        pattern = pre.get("pattern") if pre.get("type") == "Pattern" else None
        enc = cls.__new__(cls)
        enc._setup(tokenizer, pattern, None, reopen)
        return enc

    def _setup(self, tokenizer: Tokenizer, pat_str: str | None,
               ranks: dict[bytes, int] | None, reopen: Callable[[], Encoding] | None) -> None:
        self.name = tokenizer.name
        self.tokenizer = tokenizer
        self._pat_str = pat_str
        self._ranks = ranks
        self._reopen = reopen
        self._special_tokens = dict(tokenizer.special_tokens)
        self._special_token_values = set(self._special_tokens.values())
        self.max_token_value = tokenizer.vocab_size - 1

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ================================================================ encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """``encode(text, disallowed_special=())``: every literal is ordinary text."""
        return self.tokenizer.encode(text, "text")

    def encode(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
               disallowed_special: DisallowedSpecial = "all") -> list[int]:
        """Text -> ids; see the module docstring for the special-token rules.

        Raises:
            ValueError: (``DisallowedSpecialToken``) the text holds a disallowed literal.
        """
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        policy = self._policy(allowed, disallowed)
        if policy is None:
            text, plain = self._plain_ranges(text, allowed, disallowed)
            return self.tokenizer.encode(text, "allow", plain_ranges=plain)
        try:
            return self.tokenizer.encode(text, policy)
        except SpecialTokenInText as e:
            raise _disallowed(e) from None

    def encode_to_numpy(self, text: str, *, allowed_special: AllowedSpecial = frozenset(),
                        disallowed_special: DisallowedSpecial = "all") -> npt.NDArray[np.uint32]:
        """``encode`` as a ``numpy.uint32`` array (numpy must be installed)."""
        import numpy as np

        ids = self.encode(text, allowed_special=allowed_special,
                          disallowed_special=disallowed_special)
        return np.array(ids, dtype=np.uint32)

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        """``[encode_ordinary(t) for t in text]``, merged on up to ``num_threads`` threads."""
        return self.tokenizer.encode_batch(text, "text", num_threads=num_threads)

    def encode_batch(self, text: list[str], *, num_threads: int = 8,
                     allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: DisallowedSpecial = "all") -> list[list[int]]:
        """``[encode(t, ...) for t in text]``, merged on up to ``num_threads`` threads."""
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        policy = self._policy(allowed, disallowed)
        if policy is None:
            return [self.encode(t, allowed_special=allowed, disallowed_special=disallowed)
                    for t in text]
        try:
            return self.tokenizer.encode_batch(text, policy, num_threads=num_threads)
        except SpecialTokenInText as e:
            raise _disallowed(e) from None

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the token whose bytes are exactly ``text_or_bytes`` (specials too).

        Raises:
            KeyError: no such token.
        """
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._bytes_to_id[text_or_bytes]

    def encode_with_offsets(self, text: str, *, units: Units = "char",
                            allowed_special: AllowedSpecial = frozenset(),
                            disallowed_special: DisallowedSpecial = "all",
                            ) -> tuple[list[int], list[tuple[int, int]]]:
        """Ours, not tiktoken's: ids and each token's half-open span of ``text`` in
        ``units`` (``char`` code points, ``utf16`` units or ``byte``)."""
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        policy = self._policy(allowed, disallowed)
        plain = None
        if policy is None:
            text, plain = self._plain_ranges(text, allowed, disallowed)
            policy = "allow"
        try:
            return self.tokenizer.encode_with_offsets(text, units, policy, plain_ranges=plain)
        except SpecialTokenInText as e:
            raise _disallowed(e) from None

    # ================================================================ decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """Ids -> bytes. Raises ``KeyError`` for an id outside the vocabulary."""
        try:
            return self.tokenizer.decode_bytes(tokens)
        except UnknownTokenId as e:
            bad = e.details["ids"][0] if e.details["ids"] else None
            raise KeyError(f"Invalid token for decoding: {bad}") from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """Ids -> text; ``errors`` is any ``bytes.decode`` handler (lossy by default)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (specials too). Raises ``KeyError`` if unknown."""
        try:
            return self.tokenizer.token_bytes(token)
        except UnknownTokenId:
            raise KeyError(str(token)) from None

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """Each token's bytes, in order (for showing a tokenization)."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text and, per token, the index of the first character holding its bytes.

        tiktoken's rule: a token that starts with a UTF-8 continuation byte belongs to
        the character begun by the token before. Raises ``UnicodeDecodeError`` when the
        bytes are not valid UTF-8, as tiktoken does.
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        decode = functools.partial(self.decode, errors=errors)
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(decode, batch))

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *,
                           num_threads: int = 8) -> list[bytes]:
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(self.decode_bytes, batch))

    # ================================================================ vocabulary

    def token_byte_values(self) -> list[bytes]:
        """Every ordinary (mergeable) token's bytes, sorted, as tiktoken returns them."""
        return sorted(self._mergeable_ranks)

    @property
    def eot_token(self) -> int:
        """``<|endoftext|>``'s id, else the tokenizer's EOS id (Llama, DeepSeek)."""
        eot = self._special_tokens.get("<|endoftext|>")
        if eot is None and self.tokenizer.eos_token is not None:
            eot = self._special_tokens.get(self.tokenizer.eos_token)
        if eot is None:
            raise KeyError("<|endoftext|>")
        return eot

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        assert isinstance(token, int)
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """``max_token_value + 1`` (tiktoken's name, kept for compatibility)."""
        return self.max_token_value + 1

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Ordinary token bytes -> id. Built on first use from the loaded vocabulary
        (a dict of every token: slow for a large vocabulary), since most callers never ask
        for it."""
        if self._ranks is None:
            ranks: dict[bytes, int] = {}
            for token in range(self.n_vocab):
                if token in self._special_token_values:
                    continue
                try:
                    ranks[self.tokenizer.token_bytes(token)] = token
                except UnknownTokenId:
                    continue  # a gap in the id space
            self._ranks = ranks
        return self._ranks

    @functools.cached_property
    def _bytes_to_id(self) -> dict[bytes, int]:
        lookup = dict(self._mergeable_ranks)
        for literal, token in self._special_tokens.items():
            lookup[literal.encode("utf-8")] = token
        return lookup

    # ================================================================ private (tiktoken's)

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """Merge one piece with no pre-tokenizer split and no special tokens."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self.tokenizer.encode_piece(text_or_bytes)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """Pre-tokenize, then merge each piece separately (a slow cross-check)."""
        return [token for piece in self.tokenizer.pre_tokenize(text)
                for token in self.tokenizer.encode_piece(piece.encode("utf-8"))]

    def _encode_bytes(self, data: bytes) -> list[int]:
        """Bytes that may not be valid UTF-8 -> ids that decode back to exactly them.

        tiktoken's rule: encode the valid prefix; the tokens of its last piece (extended
        over trailing whitespace-only tokens, whose split may move) are re-merged
        together with the invalid tail as one piece.
        """
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid = e.start
        text = data[:valid].decode("utf-8")
        tokens = self.encode_ordinary(text)
        pieces = self.tokenizer.pre_tokenize(text) if text else []
        last = len(self._encode_single_piece(pieces[-1])) if pieces else 0
        if last and _all_space(self.decode_single_token_bytes(tokens[-last])):
            while last < len(tokens) and _all_space(
                    self.decode_single_token_bytes(tokens[-last - 1])):
                last += 1
        tail = data[valid:]
        if last:
            tail = self.decode_bytes(tokens[-last:]) + tail
            del tokens[-last:]
        if tail:
            whole = self._mergeable_ranks.get(tail)
            tokens.extend([whole] if whole is not None else self._encode_single_piece(tail))
        return tokens

    # ================================================================ special-token rules

    def _special_sets(self, allowed_special: AllowedSpecial,
                      disallowed_special: DisallowedSpecial
                      ) -> tuple[AbstractSet[str], AbstractSet[str]]:
        allowed = self.special_tokens_set if allowed_special == "all" else allowed_special
        if disallowed_special == "all":
            disallowed = self.special_tokens_set - set(allowed)
        else:
            disallowed = frozenset(disallowed_special)
        return allowed, disallowed

    def _policy(self, allowed: AbstractSet[str], disallowed: AbstractSet[str]) -> str | None:
        """The engine policy that implements these sets in one call, or None."""
        every = self.special_tokens_set
        if not allowed:
            if not disallowed:
                return "text"
            if len(disallowed) == len(every) and disallowed >= every:
                return "reject"
        elif not disallowed and len(allowed) >= len(every) and set(allowed) >= every:
            return "allow"
        return None

    def _plain_ranges(self, text: str, allowed: AbstractSet[str],
                      disallowed: AbstractSet[str]) -> tuple[str, list[tuple[int, int]]]:
        """Check ``disallowed``, then the character ranges of literals not allowed (they
        stay text), in the surrogate-repaired text the ranges index."""
        text = repair_surrogates(text)[0]
        if disallowed:
            # tiktoken searches for the strings given, special tokens or not
            found = _search_regex(frozenset(disallowed)).search(text)
            if found:
                raise DisallowedSpecialToken(found.group(), found.start())
        plain = []
        for literal, start in self.tokenizer.find_literals(text):
            if literal not in allowed:
                plain.append((start, start + len(literal)))
        return text, plain

    # ================================================================ pickling

    def __reduce__(self) -> tuple[Any, ...]:
        """Encodings from ``get_encoding`` pickle as their name (and unpickle to the
        cached instance, as tiktoken's registered encodings do); others as their data."""
        if self._reopen is not None:
            return self._reopen, ()
        if self._pat_str is None:
            raise TypeError(f"{self!r} has no single pre-tokenizer pattern; pickle the "
                            f"name it was loaded by (get_encoding) instead")
        return _rebuild, (self.name, self._pat_str, self._mergeable_ranks,
                          self._special_tokens)


def _rebuild(name: str, pat_str: str, mergeable_ranks: dict[bytes, int],
             special_tokens: dict[str, int]) -> Encoding:
    return Encoding(name, pat_str=pat_str, mergeable_ranks=mergeable_ranks,
                    special_tokens=special_tokens)


@functools.lru_cache(maxsize=128)
def _search_regex(literals: frozenset[str]) -> re.Pattern[str]:
    """One regex finding any of ``literals`` (cached: callers pass the same sets)."""
    return re.compile("|".join(re.escape(lit) for lit in sorted(literals, key=len, reverse=True)))


def _disallowed(error: SpecialTokenInText) -> DisallowedSpecialToken:
    literal, start = error.details["occurrences"][0]
    return DisallowedSpecialToken(literal, start)


def _all_space(token: bytes) -> bool:
    return all(b in b" \n\t" for b in token)
