"""PieceTokenizer: the pipeline of SentencePiece-style tokenizers (pieces, not bytes).

    added tokens (raw) -> normalizer, per gap -> added tokens (normalized)
    -> pre-tokenizer -> model (piece BPE or Unigram) -> post-processor
    decoder chain on the way back

Byte-level tokenizers keep ``Tokenizer`` and its compiled fast paths; these files follow
Hugging Face ``tokenizers``' ``NormalizedString`` semantics instead (each stage module says
how), and this class only runs the stages in order. It is a ``Tokenizer`` for every caller:
same methods, same invariants (``count == len(encode)``, batches equal loops, offsets in
the caller's units, immutable after construction and shared by threads).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from .added_vocabulary.added_tokens import Match, Policy, Ranges
from .added_vocabulary.piece_added import PieceAddedVocabulary
from .added_vocabulary.piece_cuts import PieceCuts
from .artifact import Artifact
from .decoders.decoder import Errors
from .decoders.piece_decoder import PieceDecoder, PieceStream
from .errors import UnknownTokenId
from .models.piece_models import takes_ends
from .normalizers.aligned import AlignedText
from .normalizers.piece_normalizer import PieceNormalizer
from .offsets import Units, to_units
from .post_processors.post_processor import PostProcessor
from .pre_tokenizers.piece_pre_tokenizer import PiecePreTokenizer
from .text_input import prepare as _prepare
from .tokenizer import Tokenizer


class PieceTokenizer(Tokenizer):
    """A loaded piece tokenizer. Build with ``tokserve.load``."""

    def __init__(self, artifact: Artifact, *, cache_capacity: int = 65536) -> None:
        self.artifact = artifact
        self.name = artifact.name
        self.hash = artifact.hash
        self.manifest: dict[str, Any] | None = artifact.manifest
        added = artifact.added_tokens
        self.special_tokens: dict[str, int] = {t.content: t.id for t in added}
        self._norm = PieceNormalizer(artifact.normalizer)
        self._pieces_added = PieceAddedVocabulary(added, self._norm)
        self._pre_pieces = PiecePreTokenizer(artifact.pre_tokenizer)
        #: whether pre-tokenizing can never cut normalized text (Gemma 3 splits on " "
        #: after its normalizer has replaced every " "): each part then goes whole
        self._pre_is_identity = self._pre_pieces.never_cuts(self._norm)
        self._model = artifact.piece_model  # built by formats.py, which names the file
        if self._model is None:
            raise ValueError("a piece artifact without its model (formats.py builds it)")
        self._takes_ends = takes_ends(self._model)
        #: T5's shape (WhitespaceSplit then Metaspace) with a model that cuts it natively:
        #: each part is then one ``(utf8, replacement, first, scheme, split)`` segment for
        #: ``encode_metaspace``, and no Python object is made per word
        meta = self._pre_pieces.metaspace_words()
        self._metaspace = (meta if meta is not None and hasattr(self._model, "encode_metaspace")
                           else None)
        #: Gemma 3's shape (raw literals, a fused normalizer, no cuts) with a model that
        #: takes a whole text's gaps: literals found and gaps encoded in two native calls
        #: (piece_cuts.py says when that is exact; None: the Python path)
        self._cuts = (PieceCuts.build(added, self._norm)
                      if self._pre_is_identity and self._metaspace is None
                      and hasattr(self._model, "encode_gaps") else None)
        self._post = PostProcessor(artifact.post_processor, self.special_tokens,
                                   artifact.bos_token, artifact.eos_token,
                                   artifact.add_bos_token, artifact.add_eos_token)
        self._piece_decoder = (PieceDecoder(artifact.decoder)
                               if artifact.decoder is not None else None)
        # Decoding spells a ``normalized`` added token as the normalizer wrote it (Llama 2's
        # ``<s>`` decodes as ``▁<s>``, so as " <s>"), and skip_special_tokens drops an id
        # whose spelling is a special token's content: tokenizers' rules, whose decode
        # output these files are judged by.
        self._added_by_id = {t.id: (self._norm.apply(t.content) if t.normalized
                                    else t.content) for t in added}
        specials = {t.content for t in added if t.special}
        self._special_ids = frozenset(i for i, s in self._added_by_id.items() if s in specials)
        self._size = max([self._model.size] + [t.id + 1 for t in added])
        self.special_prefix: tuple[int, ...] = tuple(self._post.prefix)
        self.special_suffix: tuple[int, ...] = tuple(self._post.suffix)
        self.bos_token = artifact.bos_token
        self.eos_token = artifact.eos_token
        self.pad_token = artifact.pad_token

    # ================================================================ properties

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def pre_tokenizer_backend(self) -> str:
        return "pieces"

    def clear_cache(self) -> None:
        self._model.clear_cache()

    # ================================================================ encoding

    def _segments(self, text: str, policy: Policy, plain_ranges: Ranges) -> list:
        """The text as the model sees it, in order: ids of matched literals (int), the
        UTF-8 of each pre-tokenized piece (bytes) or of a part's pieces with their ends
        (``(bytes, ends)``, for ``encode(data, ends)``), or with ``_metaspace`` each part
        whole as ``encode_metaspace``'s arguments (a 5-tuple)."""
        out: list = []
        pre = None if self._pre_is_identity else self._pre_pieces.split
        meta = self._metaspace
        for part in self._pieces_added.split(text, policy, plain_ranges):
            if type(part) is Match:
                out.append(part.id)
            elif meta is not None:
                out.append((part[0].encode("utf-8"), meta[0], part[1], meta[1], meta[2]))
            elif pre is None:
                out.append(part[0].encode("utf-8"))
            elif self._takes_ends:  # one model call for all of a part's pieces
                pieces = [p.encode("utf-8") for p in pre(*part)]
                if pieces:
                    out.append((b"".join(pieces), list(accumulate(map(len, pieces)))))
            else:
                out += [p.encode("utf-8") for p in pre(*part)]
        return out

    def encode(self, text: str, special_tokens: Policy = "reject",
               add_special_tokens: bool = False, plain_ranges: Ranges = None) -> list[int]:
        text, data = _prepare(text)
        fast = self._cuts
        if fast is not None and plain_ranges is None:
            cuts = fast.cuts(data, special_tokens)
            if cuts is not None:
                ids = self._model.encode_gaps(data, cuts, *fast.normalizer)
                return self._post.apply(ids) if add_special_tokens else ids
        ids: list[int] = []
        encode = self._model.encode_metaspace if self._metaspace else self._model.encode
        for seg in self._segments(text, special_tokens, plain_ranges):
            if type(seg) is int:
                ids.append(seg)
            elif type(seg) is tuple:
                ids += encode(*seg)
            else:
                ids += encode(seg)
        return self._post.apply(ids) if add_special_tokens else ids

    def count(self, text: str, special_tokens: Policy = "reject",
              add_special_tokens: bool = False, plain_ranges: Ranges = None) -> int:
        text, data = _prepare(text)
        n = self._post.added if add_special_tokens else 0
        fast = self._cuts
        if fast is not None and plain_ranges is None:
            cuts = fast.cuts(data, special_tokens)
            if cuts is not None:
                return n + len(self._model.encode_gaps(data, cuts, *fast.normalizer))
        count = self._model.count_metaspace if self._metaspace else self._model.count
        for seg in self._segments(text, special_tokens, plain_ranges):
            n += 1 if type(seg) is int else count(*seg) if type(seg) is tuple else count(seg)
        return n

    def encode_with_offsets(self, text: str, units: Units = "char",
                            special_tokens: Policy = "reject", add_special_tokens: bool = False,
                            plain_ranges: Ranges = None,
                            ) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and offsets as ``tokenizers`` aligns them (docs/API.md, "Offsets"):
        every token covers the original characters its normalized characters came from."""
        text, data = _prepare(text)
        ids: list[int] = []
        spans: list[int] = []  # original CHARACTER spans, flat
        for part in self._pieces_added.split(text, special_tokens, plain_ranges,
                                             aligned=True):
            if isinstance(part, Match):
                ids.append(part.id)
                spans += (part.start, part.end)
                continue
            for piece in self._pre_pieces.split_aligned(part):
                piece_ids, byte_spans = self._model.encode_with_spans(
                    piece.text.encode("utf-8"))
                ids += piece_ids
                spans += _original_spans(piece, byte_spans)
        if data is not None and len(data) != len(text):  # characters -> bytes
            starts = list(accumulate((len(c.encode("utf-8")) for c in text), initial=0))
            spans = [starts[x] for x in spans]
        if add_special_tokens:  # tokens the post-processor adds span (0, 0), as tokenizers
            ids = self._post.apply(ids)
            spans = [0, 0] * len(self._post.prefix) + spans + [0, 0] * len(self._post.suffix)
        return ids, to_units(data, spans, units)

    def encode_batch(self, texts: Sequence[str], special_tokens: Policy = "reject",
                     add_special_tokens: bool = False, num_threads: int | None = None,
                     ) -> list[list[int]]:
        return [self.encode(t, special_tokens, add_special_tokens) for t in list(texts)]

    def count_batch(self, texts: Sequence[str], special_tokens: Policy = "reject",
                    add_special_tokens: bool = False, num_threads: int | None = None,
                    ) -> list[int]:
        return [self.count(t, special_tokens, add_special_tokens) for t in list(texts)]

    def find_literals(self, text: str) -> list[tuple[str, int]]:
        """Every literal ``reject`` would refuse, as ``(literal, char index)``."""
        formatting = self._pieces_added._formatting_ids
        return [(m.literal, m.start) for m in self._pieces_added.literals(_prepare(text)[0])
                if m.id not in formatting]

    def pre_tokenize(self, text: str) -> list[str]:
        """The pre-tokenizer's pieces of ``text`` after the normalizer (no added tokens)."""
        return self._pre_pieces.split(self._norm.apply(_prepare(text)[0]), True)

    def encode_piece(self, data: bytes) -> list[int]:
        """The model on ``data`` as ONE normalized piece."""
        return self._model.encode(bytes(data))

    # ================================================================ decoding

    def _tokens(self, ids: Sequence[int], skip_special_tokens: bool) -> list[str]:
        out: list[str] = []
        unknown: list[int] = []
        piece = self._model.id_to_piece
        for i in ids:
            if skip_special_tokens and i in self._special_ids:
                continue
            token = self._added_by_id.get(i)
            if token is None:
                token = piece(i) if type(i) is int and i >= 0 else None
                if token is None:
                    unknown.append(i)
                    continue
            out.append(token)
        if unknown:
            raise UnknownTokenId(unknown, self._size)
        return out

    def decode(self, ids: Sequence[int], errors: Errors = "replace",
               skip_special_tokens: bool = False) -> str:
        if errors not in ("replace", "strict"):
            raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
        tokens = self._tokens(ids, skip_special_tokens)
        if self._piece_decoder is None:
            return " ".join(tokens)  # tokenizers' answer for a file with no decoder
        return self._piece_decoder.decode(tokens, strict=errors == "strict")

    def decode_bytes(self, ids: Sequence[int], skip_special_tokens: bool = False) -> bytes:
        return self.decode(ids, skip_special_tokens=skip_special_tokens).encode("utf-8")

    def token_bytes(self, token_id: int) -> bytes:
        """What the token adds in the middle of a text: ``▁Hello`` -> b" Hello", a byte
        piece ``<0xE4>`` -> b"\\xe4", an added token -> its literal."""
        (token,) = self._tokens([token_id], False)
        if len(token) == 6 and token.startswith("<0x") and token.endswith(">") and \
                token_id not in self._added_by_id:
            try:
                return bytes([int(token[3:5], 16)])
            except ValueError:
                pass
        if self._piece_decoder is None:
            return token.encode("utf-8")
        stream = self._piece_decoder.stream()
        stream.feed(["x"])  # past the start: no first-token rule applies
        return (stream.feed([token]) + stream.finish()).encode("utf-8")

    def token_string(self, token_id: int) -> str:
        """The vocabulary's spelling of the id (``▁Hello``, ``<0xE4>``, ``<s>``)."""
        return self._tokens([token_id], False)[0]

    def decode_stream(self, skip_special_tokens: bool = False,
                      errors: Errors = "replace") -> PieceTextStream:
        return PieceTextStream(self, skip_special_tokens, errors)


