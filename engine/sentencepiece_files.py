"""SentencePiece ``.model`` files: the ``ModelProto`` read with a small wire-format reader.

A SentencePiece model is one protobuf message (schema: sentencepiece_model.proto). Only
the fields that decide ids and decoding are kept; the rest (training options such as
``input`` or ``vocab_size``, ``self_test_data``, extensions from field 200 on) is skipped
by its wire type, as protobuf itself does. No protobuf dependency: the format is five
wire types, and a reader this size is easier to trust than a generated module.

Invariants (protobuf's own rules): a scalar field that appears twice keeps the last
value, a message field that appears twice is merged field by field, repeated fields
append; a proto2 ``[default = ...]`` applies when a field is absent. Anything that is not a
well-formed message of this schema raises ``ArtifactError`` naming the byte offset, so a
truncated or foreign file never becomes a half-read model.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

from .artifact import _read
from .errors import ArtifactError

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PIECE_TYPES = {NORMAL: "NORMAL", UNKNOWN: "UNKNOWN", CONTROL: "CONTROL",
               USER_DEFINED: "USER_DEFINED", UNUSED: "UNUSED", BYTE: "BYTE"}
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPES = {UNIGRAM: "UNIGRAM", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5  # wire types (3 and 4, groups, are not in this schema)


@dataclass(frozen=True)
class Piece:
    piece: str
    score: float
    type: int = NORMAL


@dataclass(frozen=True)
class TrainerSpec:
    """The training options that still matter when encoding (or that name the specials)."""

    model_type: int = UNIGRAM
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    unk_surface: str = " \u2047 "
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    split_digits: bool = False
    control_symbols: tuple[str, ...] = ()
    user_defined_symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class NormalizerSpec:
    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalization_rule_tsv: str = ""


@dataclass(frozen=True)
class ModelProto:
    pieces: tuple[Piece, ...]
    trainer_spec: TrainerSpec = field(default_factory=TrainerSpec)
    normalizer_spec: NormalizerSpec = field(default_factory=NormalizerSpec)
    denormalizer_spec: NormalizerSpec | None = None  # None: absent from the file


class _Malformed(Exception):
    """Internal: the bytes are not a protobuf message of this schema (offset, why)."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _Malformed(pos, "a varint runs past the end")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed(pos, "a varint longer than 10 bytes")


def _fields(data: bytes, start: int = 0, end: int | None = None):
    """``(field number, wire type, value, offset)`` for each field of the message in
    ``data[start:end]``; ``value`` is an int (varint, fixed32/64 as raw ints) or, for a
    length-delimited field, the ``(start, end)`` of its bytes in ``data``; ``offset``
    is where the field's key starts (for messages that name the fault)."""
    pos, end = start, len(data) if end is None else end
    while pos < end:
        at = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed(at, "field number 0")
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _I64:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == _I32:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        elif wire == _LEN:
            size, pos = _varint(data, pos)
            value, pos = (pos, pos + size), pos + size
        else:  # groups (3, 4) are not in this schema; 6 and 7 are not wire types
            raise _Malformed(at, f"wire type {wire} (field {number})")
        if pos > end:
            raise _Malformed(at, f"field {number} runs past the end of its message")
        yield number, wire, value, at


def _expect(wire: int, wanted: int, number: int, at: int) -> None:
    if wire != wanted:
        raise _Malformed(at, f"field {number} has wire type {wire}, expected {wanted}")


