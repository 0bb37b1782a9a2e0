"""The ``.model`` reader (sentencepiece_files.py) reads what sentencepiece reads.

Every piece's text, score and type, the specials' ids and the normalizer settings of the
shared Llama 2 / Mistral files and of models trained here equal what
``sentencepiece.SentencePieceProcessor`` reports; protobuf's rules hold (a repeated
message field merges, defaults apply); malformed bytes are one ``ArtifactError`` naming
the offset; the charsmap lookup agrees with ``tokenizers``' ``Precompiled`` character by
character.
"""

from __future__ import annotations

import random
import re

import pytest
from sentencepiece_inputs import field, piece, train
from shared_files import shared_file

from tokserve.errors import ArtifactError
from tokserve.sentencepiece_files import (BPE, BYTE, CONTROL, NORMAL, UNIGRAM, UNKNOWN, UNUSED,
                                          USER_DEFINED, Charsmap, looks_like_model_proto,
                                          parse_model_proto, read_model_proto)

spm = pytest.importorskip("sentencepiece")

TRAINED = {"unigram": dict(model_type="unigram", byte_fallback=True,
                           user_defined_symbols=["<tag>", "foo"], control_symbols=["<ctl>"]),
           "bpe": dict(model_type="bpe", normalization_rule_name="identity",
                       remove_extra_whitespaces=False, add_dummy_prefix=False, pad_id=3,
                       unk_id=1, bos_id=-1, eos_id=2)}


def _same_as_sentencepiece(data: bytes) -> None:
    proto = parse_model_proto(data)
    sp = spm.SentencePieceProcessor(model_proto=data)
    assert len(proto.pieces) == sp.get_piece_size()
    for i, p in enumerate(proto.pieces):
        assert (p.piece, p.score) == (sp.id_to_piece(i), sp.get_score(i)), i
        assert (p.type == CONTROL, p.type == UNKNOWN, p.type == BYTE, p.type == UNUSED) == (
            sp.is_control(i), sp.is_unknown(i), sp.is_byte(i), sp.is_unused(i)), i
    trainer = proto.trainer_spec
    assert (trainer.unk_id, trainer.bos_id, trainer.eos_id, trainer.pad_id) == (
        sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id())


@pytest.mark.parametrize("name", ["llama2", "mistral-v0.1", "mistral-v0.3"])
def test_shared_models_read_as_sentencepiece_reads_them(name):
    proto, data = read_model_proto(shared_file(f"artifacts/{name}/tokenizer.model"))
    _same_as_sentencepiece(data)
    assert proto.trainer_spec.model_type == BPE and proto.trainer_spec.byte_fallback
    spec = proto.normalizer_spec
    assert (spec.name, spec.precompiled_charsmap, spec.add_dummy_prefix,
            spec.remove_extra_whitespaces, spec.escape_whitespaces) == (
        "identity", b"", True, False, True)
    assert proto.denormalizer_spec is None
    assert sum(p.type == BYTE for p in proto.pieces) == 256
    if name == "mistral-v0.3":
        assert proto.pieces[3].piece == "[INST]" and proto.pieces[3].type == CONTROL
        assert proto.trainer_spec.control_symbols[:2] == ("[INST]", "[/INST]")


@pytest.mark.parametrize("label", list(TRAINED))
def test_trained_models_read_as_sentencepiece_reads_them(label):
    data = train(**TRAINED[label])
    _same_as_sentencepiece(data)
    proto = parse_model_proto(data)
    kinds = {p.piece: p.type for p in proto.pieces}
    if label == "unigram":
        assert proto.trainer_spec.model_type == UNIGRAM
        assert proto.normalizer_spec.name == "nmt_nfkc" and proto.normalizer_spec.precompiled_charsmap
        assert (kinds["<tag>"], kinds["foo"], kinds["<ctl>"]) == (USER_DEFINED, USER_DEFINED,
                                                                  CONTROL)
        assert proto.trainer_spec.user_defined_symbols == ("<tag>", "foo")
    else:
        assert not proto.normalizer_spec.add_dummy_prefix
        assert kinds["<pad>"] == CONTROL and proto.trainer_spec.bos_id == -1


