"""The shape of what tokenizer files hold, checked before anything is built from them.

Every malformed input becomes one ``ArtifactError`` whose message names the file, where
in it, and the value (ids printed exactly: ``2**62`` is ``4611686018427387904``, never
a 32-bit remainder), so the CLI prints one line and exits 2 and a served root logs one
line, instead of a traceback from deep inside a loader. What is checked:

* JSON files: UTF-8 (a UTF-16 or UTF-32 file is named as such), valid, and not nested
  deeper than the parser can follow (``read_json``, ``parse_json``);
* token ids: integers (not ``true``, ``1.5`` or ``"5"``) in ``0..MAX_TOKEN_ID``, the
  range the compiled tables hold (``token_id``);
* special and added tokens: a non-empty literal each (``token_literal``,
  ``special_tokens_map``);
* a ``tokenizer.json``'s structure: a ``model`` with a ``vocab`` object and a
  ``merges`` list, ``added_tokens`` entries with ``id`` and ``content``, and stage
  trees (normalizer, pre_tokenizer, post_processor, decoder) that are objects no deeper
  than ``MAX_STAGE_DEPTH`` (``check_tokenizer_json``, ``vocab_tokens``, ``merge_pairs``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .artifact import _read
from .decoders.byte_level import byte_level_decode
from .errors import ArtifactError

#: the largest token id: the compiled tables (bpe_image.h) hold ids 0..2^31-2
MAX_TOKEN_ID = 0x7FFFFFFE
#: a stage tree (a Sequence of Sequences ...) deeper than this is refused
MAX_STAGE_DEPTH = 32
_STAGES = ("normalizer", "pre_tokenizer", "post_processor", "decoder")


def read_json(path: Path) -> Any:
    """The JSON value in the file at ``path`` (see ``parse_json``)."""
    return parse_json(_read(path), path)


def check_not_utf16(data: bytes, path: Path | str) -> None:
    """Refuse ``data`` (a file's bytes) when it starts like UTF-16 or UTF-32 text."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) >= 2 and 0 in data[:2]):
        raise ArtifactError(f"{path} is UTF-16 or UTF-32 encoded (a byte-order mark or NUL "
                            f"bytes at its start); tokenizer files must be UTF-8",
                            path=str(path))


def parse_json(data: bytes, path: Path | str) -> Any:
    """``data`` (the bytes of the file at ``path``) parsed as UTF-8 JSON.

    Raises:
        ArtifactError: not UTF-8 (UTF-16/32 named as such), not valid JSON, or nested
            too deep to parse.
    """
    check_not_utf16(data, path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ArtifactError(f"{path} is not UTF-8: byte {e.start} ({e.reason})",
                            path=str(path)) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ArtifactError(f"{path} is nested too deeply to read", path=str(path)) from None
    except ValueError as e:
        raise ArtifactError(f"{path} is not valid JSON: {e}", path=str(path)) from None


def token_id(value: Any, where: str) -> int:
    """``value`` as a token id.

    Raises:
        ArtifactError: not an integer, or outside ``0..MAX_TOKEN_ID`` (printed exactly).
    """
    if type(value) is not int:
        raise ArtifactError(f"{where}: token id {value!r:.40} is not an integer")
    if not 0 <= value <= MAX_TOKEN_ID:
        raise ArtifactError(f"{where}: token id {value} is out of range "
                            f"(0 to {MAX_TOKEN_ID})", id=value)
    return value


def token_literal(value: Any, where: str) -> str:
    """``value`` as a special or added token's literal: a non-empty string."""
    if not isinstance(value, str):
        raise ArtifactError(f"{where}: token content {value!r:.40} is not a string")
    if not value:
        raise ArtifactError(f"{where}: a token with empty content (it would match "
                            f"everywhere and nowhere)")
    return value


def special_tokens_map(value: Any, where: str) -> dict[str, int]:
    """``value`` as ``{literal: id}`` (a manifest's or a command line's special tokens)."""
    if not isinstance(value, dict):
        raise ArtifactError(f"{where}: special tokens must be an object of literal -> id, "
                            f"not {type(value).__name__}")
    return {token_literal(lit, f"{where} {lit!r:.40}"): token_id(tid, f"{where} {lit!r:.40}")
            for lit, tid in value.items()}


def check_tokenizer_json(spec: Any, where: str) -> None:
    """The structure of a parsed ``tokenizer.json`` (see the module docstring); the
    vocabulary's and merges' entries are checked as they are read (``vocab_tokens``,
    ``merge_pairs``), in the one pass that converts them."""
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise ArtifactError(f"{where} has no 'model' object", path=where)
    model = spec["model"]
    if not isinstance(model.get("vocab"), (dict, list)):  # a list: Unigram's [piece, score]
        raise ArtifactError(f"{where}: model.vocab must be an object of token -> id (or a "
                            f"Unigram list of [piece, score]), got "
                            f"{type(model.get('vocab')).__name__}", path=where)
    if not isinstance(model.get("merges", []), list):
        raise ArtifactError(f"{where}: model.merges must be a list", path=where)
    added = spec.get("added_tokens", [])
    if not isinstance(added, list):
        raise ArtifactError(f"{where}: added_tokens must be a list", path=where)
    for i, token in enumerate(added):
        at = f"{where}: added_tokens[{i}]"
        if not isinstance(token, dict):
            raise ArtifactError(f"{at} is not an object")
        for key in ("id", "content"):
            if key not in token:
                raise ArtifactError(f"{at} has no {key!r}")
        token_id(token["id"], at)
        token_literal(token["content"], at)
    for stage in _STAGES:
        tree = spec.get(stage)
        if tree is not None and not isinstance(tree, dict):
            raise ArtifactError(f"{where}: {stage} must be an object or null, got "
                                f"{type(tree).__name__}", path=where)
        if _depth(tree) > MAX_STAGE_DEPTH:
            raise ArtifactError(f"{where}: {stage} is nested deeper than {MAX_STAGE_DEPTH} "
                                f"levels", path=where)


def vocab_tokens(vocab: dict[str, Any], skip: set[int], where: str) -> list[tuple[bytes, int]]:
    """``(token bytes, id)`` for the byte-level ``vocab``, ids in ``skip`` left out."""
    tokens = []
    for tok, tid in vocab.items():
        if type(tid) is not int or not 0 <= tid <= MAX_TOKEN_ID:
            token_id(tid, f"{where}: model.vocab[{tok!r:.40}]")
        if tid not in skip:
            tokens.append((byte_level_decode(tok, where), tid))
    if len({tid for _, tid in tokens}) != len(tokens):
        seen: dict[int, str] = {}
        for tok, tid in vocab.items():
            if tid in seen and tid not in skip:
                raise ArtifactError(f"{where}: model.vocab gives id {tid} to both "
                                    f"{seen[tid]!r:.40} and {tok!r:.40}", path=where)
            seen[tid] = tok
    return tokens


def merge_pairs(merges: list[Any], where: str) -> list[tuple[bytes, bytes]]:
    """The byte-level ``merges`` (``"a b"`` strings or ``[a, b]`` pairs) as byte pairs."""
    pairs = []
    for i, m in enumerate(merges):
        if isinstance(m, str) and " " in m:
            left, right = m.split(" ", 1)
        elif isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m):
            left, right = m
        else:
            raise ArtifactError(f"{where}: model.merges[{i}] is {m!r:.60}, not 'a b' or "
                                f"['a', 'b']", path=where)
        pairs.append((byte_level_decode(left, where), byte_level_decode(right, where)))
    return pairs


def sequence_leaves(spec: Any, where: str, key: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The steps of a stage tree in order, ``Sequence`` nodes (their children under
    ``key``: ``normalizers``, ``pretokenizers``, ``decoders``) flattened, each with its
    path in the file for messages (``normalizer.normalizers[1]``). None has no steps.

    Raises:
        ArtifactError: a node that is not an object, or a Sequence without a list.
    """
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise ArtifactError(f"{where} is not an object")
    if spec.get("type") != "Sequence":
        yield spec, where
        return
    children = spec.get(key)
    if not isinstance(children, list):
        raise ArtifactError(f"{where}.{key} is not a list")
    for i, child in enumerate(children):
        yield from sequence_leaves(child, f"{where}.{key}[{i}]", key)


def _depth(tree: Any) -> int:
    """How deep ``tree`` nests (without recursion, so any depth is measured)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_STAGE_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest
