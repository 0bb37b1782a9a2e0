"""Export: a tiktoken-format artifact as a Hugging Face ``tokenizer.json`` with the same ids.

A rank file and a merges list state BPE differently: tiktoken merges any two adjacent
symbols whose bytes together are a token, lowest rank first; ``tokenizers`` merges only
the pairs its list names, in list order. They agree when the list holds, for each token
t in rank order, the one pair that can ever be adjacent and merge into t: the two ids
the merge loop joins last on t's own bytes (``BpeModel.splits``). Why that pair is the
only one: while t's bytes are still two symbols x and y, no merge has crossed their
edges, so everything merged inside them happened as it does on t's bytes alone, where
x and y adjacent means the next merge is x + y; so (x, y) is that last merge. Both
libraries then see the same mergeable pairs in every state and rank them alike (a
pair's rank is its token's), leftmost first on ties: the same merges, the same ids.

Three more things make the file exact:

* ``ignore_merges``: a piece that is itself a token is that token (tiktoken's rule,
  which also reaches tokens merging cannot build);
* the pre-tokenizer: a ``Split`` on the same pattern, which is only exact for patterns
  whose Oniguruma semantics were checked equal to tiktoken's (patterns.py); others are
  refused rather than exported approximately;
* special tokens as added tokens (``special``, never normalized).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..artifact import Artifact
from ..decoders.byte_level import BYTE_TO_CHAR
from ..errors import UnsupportedArtifact
from ..models.bpe._bpe import BpeModel
from ..patterns import PATTERNS
from ..tables import image_of

_EXACT_IN_TOKENIZERS = {p.text for p in PATTERNS if "tokenizers" in p.references}


def hf_tokenizer_json(artifact: Artifact) -> dict[str, Any]:
    """The ``tokenizer.json`` object for a tiktoken-format ``artifact``.

    Raises:
        UnsupportedArtifact: not a tiktoken-format artifact, or its pattern is not one
            tokenizers splits exactly as tiktoken does.
    """
    if artifact.format != "tiktoken" or artifact.pre_tokenizer.get("type") != "Pattern":
        raise UnsupportedArtifact(f"export of {artifact.format!r} artifacts (only tiktoken ranks)")
    pattern = artifact.pre_tokenizer["pattern"]
    if pattern not in _EXACT_IN_TOKENIZERS:
        raise UnsupportedArtifact(
            f"pattern {pattern[:60]!r}… in tokenizers (its regex engine splits it differently "
            f"from tiktoken's); exportable patterns: "
            f"{', '.join(p.name for p in PATTERNS if p.text in _EXACT_IN_TOKENIZERS)}")
    model = BpeModel(image=image_of(artifact), cache_capacity=0)
    # every id below a rank file's size is a rank: no gaps
    names = [_byte_level(model.decode_bytes([tid])[0]) for tid in range(model.size)]
    vocab = {name: tid for tid, name in enumerate(names)}
    merges = [[names[a], names[b]] for split in model.splits() if split is not None
              for a, b in (split,)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": t.id, "content": t.content, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
            for t in sorted(artifact.added_tokens, key=lambda t: t.id)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
             "invert": False},
            byte_level]},
        "post_processor": None,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    }


def write_hf_tokenizer_json(artifact: Artifact, path: str | Path) -> Path:
    """Write ``hf_tokenizer_json(artifact)`` to ``path`` (a file, or a directory that
    gets ``tokenizer.json``); returns the file written."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    path.write_text(json.dumps(hf_tokenizer_json(artifact), ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def _byte_level(token: bytes) -> str:
    return "".join(BYTE_TO_CHAR[b] for b in token)
