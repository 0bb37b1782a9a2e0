"""``tiktoken_ext.openai_public`` under the shim: OpenAI's encodings, from bundled files.

tiktoken finds encodings through plugins: modules of the ``tiktoken_ext`` namespace that
define ``ENCODING_CONSTRUCTORS``, each constructor returning the keyword arguments of
``tiktoken.Encoding`` (``name``, ``pat_str``, ``mergeable_ranks``, ``special_tokens``,
sometimes ``explicit_n_vocab``). This module is that plugin with tiktoken's names, but
every constructor reads the bundled artifact (artifacts/<name>/<version>/: the rank file,
its SHA-256 checked against the manifest, and the manifest's pattern and special tokens)
instead of downloading, so ``Encoding(**cl100k_base())`` is tiktoken's cl100k_base with
no network. ``gpt2`` reads the r50k_base ranks (tiktoken derives the same 50,256 ranks
from GPT-2's vocab.bpe and encoder.json).
"""

from __future__ import annotations

from typing import Any

from ..patterns import R50K
from ..versions import read_manifest, resolve
from .load import load_tiktoken_bpe

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

#: tiktoken's possessive form of GPT-2's pattern (same pieces, faster)
r50k_pat_str = R50K.text

# the encodings tiktoken builds with ``explicit_n_vocab`` (a check that ids are dense)
_EXPLICIT_N_VOCAB = ("gpt2", "r50k_base", "p50k_base")


def _bundled(name: str) -> dict[str, Any]:
    """tiktoken's constructor result for the bundled artifact ``name`` (latest version)."""
    directory = resolve(name)
    manifest, _ = read_manifest(directory)
    rank_file = manifest["tokenizer_file"]
    ranks = load_tiktoken_bpe(str(directory / rank_file),
                              expected_hash=manifest["files"][rank_file])
    kwargs: dict[str, Any] = {"name": name}
    if name in _EXPLICIT_N_VOCAB:
        kwargs["explicit_n_vocab"] = manifest["vocab_size"]
    kwargs.update(pat_str=manifest["pattern"], mergeable_ranks=ranks,
                  special_tokens=dict(manifest["special_tokens"]))
    return kwargs


def gpt2() -> dict[str, Any]:
    return _bundled("gpt2")


def r50k_base() -> dict[str, Any]:
    return _bundled("r50k_base")


def p50k_base() -> dict[str, Any]:
    return _bundled("p50k_base")


def p50k_edit() -> dict[str, Any]:
    return _bundled("p50k_edit")


def cl100k_base() -> dict[str, Any]:
    return _bundled("cl100k_base")


def o200k_base() -> dict[str, Any]:
    return _bundled("o200k_base")


def o200k_harmony() -> dict[str, Any]:
    return _bundled("o200k_harmony")


ENCODING_CONSTRUCTORS = {
    "gpt2": gpt2,
    "r50k_base": r50k_base,
    "p50k_base": p50k_base,
    "p50k_edit": p50k_edit,
    "cl100k_base": cl100k_base,
    "o200k_base": o200k_base,
    "o200k_harmony": o200k_harmony,
}
