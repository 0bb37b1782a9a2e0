"""The decoder of piece tokenizers: token strings -> text, as the file's decoder chain says.

Byte-level vocabularies decode by concatenating bytes (``decoder.py``). Piece vocabularies
hold strings such as ``▁Hello`` and ``<0xE4>``, and a ``tokenizer.json`` lists the steps
that turn them back into text. Supported, as Hugging Face ``tokenizers`` 0.23 defines them:
``Replace`` (a literal), ``ByteFallback``, ``Fuse``, ``Strip``, ``Metaspace`` and
``Sequence``.

One streaming implementation serves both ``decode`` and incremental decoding: every
step is a small state machine that takes tokens one at a time and passes on what it can
already say. ``decode`` feeds all tokens and finishes; a ``PieceStream`` feeds them as they
come. So the text a stream emits, joined, is exactly ``decode`` of all its ids, by
construction. What a step must hold back:

* ``ByteFallback``: a run of ``<0xNN>`` tokens until a token that is not a byte ends it,
  because the run decodes as one (valid UTF-8: its text; otherwise one U+FFFD per byte,
  as tokenizers does), so a character's bytes are never split;
* ``Strip`` after ``Fuse`` (the fused text is one token): its leading characters until
  the ``start`` budget is spent, and up to ``stop`` trailing characters until more text
  follows them.
"""

from __future__ import annotations

import re
from typing import Any

from ..file_checks import sequence_leaves
from ..errors import ArtifactError, InvalidUtf8, UnsupportedArtifact

_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")


class _Step:
    """A decoder step: ``push`` one token, get the tokens it can pass on."""

    fused = False  # whether the tokens it receives are pieces of ONE fused token

    def push(self, token: str) -> list[str]:
        return [token]

    def finish(self) -> list[str]:
        return []


class _Replace(_Step):
    def __init__(self, pattern: str, content: str) -> None:
        self.pattern, self.content = pattern, content

    def push(self, token: str) -> list[str]:
        # after Fuse a multi-character pattern could straddle two pushes: refused at parse
        return [token.replace(self.pattern, self.content)]


class _ByteFallback(_Step):
    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.run = bytearray()
        self.emitted = 0  # UTF-8 bytes passed on so far, for InvalidUtf8 positions

    def _flush(self) -> list[str]:
        if not self.run:
            return []
        data = bytes(self.run)
        self.run.clear()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            if self.strict:
                raise InvalidUtf8(self.emitted + e.start, e.reason) from None
            text = "\ufffd" * len(data)
            return list(text)  # one token per byte, as tokenizers pushes them
        self.emitted += len(data)
        return [text]

    def push(self, token: str) -> list[str]:
        m = _BYTE.match(token) if len(token) == 6 else None
        if m is not None:
            self.run.append(int(m.group(1), 16))
            return []
        out = self._flush()
        out.append(token)
        self.emitted += len(token.encode("utf-8", "surrogatepass"))
        return out

    def finish(self) -> list[str]:
        return self._flush()


class _Fuse(_Step):
    pass  # concatenation is what a stream does anyway; later steps see one token


class _Strip(_Step):
    def __init__(self, content: str, start: int, stop: int) -> None:
        self.content, self.start, self.stop = content, start, stop
        self._lead = start  # leading characters still to strip (fused)
        self._tail = ""  # trailing content characters held back (fused)

    def push(self, token: str) -> list[str]:
        if not self.fused:
            return [self._strip_one(token)]
        if self._lead:
            n = 0
            while n < len(token) and n < self._lead and token[n] == self.content:
                n += 1
            # the whole token stripped: the budget goes on; else stripping is over
            self._lead = self._lead - n if n == len(token) else 0
            token = token[n:]
            if not token:
                return []
        if not self.stop:
            return [token]
        token = self._tail + token
        n = 0
        while n < min(self.stop, len(token)) and token[-1 - n] == self.content:
            n += 1
        self._tail = token[len(token) - n:] if n else ""
        return [token[:len(token) - n]] if len(token) > n else []

    def finish(self) -> list[str]:
        self._tail = ""  # the end: held trailing characters are exactly what stop strips
        return []

    def _strip_one(self, token: str) -> str:
        a, b = 0, len(token)
        while a < min(self.start, b) and token[a] == self.content:
            a += 1
        k = 0
        while k < self.stop and b > a and token[b - 1] == self.content:
            b -= 1
            k += 1
        return token[a:b]


