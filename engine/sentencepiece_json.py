"""A SentencePiece ``ModelProto`` as a Hugging Face ``tokenizer.json``-shaped dict.

The engine reads one description of a piece tokenizer, tokenizer.json's; a ``.model``
file becomes that description here, built so that ``tokenizers`` (the engine's
reference) running it gives the ids ``SentencePieceProcessor.encode`` gives on ordinary
text (text without control-symbol literals such as ``<s>``, which sentencepiece never
matches). The facts behind each step are SentencePiece's own (normalizer.cc,
bpe_model.cc, unigram_model.cc, model_interface.cc):

* normalization: the charsmap (``Precompiled``), then, with ``remove_extra_whitespaces``,
  leading spaces dropped, runs of spaces collapsed and trailing spaces (and, with
  ``escape_whitespaces``, trailing ``▁``) dropped; then the dummy ``▁`` prefix
  (``Prepend``: only on a non-empty text, as sentencepiece) and spaces escaped as ``▁``.
  Only U+0020 counts as a space there, so the three ``Replace`` steps use patterns on
  spaces, never a whitespace class (``WhitespaceSplit`` would also split at U+0085);
* BPE: merges ranked by the merged piece's score (SentencePiece merges the adjacent pair
  whose concatenation is the best-scoring piece), listed for every split of every
  NORMAL piece into two parts that can be symbols; ``byte_fallback``; consecutive unknown
  characters fused into one ``<unk>`` as sentencepiece does; user-defined pieces are
  never merged into or out of (sentencepiece freezes them), so they are isolated by a
  ``Split`` and looked up whole (``ignore_merges``);
* Unigram: the pieces and scores; pieces sentencepiece never matches (CONTROL, UNKNOWN,
  BYTE) get at least the lowest NORMAL score, so ``tokenizers``' unknown penalty (lowest
  score - 10) is sentencepiece's; user-defined pieces get the bonus sentencepiece's
  Viterbi gives them (``length * max_score - 0.1``), so no pre-tokenizer is needed;
* added tokens: CONTROL and UNKNOWN pieces, special, ``normalized: false``;
* post-processor: BOS before the text when the model has a BOS piece (Llama's
  convention); decoder: ``▁`` back to spaces, ``<0xNN>`` runs back to UTF-8, the dummy
  prefix's space stripped.

What cannot be made exact is refused by name (``UnsupportedArtifact``): WORD and CHAR
models, ``treat_whitespace_as_suffix``, denormalization rules, UNUSED pieces that take
part in encoding, user-defined pieces holding a space or rewritten by the charsmap
(sentencepiece matches them before normalizing), BPE pieces holding a character that is
no piece. Known differences that remain, all between the two references themselves
(tests/engine/test_sentencepiece_json.py checks every disagreement is one of them):
``tokenizers``' ``Precompiled`` maps a grapheme cluster at once (a mapped character
followed by a combining mark loses the mark), Unigram ties (the same pieces in another
order) break differently in sentencepiece's float32 sums than in tokenizers' float64,
and a text spelling a reserved piece (``<0x41>``) is that piece to tokenizers' Unigram
(and to BPE with user-defined symbols, whose lookups are whole) but plain text to
sentencepiece.
"""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path
from typing import Any

from .errors import ArtifactError, UnsupportedArtifact
from .sentencepiece_files import (BPE, BYTE, CONTROL, MODEL_TYPES, NORMAL, PIECE_TYPES,
                                  UNIGRAM, UNKNOWN, UNUSED, USER_DEFINED, Charsmap, ModelProto,
                                  read_model_proto)

SPACE = "\u2581"  # SentencePiece's escaped space, "▁"
#: the pieces sentencepiece keeps in its reserved map: never matched in text by a model
_RESERVED = (CONTROL, UNKNOWN, BYTE)


def sentencepiece_tokenizer_json(path: str | Path, *, add_bos: bool | None = None,
                                  add_eos: bool = False) -> dict[str, Any]:
    """The ``tokenizer.json``-shaped dict for the SentencePiece model file at ``path``
    (``add_bos``/``add_eos``: see ``tokenizer_json_from_proto``).

    Raises:
        ArtifactError: unreadable or not a well-formed SentencePiece model.
        UnsupportedArtifact: a model feature no tokenizer.json can reproduce exactly.
    """
    proto, _ = read_model_proto(path)
    return tokenizer_json_from_proto(proto, str(path), add_bos=add_bos, add_eos=add_eos)


