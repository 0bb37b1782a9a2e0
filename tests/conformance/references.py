"""Reference tokenizers built from the shared artifact files, and ours beside them.

The references are the libraries each artifact was published for: ``tiktoken`` for the
rank files (cl100k_base, o200k_base, Llama 3, Qwen) and Hugging Face ``tokenizers`` for
DeepSeek-V4's ``tokenizer.json``, built from the same files with no network.

A ``Pair`` puts ours and the reference behind one vocabulary of operations, so the
conformance tests are written once and run for every tokenizer:

* ``ref.encode(text, policy, add_special_tokens)`` returns ids, or raises
  ``ReferenceRejected`` (with the literals found) for ``policy="reject"``;
* ``ref.decode(ids, skip_special_tokens)`` returns the reference's text.

Policy mapping (see ../shared/API.md): ``allow`` = tiktoken ``allowed_special="all"`` /
tokenizers' default; ``text`` = tiktoken ``encode_ordinary`` / a tokenizers instance
built from the same JSON with ``added_tokens`` emptied (the engine applies the policy to
ALL added tokens, special or not); ``reject`` = the reference raises (tiktoken's default
``encode``), and the literals are those the ``allow`` reference turns into added ids.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest
from shared_files import shared_file

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared"
ARTIFACTS = SHARED / "artifacts"

#: name -> (file under ../shared/artifacts, preset for tokserve.load or None for tokenizer.json)
TOKENIZER_FILES: dict[str, tuple[str, str | None]] = {
    "cl100k_base": ("openai/cl100k_base.tiktoken", "cl100k_base"),
    "o200k_base": ("openai/o200k_base.tiktoken", "o200k_base"),
    "llama3": ("meta-llama3/tokenizer.model", "llama3"),
    "qwen": ("qwen/qwen.tiktoken", "qwen"),
    "deepseek-v4": ("deepseek-v4/tokenizer.json", None),
}
TIKTOKEN_NAMES = ["cl100k_base", "o200k_base", "llama3", "qwen"]
ALL_NAMES = list(TOKENIZER_FILES)
POLICIES = ("reject", "allow", "text")



def env_int(name: str, default: int) -> int:
    """An integer knob from the environment (e.g. TOKSERVE_HYPOTHESIS_MAX_EXAMPLES)."""
    raw = os.environ.get(name, "")
    return int(raw) if raw.strip() else default


def artifact_file(relative: str) -> Path:
    """The path of a shared artifact (or its bundled copy), or skip naming the file."""
    return shared_file(f"artifacts/{relative}")


# ============================================================================ references


class ReferenceRejected(Exception):
    """The reference refuses the text under ``reject``; ``literals`` are the ones it found."""

    def __init__(self, literals: set[str]) -> None:
        super().__init__(sorted(literals))
        self.literals = literals


class Reference(Protocol):
    name: str
    literals: dict[str, int]          # every literal the special-token policy governs
    special_ids: frozenset[int]       # ids skipped by decode(skip_special_tokens=True)

    def encode(self, text: str, policy: str = "allow", add_special_tokens: bool = False) -> list[int]: ...
    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...


def read_tiktoken_ranks(path: Path) -> dict[bytes, int]:
    """Parse a rank file: one ``base64(token) rank`` pair per non-empty line."""
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@dataclass
class TiktokenReference:
    """tiktoken.Encoding built from a local rank file, plus the BOS our preset adds."""

    name: str
    encoding: Any
    bos_id: int | None = None
    literals: dict[str, int] = field(init=False)
    special_ids: frozenset[int] = field(init=False)

    def __post_init__(self) -> None:
        self.literals = dict(self.encoding._special_tokens)
        self.special_ids = frozenset(self.literals.values())

    def encode(self, text: str, policy: str = "allow", add_special_tokens: bool = False) -> list[int]:
        enc = self.encoding
        if policy == "reject":
            try:
                ids = enc.encode(text)
            except ValueError:
                got = set(enc.encode(text, allowed_special="all"))
                raise ReferenceRejected({lit for lit, i in self.literals.items() if i in got}) from None
        elif policy == "allow":
            ids = enc.encode(text, allowed_special="all")
        elif policy == "text":
            ids = enc.encode_ordinary(text)
        else:
            raise ValueError(policy)
        if add_special_tokens and self.bos_id is not None:
            ids = [self.bos_id, *ids]
        return ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        if skip_special_tokens:
            ids = [i for i in ids if i not in self.special_ids]
        return self.encoding.decode(ids)

    def decode_bytes(self, ids: list[int]) -> bytes:
        return self.encoding.decode_bytes(ids)


# Facts from ../shared/artifacts/README.md (what the reference implementations use),
# written out here rather than taken from tokserve.presets so that a wrong preset cannot
# hide behind a reference built from the same mistake.
_CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
           r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
_LLAMA3 = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
           r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
_QWEN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
         r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
_LLAMA3_SPECIALS = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
    "<|python_tag|>", "<|image|>",
] + [f"<|reserved_special_token_{i}|>" for i in range(2, 246)]
_QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{i}|>" for i in range(205)]

#: name -> (pattern, special tokens, BOS id added by add_special_tokens or None)
REFERENCE_FACTS: dict[str, tuple[str, dict[str, int], int | None]] = {
    "cl100k_base": (_CL100K, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                              "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                              "<|endofprompt|>": 100276}, None),
    "o200k_base": (_O200K, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, None),
    "llama3": (_LLAMA3, {t: 128000 + i for i, t in enumerate(_LLAMA3_SPECIALS)}, 128000),
    "qwen": (_QWEN, {t: 151643 + i for i, t in enumerate(_QWEN_SPECIALS)}, None),
}


def build_tiktoken_reference(name: str, path: Path) -> TiktokenReference:
    """tiktoken.Encoding from the rank file plus the README's pattern and specials."""
    import tiktoken

    pattern, specials, bos = REFERENCE_FACTS[name]
    encoding = tiktoken.Encoding(
        name=f"ref-{name}",
        pat_str=pattern,
        mergeable_ranks=read_tiktoken_ranks(path),
        special_tokens=dict(specials),
    )
    return TiktokenReference(name, encoding, bos)