def test_protobuf_rules_merge_repeats_and_keep_unknown_fields_out():
    data = train(model_type="unigram")
    proto = parse_model_proto(data)
    # a second trainer_spec merges into the first: one field changes, the rest stays
    merged = parse_model_proto(data + field(2, field(3, BPE) + field(31, "zz")))
    assert merged.trainer_spec.model_type == BPE
    assert merged.trainer_spec.unk_id == proto.trainer_spec.unk_id
    assert merged.trainer_spec.user_defined_symbols == ("zz",)
    # pieces append; unknown fields (here 200, an extension, and 4, self-test data) skip
    more = parse_model_proto(data + piece("qq", -1.5) + field(200, b"\x08\x01") + field(4, b""))
    assert more.pieces[-1].piece == "qq" and more.pieces[-1].type == NORMAL
    assert more.pieces[:-1] == proto.pieces
    bare = parse_model_proto(piece("<unk>", 0.0, UNKNOWN))
    assert bare.trainer_spec.model_type == UNIGRAM and bare.normalizer_spec.add_dummy_prefix


@pytest.mark.parametrize("cut, message", [
    (lambda d: d[: len(d) // 2], "runs past the end"),
    (lambda d: d[:1], "a varint runs past the end at byte 1"),
    (lambda d: field(1, 7) + d, "field 1 has wire type 0, expected 2 at byte 0"),
    (lambda d: b"\x0b" + d, "wire type 3 (field 1) at byte 0"),
    (lambda d: field(1, field(1, b"\xff") + field(2, 0.0)) + d, "string field 1 is not UTF-8"),
    (lambda d: field(2, field(3, 1)), "it holds no pieces"),
    (lambda d: b"\x00" + d, "field number 0 at byte 0"),
], ids=["half", "one-byte", "wire-type", "group", "not-utf8-piece", "no-pieces", "field-0"])
def test_malformed_bytes_are_one_artifact_error_naming_the_offset(cut, message):
    data = cut(train(model_type="bpe", normalization_rule_name="identity"))
    with pytest.raises(ArtifactError, match=re.escape(message)) as info:
        parse_model_proto(data, "m.model")
    assert info.value.message.startswith("m.model is not a SentencePiece model")


def test_looks_like_a_model_only_for_models():
    assert looks_like_model_proto(train(model_type="unigram")[:4096])
    for head in (b"", b"\n" * 50, b"IQ== 0\nIg== 1\n", b'{"model": {}}', b"\x0a\x02\x0a\x00",
                 b"\x1f\x8b\x08\x00", b"PK\x03\x04", b"GGUF\x03\x00"):
        assert not looks_like_model_proto(head), head


def test_charsmap_lookups_agree_with_tokenizers_precompiled():
    tokenizers = pytest.importorskip("tokenizers")
    blob = parse_model_proto(train(model_type="unigram")).normalizer_spec.precompiled_charsmap
    charsmap, reference = Charsmap(blob), tokenizers.normalizers.Precompiled(blob)
    rng = random.Random(3)
    points = [0x41, 0xA0, 0xC5, 0x2581, 0x3000, 0xFF21, 0xFB01, 0x2167, 0x1E9B, 0x0, 0x9, 0x85]
    points += [rng.randrange(0x110000) for _ in range(3000)]
    for cp in points:
        if 0xD800 <= cp < 0xE000:
            continue
        char = chr(cp)
        found = charsmap.prefixes(char.encode("utf-8"))
        mine = found[-1][1] if found and found[-1][0] == len(char.encode("utf-8")) else char
        assert mine == reference.normalize_str(char), hex(cp)
    assert charsmap.touches("ﬁne") and not charsmap.touches("fine")
    with pytest.raises(ArtifactError, match="trie size"):
        Charsmap(b"\xff\xff\x00\x00" + blob[4:100])