def tokenizer_json_from_proto(proto: ModelProto, where: str, *, add_bos: bool | None = None,
                              add_eos: bool = False) -> dict[str, Any]:
    """``proto`` (read from ``where``, named in errors) as a ``tokenizer.json`` dict.

    ``add_bos``: whether the post-processor puts BOS before the text (default: when the
    model has a BOS piece, as Llama's tokenizers do; sentencepiece's own ``encode`` adds
    nothing unless asked). ``add_eos``: EOS after it (T5's convention).
    """
    _check(proto, where)
    pieces = proto.pieces
    user_defined = [p.piece for p in pieces if p.type == USER_DEFINED]
    if proto.trainer_spec.model_type == BPE:
        model = _bpe_model(proto, where, bool(user_defined))
        pre_tokenizer = _isolate(user_defined)
    else:
        model = _unigram_model(proto, where)
        pre_tokenizer = None
    added = [{"id": i, "content": p.piece, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, p in enumerate(pieces) if p.type in (CONTROL, UNKNOWN)]
    names = sentencepiece_config(proto)
    for flag, key in ((add_bos, "bos_token"), (add_eos, "eos_token")):
        if flag and names[key] is None:
            raise ArtifactError(f"{where}: add_{key[:3]} is set but the model's {key[:3]}_id "
                                f"names no control piece", path=where)
    bos = names["bos_token"] if add_bos is not False else None
    eos = names["eos_token"] if add_eos else None
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": _normalizer(proto),
        "pre_tokenizer": pre_tokenizer,
        "post_processor": _post_processor(proto, bos, eos),
        "decoder": _decoder(proto),
        "model": model,
    }


def sentencepiece_config(proto: ModelProto) -> dict[str, Any]:
    """What a ``tokenizer_config.json`` would say for ``proto``: the literals of the
    trainer's BOS/EOS/PAD/UNK ids (None when the id is -1 or names no CONTROL or UNKNOWN
    piece), ``add_bos_token`` when there is a BOS, ``add_eos_token`` false."""
    trainer = proto.trainer_spec
    config: dict[str, Any] = {}
    for key, tid in (("bos_token", trainer.bos_id), ("eos_token", trainer.eos_id),
                     ("pad_token", trainer.pad_id), ("unk_token", trainer.unk_id)):
        ok = 0 <= tid < len(proto.pieces) and proto.pieces[tid].type in (CONTROL, UNKNOWN)
        config[key] = proto.pieces[tid].piece if ok else None
    config["add_bos_token"] = config["bos_token"] is not None
    config["add_eos_token"] = False
    return config


# ---------------------------------------------------------------- checks


def _check(proto: ModelProto, where: str) -> None:
    """What sentencepiece itself refuses to load (``ArtifactError``) and what no
    tokenizer.json reproduces (``UnsupportedArtifact``)."""
    trainer, spec = proto.trainer_spec, proto.normalizer_spec
    if trainer.model_type not in (BPE, UNIGRAM):
        kind = MODEL_TYPES.get(trainer.model_type, str(trainer.model_type))
        raise UnsupportedArtifact(f"SentencePiece model_type {kind} (only BPE and UNIGRAM)",
                                  where)
    if trainer.treat_whitespace_as_suffix:
        raise UnsupportedArtifact("SentencePiece treat_whitespace_as_suffix=true", where)
    denormalizer = proto.denormalizer_spec
    if denormalizer is not None and denormalizer.precompiled_charsmap:
        raise UnsupportedArtifact(
            f"SentencePiece denormalizer_spec rules ({denormalizer.name or 'unnamed'})", where)
    charsmap = Charsmap(spec.precompiled_charsmap, where) if spec.precompiled_charsmap else None
    seen: dict[str, int] = {}
    unknown = []
    for i, p in enumerate(proto.pieces):
        if not p.piece:
            raise ArtifactError(f"{where}: piece {i} is empty", path=where)
        if p.type not in PIECE_TYPES:
            raise ArtifactError(f"{where}: piece {i} {p.piece!r:.40} has unknown type "
                                f"{p.type}", path=where)
        if p.piece in seen:
            raise ArtifactError(f"{where}: pieces {seen[p.piece]} and {i} are both "
                                f"{p.piece!r:.40}", path=where)
        seen[p.piece] = i
        if p.type == UNKNOWN:
            unknown.append(i)
        elif p.type == USER_DEFINED and " " in p.piece:
            raise UnsupportedArtifact(f"SentencePiece user-defined piece {p.piece!r:.40} "
                                      f"holding a space", where)
        elif p.type == USER_DEFINED and charsmap is not None and charsmap.touches(p.piece):
            # sentencepiece matches user-defined pieces before normalizing; a Precompiled
            # normalizer would rewrite them first
            raise UnsupportedArtifact(f"SentencePiece user-defined piece {p.piece!r:.40} that "
                                      f"the normalization {spec.name or 'charsmap'} rewrites",
                                      where)
    if len(unknown) != 1:
        raise ArtifactError(f"{where}: a SentencePiece model needs exactly one UNKNOWN "
                            f"piece, this one has {len(unknown)}", path=where)
    byte_pieces = {p.piece for p in proto.pieces if p.type == BYTE}
    if trainer.byte_fallback and byte_pieces != {f"<0x{b:02X}>" for b in range(256)}:
        raise ArtifactError(f"{where}: byte_fallback is set but the model lacks some of the "
                            f"256 byte pieces <0x00>..<0xFF>", path=where)
    if not trainer.byte_fallback and byte_pieces:
        raise ArtifactError(f"{where}: byte pieces although byte_fallback is false",
                            path=where)


