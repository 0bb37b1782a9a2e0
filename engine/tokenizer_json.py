"""``tokenizer.json`` (and SentencePiece ``.model``, converted to one) -> ``Artifact``.

Two families read the same format: byte-level BPE (a ``ByteLevel`` pre-tokenizer; the
vocabulary is bytes) and piece tokenizers (SentencePiece-style BPE and Unigram; the
vocabulary is strings, ``piece_tokenizer.py``). ``models.piece_models.is_piece_tokenizer`` is the one rule
that tells them apart. Every component a file names is checked here, at import and
load: one the engine does not implement is refused by name and by its path in the file
(docs/FORMATS.md lists them all).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import preloaded
from .models.piece_models import is_piece_tokenizer
from .artifact import AddedToken, Artifact, _read, content_hash, sha256_hex
from .errors import ArtifactError, UnsupportedArtifact
from .file_checks import check_tokenizer_json, merge_pairs, parse_json, vocab_tokens
from .sentencepiece_files import parse_model_proto
from .sentencepiece_json import sentencepiece_config, tokenizer_json_from_proto

_SUPPORTED_NORMALIZERS = {"NFC", "NFKC", "NFD", "NFKD", "Sequence"}
_SUPPORTED_PRE_TOKENIZERS = {"Split", "ByteLevel", "Digits", "Sequence"}
_SUPPORTED_POST_PROCESSORS = {"ByteLevel", "TemplateProcessing", "Sequence"}


def _check_tree(spec: dict | None, supported: set[str], stage: str, path: str, key: str) -> None:
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise ArtifactError(f"{path}: {stage} step {spec!r:.60} is not an object", path=path)
    kind = spec.get("type")
    if kind not in supported:
        raise UnsupportedArtifact(f"{stage} {kind!r:.60}", path)
    if kind == "Sequence":
        children = spec.get(key, [])
        if not isinstance(children, list):
            raise ArtifactError(f"{path}: {stage} Sequence {key!r} is not a list", path=path)
        for child in children:
            _check_tree(child, supported, stage, path, key)


def added_token_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("content")
    return None


def load_tokenizer_json(
    path: str | Path, *, name: str | None = None, config: dict[str, Any] | None = None
) -> Artifact:
    """A Hugging Face ``tokenizer.json``: byte-level BPE, or a piece tokenizer
    (SentencePiece-style BPE with byte fallback, Unigram; ``piece_tokenizer.py``).

    ``config`` is the optional ``tokenizer_config.json`` (BOS/EOS/PAD literals and the
    add_bos/add_eos flags some tokenizers keep there instead of a post-processor).
    """
    path = Path(path)
    data = _read(path)
    digest = sha256_hex(data)
    name = name or path.parent.name or path.stem
    hit = preloaded.lookup(digest)
    if hit is not None:  # built before this worker forked: share it (preloaded.py)
        spec, model = hit
        return _piece_artifact(spec, digest, name=name, config=config, where=str(path),
                               fmt="hf_tokenizer_json", model=model)
    spec = parse_json(data, path)
    return tokenizer_json_artifact(spec, digest, name=name, config=config, where=str(path))


def tokenizer_json_artifact(spec: Any, data_hash: str, *, name: str,
                            config: dict[str, Any] | None = None, where: str,
                            fmt: str = "hf_tokenizer_json") -> Artifact:
    """The artifact of a parsed ``tokenizer.json`` (``data_hash``: the sha256 of the bytes
    it came from; ``where``: the file, for messages). ``fmt`` names the file's format
    (a SentencePiece ``.model`` arrives here converted)."""
    check_tokenizer_json(spec, where)
    if is_piece_tokenizer(spec):
        return _piece_artifact(spec, data_hash, name=name, config=config, where=where,
                               fmt=fmt)
    model = spec["model"]
    if not isinstance(model.get("vocab"), dict):
        raise ArtifactError(f"{where}: model.vocab must be an object of token -> id",
                            path=where)
    if model.get("type", "BPE") != "BPE":
        raise UnsupportedArtifact(f"model type {model.get('type')!r} (only BPE and Unigram)",
                                  where)
    for flag in ("byte_fallback", "fuse_unk"):
        if model.get(flag):
            raise UnsupportedArtifact(f"BPE {flag}=true with a ByteLevel pre-tokenizer", where)
    if model.get("dropout") not in (None, 0, 0.0):
        raise UnsupportedArtifact("BPE dropout", where)
    for affix in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(affix):
            raise UnsupportedArtifact(f"BPE {affix}={model[affix]!r}", where)
    pre = spec.get("pre_tokenizer")
    _check_tree(spec.get("normalizer"), _SUPPORTED_NORMALIZERS, "normalizer", where, "normalizers")
    _check_tree(pre, _SUPPORTED_PRE_TOKENIZERS, "pre_tokenizer", where, "pretokenizers")
    _check_tree(
        spec.get("post_processor"), _SUPPORTED_POST_PROCESSORS, "post_processor", where,
        "processors",
    )
    decoder = spec.get("decoder")
    if decoder is not None and decoder.get("type") != "ByteLevel":
        raise UnsupportedArtifact(f"decoder {decoder.get('type')!r} (only ByteLevel)", where)

    added_ids = {t["id"] for t in spec.get("added_tokens", [])}
    # Added tokens may also sit in the model's vocabulary under their literal (not
    # byte-level) spelling; they are matched by the scan, never produced by merges.
    tokens = vocab_tokens(model["vocab"], added_ids, where)
    merges = merge_pairs(model.get("merges", []), where)
    config = config or {}
    settings = {"format": fmt, "config": {
        k: config.get(k) for k in ("add_bos_token", "add_eos_token", "bos_token", "eos_token")
    }}
    return Artifact(
        name=name,
        format=fmt,
        reference="tokenizers",
        tokens=tokens,
        merges=merges,
        whole_piece_lookup=bool(model.get("ignore_merges", False)),
        added_tokens=_added_tokens(spec),
        normalizer=spec.get("normalizer"),
        pre_tokenizer=pre,
        post_processor=spec.get("post_processor"),
        bos_token=added_token_text(config.get("bos_token")),
        eos_token=added_token_text(config.get("eos_token")),
        pad_token=added_token_text(config.get("pad_token")),
        add_bos_token=bool(config.get("add_bos_token", False)),
        add_eos_token=bool(config.get("add_eos_token", False)),
        hash=content_hash(data_hash, settings),
    )


def _added_tokens(spec: dict[str, Any]) -> tuple[AddedToken, ...]:
    return tuple(
        AddedToken(
            t["content"], t["id"], bool(t.get("special", False)),
            bool(t.get("lstrip", False)), bool(t.get("rstrip", False)),
            bool(t.get("single_word", False)), bool(t.get("normalized", False)),
        )
        for t in spec.get("added_tokens", [])
    )


def _piece_artifact(spec: dict[str, Any], data_hash: str, *, name: str,
                    config: dict[str, Any] | None, where: str, fmt: str,
                    model: Any = None) -> Artifact:
    """A piece tokenizer's artifact. Every stage is parsed here once, so a component the
    engine does not implement is refused at import and load, by name and by its path in
    the file (``normalizer.normalizers[1]: normalizer 'BertNormalizer'``). Only the
    file's post-processor adds BOS/EOS, as in ``tokenizers``."""
    from .decoders.piece_decoder import PieceDecoder
    from .models.piece_models import build_piece_model
    from .normalizers.piece_normalizer import PieceNormalizer
    from .pre_tokenizers.piece_pre_tokenizer import PiecePreTokenizer

    try:
        if model is None:
            model = build_piece_model(spec["model"])
        PieceNormalizer(spec.get("normalizer"))
        PiecePreTokenizer(spec.get("pre_tokenizer"))
        if spec.get("decoder") is not None:
            PieceDecoder(spec.get("decoder"))
        _check_tree(spec.get("post_processor"), {"TemplateProcessing", "Sequence"},
                    "post_processor", where, "processors")
    except UnsupportedArtifact as e:
        raise UnsupportedArtifact(e.details.get("feature", str(e)), where) from None
    except ArtifactError as e:
        raise ArtifactError(f"{where}: {e}", path=where) from None
    config = config or {}
    # the stages too: a SentencePiece .model's post-processor comes from the caller's
    # add_bos/add_eos, not from the bytes the data hash covers
    settings = {"format": fmt, "family": "pieces", "config": {
        k: config.get(k) for k in ("bos_token", "eos_token")},
        "stages": {k: spec.get(k) for k in ("normalizer", "pre_tokenizer", "post_processor",
                                            "decoder", "added_tokens")}}
    return Artifact(
        name=name,
        format=fmt,
        reference="tokenizers",
        tokens=None,
        merges=None,
        whole_piece_lookup=False,
        added_tokens=_added_tokens(spec),
        normalizer=spec.get("normalizer"),
        pre_tokenizer=spec.get("pre_tokenizer"),
        post_processor=spec.get("post_processor"),
        bos_token=added_token_text(config.get("bos_token")),
        eos_token=added_token_text(config.get("eos_token")),
        pad_token=added_token_text(config.get("pad_token")),
        add_bos_token=False,
        add_eos_token=False,
        hash=content_hash(data_hash, settings),
        # the built model holds the vocabulary; the parsed one (tens of MB of Python
        # objects for a large vocabulary) is not kept in every worker
        model={k: v for k, v in spec["model"].items() if k not in ("vocab", "merges")},
        decoder=spec.get("decoder"),
        piece_model=model,
    )


# ---------------------------------------------------------------- SentencePiece .model


def load_sentencepiece(path: str | Path, *, name: str | None = None,
                       config: dict[str, Any] | None = None) -> Artifact:
    """A SentencePiece ``.model`` file (protobuf), read as the ``tokenizer.json`` it
    converts to (sentencepiece_json.py: ids equal to sentencepiece's on ordinary text).

    ``config``: the BOS/EOS/PAD literals and ``add_bos_token``/``add_eos_token`` (a
    manifest's), over the model's own (``sentencepiece_config``: BOS added when the
    model has one). The content hash covers the ``.model`` bytes and the config.
    """
    path = Path(path)
    data = _read(path)
    proto = parse_model_proto(data, str(path))
    merged = sentencepiece_config(proto)
    merged.update({k: v for k, v in (config or {}).items() if v is not None})
    spec = tokenizer_json_from_proto(proto, str(path), add_bos=bool(merged["add_bos_token"]),
                                     add_eos=bool(merged["add_eos_token"]))
    return tokenizer_json_artifact(spec, sha256_hex(data), name=name or path.parent.name
                                   or path.stem, config=merged, where=str(path),
                                   fmt="sentencepiece")