@dataclass
class TokenizersReference:
    """Hugging Face ``tokenizers`` on tokenizer.json, and the same JSON minus added tokens."""

    name: str
    full: Any
    plain: Any
    literals: dict[str, int]
    special_ids: frozenset[int]

    @staticmethod
    def _clean(text: str) -> str:
        # tokenizers cannot take surrogates at all; the engine's documented policy is
        # tiktoken's (pairs joined, each lone surrogate one U+FFFD), so that is what we feed
        # the reference.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

    def encode(self, text: str, policy: str = "allow", add_special_tokens: bool = False) -> list[int]:
        text = self._clean(text)
        if policy == "text":
            return self.plain.encode(text, add_special_tokens=add_special_tokens).ids
        enc = self.full.encode(text, add_special_tokens=add_special_tokens)
        if policy == "reject":
            added = set(self.literals.values())
            found = {enc.tokens[k] for k, i in enumerate(enc.ids)
                     if i in added and enc.offsets[k][1] > enc.offsets[k][0]}
            if found:
                raise ReferenceRejected(found)
        elif policy != "allow":
            raise ValueError(policy)
        return enc.ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.full.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_bytes(self, ids: list[int]) -> bytes:
        raise NotImplementedError("tokenizers has no bytes-level decode")


def build_tokenizers_reference(name: str, path: Path) -> TokenizersReference:
    from tokenizers import Tokenizer

    raw = path.read_text(encoding="utf-8")
    spec = json.loads(raw)
    literals = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
    specials = frozenset(t["id"] for t in spec.get("added_tokens", []) if t.get("special"))
    spec["added_tokens"] = []
    return TokenizersReference(
        name, Tokenizer.from_str(raw), Tokenizer.from_str(json.dumps(spec)), literals, specials
    )


# ============================================================================ pairs


@dataclass
class Pair:
    """Ours and the reference for one tokenizer."""

    name: str
    ours: Any  # tokserve.Tokenizer
    ref: Any   # TiktokenReference | TokenizersReference

    def __repr__(self) -> str:
        return f"Pair({self.name})"


_PAIRS: dict[str, Pair] = {}


def load_ours(name: str):
    import tokserve

    relative, preset = TOKENIZER_FILES[name]
    path = artifact_file(relative)
    return tokserve.load(str(path), preset=preset) if preset else tokserve.load(str(path))


def get_pair(name: str) -> Pair:
    """Build (once per session) ours and the reference for ``name``; skip if files are absent."""
    if name not in _PAIRS:
        relative, preset = TOKENIZER_FILES[name]
        path = artifact_file(relative)
        if preset:
            pytest.importorskip("tiktoken", reason="tiktoken is the reference for rank files")
            ref = build_tiktoken_reference(name, path)
        else:
            pytest.importorskip("tokenizers", reason="tokenizers is the reference for tokenizer.json")
            ref = build_tokenizers_reference(name, path)
        _PAIRS[name] = Pair(name, load_ours(name), ref)
    return _PAIRS[name]