# ---------------------------------------------------------------- stages


def _normalizer(proto: ModelProto) -> dict[str, Any] | None:
    spec = proto.normalizer_spec
    steps: list[dict[str, Any]] = []
    if spec.precompiled_charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap":
                      base64.b64encode(spec.precompiled_charsmap).decode("ascii")})
    if spec.remove_extra_whitespaces:
        trailing = "[ \u2581]+\\z" if spec.escape_whitespaces else " +\\z"
        steps += [_replace_regex("\\A +", ""), _replace_regex(" {2,}", " "),
                  _replace_regex(trailing, "")]
    space = SPACE if spec.escape_whitespaces else " "
    if spec.add_dummy_prefix:
        steps.append({"type": "Prepend", "prepend": space})
    if spec.escape_whitespaces:
        steps.append({"type": "Replace", "pattern": {"String": " "}, "content": SPACE})
    if not steps:
        return None
    return {"type": "Sequence", "normalizers": steps}


def _replace_regex(pattern: str, content: str) -> dict[str, Any]:
    return {"type": "Replace", "pattern": {"Regex": pattern}, "content": content}


def _isolate(symbols: list[str]) -> dict[str, Any] | None:
    """A pre-tokenizer isolating every occurrence of the user-defined ``symbols``,
    leftmost and longest first (sentencepiece's prefix matcher), or None."""
    if not symbols:
        return None
    if len(symbols) == 1:
        pattern: dict[str, str] = {"String": symbols[0]}
    else:
        ordered = sorted(symbols, key=lambda s: (-len(s), s))
        pattern = {"Regex": "|".join(_onig_escape(s) for s in ordered)}
    return {"type": "Split", "pattern": pattern, "behavior": "Isolated", "invert": False}


def _onig_escape(text: str) -> str:
    """``text`` as a literal in an Oniguruma (Ruby syntax) pattern."""
    return re.sub(r"([\\^$.|?*+()\[\]{}\-#\s/])", r"\\\1", text)


def _post_processor(proto: ModelProto, bos: str | None, eos: str | None) -> dict[str, Any] | None:
    """TemplateProcessing with ``bos`` before and ``eos`` after each sequence (the shape
    transformers gives Llama's: ``<s>:0 $A:0 <s>:1 $B:1``), or None when neither."""
    if bos is None and eos is None:
        return None
    ids = {p.piece: i for i, p in enumerate(proto.pieces) if p.piece in (bos, eos)}

    def around(seq: str, type_id: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = [{"Sequence": {"id": seq, "type_id": type_id}}]
        if bos is not None:
            items.insert(0, {"SpecialToken": {"id": bos, "type_id": type_id}})
        if eos is not None:
            items.append({"SpecialToken": {"id": eos, "type_id": type_id}})
        return items

    return {
        "type": "TemplateProcessing",
        "single": around("A", 0),
        "pair": around("A", 0) + around("B", 1),
        "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]}
                           for t in (bos, eos) if t is not None},
    }