def _int32(value: int) -> int:
    """A varint as protobuf's int32 (negatives are sign-extended to 64 bits)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(data: bytes, span: tuple[int, int], number: int, at: int) -> str:
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed(at, f"string field {number} is not UTF-8") from None


def _piece(data: bytes, span: tuple[int, int]) -> Piece:
    piece, score, kind = "", 0.0, NORMAL
    for number, wire, value, at in _fields(data, *span):
        if number == 1:
            _expect(wire, _LEN, number, at)
            piece = _text(data, value, number, at)
        elif number == 2:
            _expect(wire, _I32, number, at)
            score = struct.unpack("<f", value.to_bytes(4, "little"))[0]
        elif number == 3:
            _expect(wire, _VARINT, number, at)
            kind = _int32(value)
    return Piece(piece, score, kind)


_F32 = struct.Struct("<f")


def _plain_piece(data: bytes, start: int, end: int) -> Piece | None:
    """The common layout of a piece message, read without the general loop (most of a
    file is pieces): ``piece`` (short), ``score``, an optional one-byte ``type``, in
    field order. None for any other layout, which ``_piece`` then reads."""
    if end - start < 7 or data[start] != 0x0A or data[start + 1] >= 0x80:
        return None
    text_end = start + 2 + data[start + 1]
    if text_end + 5 > end or data[text_end] != 0x15:
        return None
    score = _F32.unpack_from(data, text_end + 1)[0]
    pos, kind = text_end + 5, NORMAL
    if pos + 2 == end and data[pos] == 0x18 and data[pos + 1] < 0x80:
        kind, pos = data[pos + 1], end
    if pos != end:
        return None
    try:
        return Piece(data[start + 2:text_end].decode("utf-8"), score, kind)
    except UnicodeDecodeError:
        return None  # _piece names the fault


_TRAINER_INTS = {3: "model_type", 40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
_TRAINER_BOOLS = {35: "byte_fallback", 24: "treat_whitespace_as_suffix",
                  26: "allow_whitespace_only_pieces", 25: "split_digits"}
_TRAINER_STRINGS = {45: "unk_piece", 46: "bos_piece", 47: "eos_piece", 48: "pad_piece",
                    44: "unk_surface"}
_TRAINER_LISTS = {30: "control_symbols", 31: "user_defined_symbols"}


def _trainer_spec(data: bytes, span: tuple[int, int], base: TrainerSpec) -> TrainerSpec:
    """``base`` with the fields in ``data[span]`` merged in (protobuf's rule when a
    message field appears twice: scalars replaced, repeated fields appended)."""
    kept: dict[str, object] = {}
    lists: dict[str, list[str]] = {name: list(getattr(base, name))
                                   for name in _TRAINER_LISTS.values()}
    for number, wire, value, at in _fields(data, *span):
        if number in _TRAINER_INTS:
            _expect(wire, _VARINT, number, at)
            kept[_TRAINER_INTS[number]] = _int32(value)
        elif number in _TRAINER_BOOLS:
            _expect(wire, _VARINT, number, at)
            kept[_TRAINER_BOOLS[number]] = bool(value)
        elif number in _TRAINER_STRINGS:
            _expect(wire, _LEN, number, at)
            kept[_TRAINER_STRINGS[number]] = _text(data, value, number, at)
        elif number in _TRAINER_LISTS:
            _expect(wire, _LEN, number, at)
            lists[_TRAINER_LISTS[number]].append(_text(data, value, number, at))
    return replace(base, **kept, **{k: tuple(v) for k, v in lists.items()})


_NORMALIZER_BOOLS = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces",
                     5: "escape_whitespaces"}


def _normalizer_spec(data: bytes, span: tuple[int, int],
                     base: NormalizerSpec | None) -> NormalizerSpec:
    kept: dict[str, object] = {}
    for number, wire, value, at in _fields(data, *span):
        if number in (1, 6):
            _expect(wire, _LEN, number, at)
            kept["name" if number == 1 else "normalization_rule_tsv"] = _text(data, value,
                                                                             number, at)
        elif number == 2:
            _expect(wire, _LEN, number, at)
            kept["precompiled_charsmap"] = data[value[0]:value[1]]
        elif number in _NORMALIZER_BOOLS:
            _expect(wire, _VARINT, number, at)
            kept[_NORMALIZER_BOOLS[number]] = bool(value)
    return replace(base or NormalizerSpec(), **kept)


def parse_model_proto(data: bytes, where: str = "<bytes>") -> ModelProto:
    """``data`` (a ``.model`` file's bytes) as a ``ModelProto``.

    Raises:
        ArtifactError: not a well-formed protobuf message of this schema (naming the
            byte offset), or one with no pieces.
    """
    pieces: list[Piece] = []
    trainer, normalizer, denormalizer = TrainerSpec(), NormalizerSpec(), None
    try:
        for number, wire, value, at in _fields(data):
            if number in (1, 2, 3, 5):
                _expect(wire, _LEN, number, at)
                if number == 1:
                    pieces.append(_plain_piece(data, *value) or _piece(data, value))
                elif number == 2:
                    trainer = _trainer_spec(data, value, trainer)
                elif number == 3:
                    normalizer = _normalizer_spec(data, value, normalizer)
                else:
                    denormalizer = _normalizer_spec(data, value, denormalizer)
    except _Malformed as e:
        offset, why = e.args
        raise ArtifactError(f"{where} is not a SentencePiece model: {why} at byte {offset}",
                            path=where) from None
    if not pieces:
        raise ArtifactError(f"{where} is not a SentencePiece model: it holds no pieces",
                            path=where)
    return ModelProto(tuple(pieces), trainer, normalizer, denormalizer)


def looks_like_model_proto(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like a SentencePiece model: a
    ``pieces`` field whose first piece is a string and a float score (protobuf writes
    fields in number order, so ``pieces`` always comes first). Text never does: the
    score's key is a control byte (0x15)."""
    try:
        number, wire, value, _ = next(_fields(head))
    except (_Malformed, StopIteration):
        return False
    if number != 1 or wire != _LEN:
        return False
    return _plain_piece(head, *value) is not None


def read_model_proto(path: str | Path) -> tuple[ModelProto, bytes]:
    """The ``ModelProto`` in the file at ``path``, and the file's bytes (whose sha256 is
    the artifact's content digest)."""
    path = Path(path)
    data = _read(path)
    return parse_model_proto(data, str(path)), data


# ---------------------------------------------------------------- the normalization charsmap


class Charsmap:
    """A ``precompiled_charsmap``: a Darts-clone double-array trie over UTF-8 keys whose
    values index NUL-ended replacement strings (``<uint32 trie size><trie><strings>``).

    Only lookups are needed here (which keys are prefixes of a text); normalizing whole
    texts is the ``Precompiled`` normalizer's job.
    """

    def __init__(self, blob: bytes, where: str = "<charsmap>") -> None:
        if len(blob) <= 4:
            raise ArtifactError(f"{where}: the normalization charsmap is truncated", path=where)
        (size,) = struct.unpack("<I", blob[:4])
        if size % 4 or size == 0 or size + 4 > len(blob):
            raise ArtifactError(f"{where}: the normalization charsmap's trie size {size} does "
                                f"not fit its {len(blob)} bytes", path=where)
        self._units = struct.unpack(f"<{size // 4}I", blob[4:4 + size])
        self._strings = blob[4 + size:]

    def prefixes(self, key: bytes) -> list[tuple[int, str]]:
        """``(length, replacement)`` for every key that is a prefix of ``key``, shortest
        first (Darts' ``commonPrefixSearch``)."""
        units, found = self._units, []
        unit = units[0]
        pos = (unit >> 10) << ((unit & 0x200) >> 6)
        for i, byte in enumerate(key):
            pos ^= byte
            if pos >= len(units):
                break
            unit = units[pos]
            if unit & 0x800000FF != byte:
                break
            pos ^= (unit >> 10) << ((unit & 0x200) >> 6)
            if unit & 0x100 and pos < len(units):
                start = units[pos] & 0x7FFFFFFF
                end = self._strings.find(b"\0", start)
                found.append((i + 1, self._strings[start:end if end >= 0 else None]
                              .decode("utf-8", "replace")))
        return found

    def touches(self, text: str) -> bool:
        """Whether some key is a prefix of ``text`` at one of its characters: the
        charsmap may rewrite ``text`` (sentencepiece keeps user-defined pieces out of
        it, a ``Precompiled`` normalizer does not)."""
        data = text.encode("utf-8")
        return any(self.prefixes(data[i:]) for i in range(len(data))
                   if (data[i] & 0xC0) != 0x80)