class PieceTextStream:
    """Incremental decode (``decode_stream.DecodeStream`` delegates here): text deltas
    whose concatenation is exactly ``decode`` of every id fed (``PieceDecoder``)."""

    def __init__(self, tok: PieceTokenizer, skip: bool, errors: Errors) -> None:
        self._tok, self._skip, self._strict = tok, skip, errors == "strict"
        self._stream: PieceStream | None = None
        self._joined = False  # no decoder: tokens are joined by spaces, as tokenizers does

    def _fresh(self) -> PieceStream | None:
        decoder = self._tok._piece_decoder
        if self._stream is None and decoder is not None:
            self._stream = decoder.stream(self._strict)
        return self._stream

    def feed(self, ids: Sequence[int]) -> str:
        tokens = self._tok._tokens(ids, self._skip)
        stream = self._fresh()
        if stream is None:
            if not tokens:
                return ""
            text = (" " if self._joined else "") + " ".join(tokens)
            self._joined = True
            return text
        return stream.feed(tokens)

    def finish(self) -> str:
        stream, self._stream = self._stream, None
        self._joined = False
        return stream.finish() if stream is not None else ""


def _original_spans(piece: AlignedText, byte_spans: list[int]) -> list[int]:
    """Model byte spans in ``piece.text``'s UTF-8 -> original character spans."""
    align = piece.align
    text = piece.text
    out: list[int] = []
    if len(text) == len(text.encode("utf-8")):
        for k in range(0, len(byte_spans), 2):
            s, e = byte_spans[k], byte_spans[k + 1]
            out += (align[s][0], align[e - 1][1])
        return out
    starts = list(accumulate((len(c.encode("utf-8")) for c in text), initial=0))
    for k in range(0, len(byte_spans), 2):
        s, e = byte_spans[k], byte_spans[k + 1]
        a = bisect_right(starts, s) - 1
        b = bisect_right(starts, e - 1) - 1
        out += (align[a][0], align[b][1])
    return out
