"""Which model a piece tokenizer's ``model`` spec means, built (one home for the rule).

``tokenizer.json`` names the model with ``type``; the early T5 format has no ``type`` and
is recognised as Unigram by its shape (``vocab`` a list of ``[piece, score]`` pairs and an
``unk_id``), as ``tokenizers`` itself recognises it. Every model built here has the same
interface: ``encode(data)``, ``count(data)``, ``encode_with_spans(data)``,
``id_to_piece(id)``, ``piece_to_id(piece)``, ``size``, ``clear_cache()``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArtifactError, UnsupportedArtifact


def model_kind(spec: Any, where: str = "model") -> str:
    """``"BPE"`` or ``"Unigram"`` (or the file's name for a model we do not serve, raised
    as UnsupportedArtifact)."""
    if not isinstance(spec, dict):
        raise ArtifactError(f"{where} is not an object")
    kind = spec.get("type")
    if kind is None:
        vocab = spec.get("vocab")
        if isinstance(vocab, list) and "unk_id" in spec:
            return "Unigram"
        if isinstance(vocab, dict) and "merges" in spec:
            return "BPE"
        raise ArtifactError(f"{where} has no type and is neither BPE nor Unigram in shape")
    if kind in ("BPE", "Unigram"):
        return kind
    raise UnsupportedArtifact(f"{where}: model type {kind!r:.60}")


def build_piece_model(spec: dict[str, Any], *, cache_capacity: int = 65536,
                      where: str = "model") -> Any:
    """The native model for ``spec`` (a ``tokenizer.json`` ``model`` object).

    Raises:
        UnsupportedArtifact: a model type or option the engine does not implement.
        ArtifactError: a malformed model (e.g. a merge of pieces not in the vocabulary).
    """
    kind = model_kind(spec, where)
    if kind == "BPE":
        from .piece_bpe._piece_bpe import from_model

        return from_model(spec, cache_capacity=cache_capacity)
    from .unigram._unigram import UnigramModel

    return UnigramModel.from_json_dict(spec, cache_capacity=cache_capacity)


def takes_ends(model: Any) -> bool:
    """Whether ``model.encode(data, ends)`` takes many pieces at once (``ends``: their
    exclusive byte ends in ``data``), so a text costs one call instead of one per word."""
    from .unigram._unigram import UnigramModel

    return isinstance(model, UnigramModel)


def is_piece_tokenizer(spec: dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` is of the piece family: a Unigram model, or a BPE
    model without a ByteLevel pre-tokenizer (its vocabulary is strings, not bytes)."""
    model = spec["model"]
    kind = model.get("type")
    if kind == "Unigram" or (kind is None and isinstance(model.get("vocab"), list)):
        return True
    return kind in (None, "BPE") and not _has_byte_level(spec.get("pre_tokenizer"))


def _has_byte_level(spec: dict | None) -> bool:
    """Whether a pre-tokenizer tree holds a ByteLevel step."""
    if spec is None:
        return False
    if spec.get("type") == "ByteLevel":
        return True
    return any(_has_byte_level(c) for c in spec.get("pretokenizers", []) or [])