def _decoder(proto: ModelProto) -> dict[str, Any]:
    spec = proto.normalizer_spec
    steps: list[dict[str, Any]] = []
    if spec.escape_whitespaces:
        steps.append({"type": "Replace", "pattern": {"String": SPACE}, "content": " "})
    if proto.trainer_spec.byte_fallback:
        steps.append({"type": "ByteFallback"})
    steps.append({"type": "Fuse"})
    if spec.add_dummy_prefix:
        steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": steps}


# ---------------------------------------------------------------- models


def _unk(proto: ModelProto) -> int:
    return next(i for i, p in enumerate(proto.pieces) if p.type == UNKNOWN)


def _bpe_model(proto: ModelProto, where: str, has_user_defined: bool) -> dict[str, Any]:
    pieces = proto.pieces
    vocab = {p.piece: i for i, p in enumerate(pieces)}
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": pieces[_unk(proto)].piece,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": True,
        "byte_fallback": proto.trainer_spec.byte_fallback,
        "ignore_merges": has_user_defined,
        "vocab": vocab,
        "merges": bpe_merges(proto, where),
    }


def bpe_merges(proto: ModelProto, where: str = "<model>") -> list[list[str]]:
    """The merges that make tokenizers' BPE do sentencepiece's: every split of every
    NORMAL piece into two parts that can be symbols, best merged score first.

    A symbol in sentencepiece's BPE is a single character or a piece a merge made
    (NORMAL, or UNUSED on the way to another); user-defined pieces are frozen. The order
    within one score is transformers' ``LlamaConverter`` order (pieces by id, splits by
    the parts' ids), so a converted Llama 2 file equals the published one.

    Raises:
        UnsupportedArtifact: an UNUSED piece that merges can reach (sentencepiece
            merges through it and splits it again; no merge list can say that), or a
            NORMAL piece holding a character that is no piece (sentencepiece merges
            such a character, tokenizers cannot).
    """
    pieces = proto.pieces
    ids = {p.piece: i for i, p in enumerate(pieces)}
    symbols = {p.piece for p in pieces
               if p.type in (NORMAL, UNUSED) or (len(p.piece) == 1 and p.type != USER_DEFINED)}
    chars = {p.piece for p in pieces if len(p.piece) == 1}
    ranked: list[tuple[float, int, int, int, str, str]] = []
    for i, p in enumerate(pieces):
        text = p.piece
        if p.type not in (NORMAL, UNUSED) or len(text) < 2:
            continue
        if not chars.issuperset(text):
            missing = next(ch for ch in text if ch not in chars)
            raise UnsupportedArtifact(
                f"SentencePiece piece {text!r:.40} holds {missing!r}, which is no piece", where)
        for k in range(1, len(text)):
            left = text[:k]
            if left not in symbols:
                continue
            right = text[k:]
            if right in symbols:
                if p.type == UNUSED:
                    raise UnsupportedArtifact(
                        f"SentencePiece UNUSED piece {text!r:.40} that merges reach", where)
                ranked.append((-p.score, i, ids[left], ids[right], left, right))
    ranked.sort(key=lambda m: m[:4])
    return [[left, right] for *_, left, right in ranked]


def _unigram_model(proto: ModelProto, where: str) -> dict[str, Any]:
    """Unigram with sentencepiece's scores as its Viterbi sees them (module docstring).

    sentencepiece computes ``max_score`` from FLT_MIN up, over NORMAL pieces; a
    user-defined piece of ``n`` UTF-8 bytes scores ``n * max_score - 0.1``.
    """
    pieces = proto.pieces
    unused = next((p.piece for p in pieces if p.type == UNUSED), None)
    if unused is not None:  # sentencepiece's Viterbi skips them; tokenizers' cannot
        raise UnsupportedArtifact(f"SentencePiece UNUSED piece {unused!r:.40} in a Unigram "
                                  f"model", where)
    normal = [p.score for p in pieces if p.type == NORMAL]
    lowest = min(normal, default=0.0)
    highest = max([_FLT_MIN, *normal])
    vocab: list[list[Any]] = []
    for p in pieces:
        score = p.score
        if p.type == USER_DEFINED:
            score = len(p.piece.encode("utf-8")) * _f32(highest) - 0.1
        elif p.type in _RESERVED:
            score = max(score, lowest)
        vocab.append([p.piece, score])
    return {"type": "Unigram", "unk_id": _unk(proto), "vocab": vocab,
            "byte_fallback": proto.trainer_spec.byte_fallback}


_FLT_MIN = struct.unpack("<f", struct.pack("<I", 0x00800000))[0]


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]