class _Metaspace(_Step):
    def __init__(self, replacement: str, drops_first: bool) -> None:
        self.rep, self.drops_first = replacement, drops_first
        self.index = 0

    def push(self, token: str) -> list[str]:
        first = self.index == 0
        if not self.fused:
            self.index += 1
        if first and self.drops_first:
            return [token.replace(self.rep, "")]
        return [token.replace(self.rep, " ")]


class PieceDecoder:
    """A parsed decoder chain; ``stream()`` gives a fresh state machine per decode."""

    def __init__(self, spec: dict[str, Any] | None, where: str = "decoder") -> None:
        self.specs: list[tuple] = []
        self._collect(spec, where)

    def _collect(self, spec: Any, where: str) -> None:
        for step, path in sequence_leaves(spec, where, "decoders"):
            self._add(step, path)

    def _add(self, spec: dict[str, Any], where: str) -> None:
        kind = spec.get("type")
        if kind == "Replace":
            pattern = spec.get("pattern")
            if not isinstance(pattern, dict) or not isinstance(pattern.get("String"), str):
                raise UnsupportedArtifact(f"{where}: decoder Replace with a regex pattern")
            content = spec.get("content")
            if not isinstance(content, str) or not pattern["String"]:
                raise ArtifactError(f"{where}: Replace needs a pattern and a content string")
            if len(pattern["String"]) != 1 and any(s[0] == "fuse" for s in self.specs):
                raise UnsupportedArtifact(f"{where}: decoder Replace of a multi-character "
                                          f"pattern after Fuse")
            self.specs.append(("replace", pattern["String"], content))
        elif kind == "ByteFallback":
            self.specs.append(("byte_fallback",))
        elif kind == "Fuse":
            self.specs.append(("fuse",))
        elif kind == "Strip":
            content = spec.get("content")
            start, stop = spec.get("start", 0), spec.get("stop", 0)
            if not (isinstance(content, str) and len(content) == 1 and isinstance(start, int)
                    and isinstance(stop, int) and start >= 0 and stop >= 0):
                raise ArtifactError(f"{where}: Strip needs one content character and "
                                    f"counts start, stop >= 0")
            self.specs.append(("strip", content, start, stop))
        elif kind == "Metaspace":
            rep = spec.get("replacement")
            if not isinstance(rep, str) or len(rep) != 1:
                raise ArtifactError(f"{where}.replacement must be one character")
            scheme = spec.get("prepend_scheme", "always")
            if spec.get("add_prefix_space") is False:
                scheme = "never"
            self.specs.append(("metaspace", rep, scheme != "never"))
        else:
            raise UnsupportedArtifact(f"{where}: decoder {kind!r:.60}")

    def stream(self, strict: bool = False) -> PieceStream:
        return PieceStream(self, strict)

    def decode(self, tokens: list[str], strict: bool = False) -> str:
        stream = self.stream(strict)
        return stream.feed(tokens) + stream.finish()


class PieceStream:
    """One decode in progress: ``feed`` tokens, ``finish`` at the end."""

    def __init__(self, decoder: PieceDecoder, strict: bool) -> None:
        steps: list[_Step] = []
        fused = False
        for spec in decoder.specs:
            kind = spec[0]
            step = (_Replace(*spec[1:]) if kind == "replace" else
                    _ByteFallback(strict) if kind == "byte_fallback" else
                    _Fuse() if kind == "fuse" else
                    _Strip(*spec[1:]) if kind == "strip" else
                    _Metaspace(*spec[1:]))
            step.fused = fused
            fused = fused or kind == "fuse"
            steps.append(step)
        self._steps = steps

    def feed(self, tokens: list[str]) -> str:
        out: list[str] = []
        for token in tokens:
            out += self._run([token], 0)
        return "".join(out)

    def finish(self) -> str:
        out: list[str] = []
        for i, step in enumerate(self._steps):
            out += self._run(step.finish(), i + 1)
        return "".join(out)

    def _run(self, tokens: list[str], first_step: int) -> list[str]:
        for step in self._steps[first_step:]:
            nxt: list[str] = []
            for t in tokens:
                nxt += step.push(t)
            tokens = nxt
            if not tokens:
                break
        return tokens
