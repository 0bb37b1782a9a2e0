"""Pre-tokenizer patterns, each written once, with the compiled scanner that reproduces it.

A known pattern is a ``Pattern``: its text exactly as the reference library writes it,
the scanner family of ``pretok_scan.h`` that gives the same pieces (or -1), and the
references whose regex semantics were checked equal to that scanner
(tests/engine/pre_tokenizers/test_pre_tokenizer.py): the same text can mean different
things to tiktoken (Rust regex, ``$`` = end of text) and to tokenizers (Oniguruma, ``$``
= end of line). The presets (presets.py) take their patterns from here, and so does family
detection, so a pattern and its scanner cannot drift apart; a pattern that equals no
definition here runs on the ``regex`` fallback (same ids, slower), and
``Tokenizer.pre_tokenizer_backend`` says which one a tokenizer got.

This is also the one table of pattern NAMES (``resolve_pattern``): ``train --pattern`` and
``artifact import --pattern`` take a name (a pattern's own, or a tiktoken encoding's that
uses it) or a regex, so ``--pattern o200k_base`` means o200k_base's pattern everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import ArtifactError

from .pre_tokenizers._scan import CL100K, DEEPSEEK_V4, LLAMA3, O200K, QWEN, TEKKEN

TIKTOKEN = frozenset({"tiktoken"})
BOTH = frozenset({"tiktoken", "tokenizers"})


@dataclass(frozen=True)
class Pattern:
    name: str
    text: str
    family: int = -1  # pretok_scan.h scanner, -1: the regex fallback
    references: frozenset[str] = frozenset()  # where ``family`` is exact


_CONTRACTIONS = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)"""
_O200K_TEMPLATE = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+%(c)s""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*%(c)s""",
    r"""\p{N}%(d)s""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

# tiktoken 0.14's cl100k_base (possessive; `\s++$` is why Oniguruma differs)
CL100K = Pattern(
    "cl100k_base",
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    CL100K, TIKTOKEN)
O200K = Pattern("o200k_base", _O200K_TEMPLATE % {"c": _CONTRACTIONS + "?", "d": "{1,3}"},
                O200K, BOTH)
# Llama 3; also tiktoken's pre-0.14 cl100k_base pattern
LLAMA3 = Pattern(
    "llama3",
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+""",
    LLAMA3, BOTH)
QWEN = Pattern(
    "qwen",
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+""",
    QWEN, BOTH)
TEKKEN = Pattern("tekken", _O200K_TEMPLATE % {"c": "", "d": ""}, TEKKEN, BOTH)
# GPT-2's pattern as tiktoken writes it (possessive form, same pieces as the original
# ``'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+``);
# gpt2, r50k_base, p50k_base and p50k_edit. No scanner: the regex fallback.
R50K = Pattern(
    "r50k_base",
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""")

# GPT-2's original pattern: what tokenizers' ByteLevel(use_regex=True) splits with.
BYTE_LEVEL = Pattern(
    "byte_level", r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

PATTERNS = (CL100K, O200K, LLAMA3, QWEN, TEKKEN, R50K, BYTE_LEVEL)

# DeepSeek-V4's tokenizer.json: Sequence[three Split(Isolated) on these, in order,
# ByteLevel(use_regex=false)]; every later split runs inside one piece of the previous.
DEEPSEEK_V4_SPLITS = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
)

#: name -> pattern: each pattern's own name, and the tiktoken encodings' (presets.py)
#: whose pattern it is (tests check these agree with the presets)
PATTERN_NAMES: dict[str, Pattern] = {
    **{p.name: p for p in PATTERNS},
    "gpt2": R50K, "p50k_base": R50K, "p50k_edit": R50K, "o200k_harmony": O200K,
}
_BARE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
#: the texts checked here (scanner-exact, or tiktoken's and tokenizers' own): the
#: ``regex`` fallback runs them without the load-time checks custom patterns get
KNOWN_TEXTS = frozenset({p.text for p in PATTERNS} | set(DEEPSEEK_V4_SPLITS))


def resolve_pattern(name_or_regex: str) -> str:
    """A pattern name (``PATTERN_NAMES``) -> its text; any other string is a regex, as is.

    A bare word that names no pattern (``o200k``) is refused rather than taken as the
    literal regex it spells, which would match almost nothing of a text.

    Raises:
        ArtifactError: a bare word that is not a known name (listing the names).
    """
    known = PATTERN_NAMES.get(name_or_regex)
    if known is not None:
        return known.text
    if _BARE_WORD.fullmatch(name_or_regex):
        raise ArtifactError(f"unknown pattern name {name_or_regex!r}; known: "
                            f"{', '.join(sorted(PATTERN_NAMES))} (or give a regex)")
    return name_or_regex


_BY_TEXT = {(p.text, ref): p.family for p in PATTERNS if p.family >= 0 for ref in p.references}


def family_for_pattern(pattern: str, reference: str) -> int:
    """Scanner family reproducing ``pattern`` as ``reference`` matches it, or -1.

    ``reference`` is "tiktoken" (the pattern is the whole pre-tokenizer) or "tokenizers"
    (the pattern is a Split(Isolated) followed by ByteLevel(use_regex=false)).
    """
    return _BY_TEXT.get((pattern, reference), -1)


def family_for_pre_tokenizer(spec: dict[str, Any], reference: str) -> int:
    """Scanner family for a parsed pre-tokenizer spec, or -1 (the regex fallback).

    Recognised: ``{"type": "Pattern", "pattern": p}`` (as ``family_for_pattern``); for
    tokenizers, ``Sequence[Split(Regex p, Isolated), ByteLevel(add_prefix_space=false,
    use_regex=false)]`` with a known ``p``, and DeepSeek-V4's ``Sequence`` of its three
    Isolated Splits then that ByteLevel (``trim_offsets`` does not affect pieces). The
    spec must be well formed (the artifact loader checks it: ``check_spec``).
    """
    if spec["type"] == "Pattern":
        return family_for_pattern(spec["pattern"], reference)
    if reference != "tokenizers" or spec["type"] != "Sequence":
        return -1
    steps = spec["pretokenizers"]
    if not steps or not _plain_byte_level(steps[-1]):
        return -1
    splits = steps[:-1]
    if len(splits) == 1 and _plain_split(splits[0]):
        return family_for_pattern(splits[0]["pattern"]["Regex"], "tokenizers")
    if len(splits) == len(DEEPSEEK_V4_SPLITS) and all(
            _plain_split(step, p) for step, p in zip(splits, DEEPSEEK_V4_SPLITS)):
        return DEEPSEEK_V4
    return -1


def _plain_split(step: dict[str, Any], pattern: str | None = None) -> bool:
    if step["type"] != "Split" or set(step["pattern"]) != {"Regex"}:
        return False
    if pattern is not None and step["pattern"]["Regex"] != pattern:
        return False
    return step.get("behavior") == "Isolated" and not step.get("invert", False)


def _plain_byte_level(step: dict[str, Any]) -> bool:
    return (step["type"] == "ByteLevel" and not step.get("add_prefix_space", True)
            and step.get("use_regex", True) is False)
