# cython: language_level=3
"""Python face of the compiled pre-tokenizer scanners (``pretok_scan.h``).

The BPE model calls ``pt_next_piece`` directly in its nogil loop; this module exists for
family detection (which artifact patterns the scanner reproduces exactly) and for tests
and the pure-Python layer (``split_pieces``).

Family detection is by exact pattern text, per reference library, because a pattern only
maps to a scanner whose semantics were checked against that library (tests/engine/
test_pre_tokenizer.py): the same text can mean different things to tiktoken (Rust regex,
``$`` = end of text) and to tokenizers (Oniguruma, ``$`` = end of line).

* ``family_for_pattern(pattern, reference)`` for a tiktoken-style single pattern;
* ``family_for_pre_tokenizer(spec, reference)`` for a parsed ``pre_tokenizer`` object of a
  Hugging Face tokenizer.json (or ``{"type": "Pattern", "pattern": ...}``).
Both return -1 for anything else (the ``regex`` fallback then applies).
"""

from .pretok_scan cimport (PT_CL100K, PT_DEEPSEEK_V4, PT_LLAMA3, PT_O200K, PT_QWEN, PT_TEKKEN,
                           pt_next_piece, pt_props_tiktoken, pt_props_tokenizers)

CL100K = PT_CL100K
O200K = PT_O200K
LLAMA3 = PT_LLAMA3
QWEN = PT_QWEN
TEKKEN = PT_TEKKEN
DEEPSEEK_V4 = PT_DEEPSEEK_V4

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

CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
                  r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
                  r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
                r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
O200K_PATTERN = _O200K_TEMPLATE % {"c": _CONTRACTIONS + "?", "d": "{1,3}"}
TEKKEN_PATTERN = _O200K_TEMPLATE % {"c": "", "d": ""}

DEEPSEEK_V4_SPLITS = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
)

# pattern text -> family, per reference. tiktoken: all five. tokenizers: the patterns
# without `$` whose Oniguruma semantics were checked equal (a Split(Isolated) covering
# every character).
_TIKTOKEN_FAMILIES = {
    CL100K_PATTERN: PT_CL100K,
    LLAMA3_PATTERN: PT_LLAMA3,  # also tiktoken's pre-0.14 cl100k_base pattern
    QWEN_PATTERN: PT_QWEN,
    O200K_PATTERN: PT_O200K,
    TEKKEN_PATTERN: PT_TEKKEN,
}
_TOKENIZERS_SPLIT_FAMILIES = {
    LLAMA3_PATTERN: PT_LLAMA3,
    QWEN_PATTERN: PT_QWEN,
    O200K_PATTERN: PT_O200K,
    TEKKEN_PATTERN: PT_TEKKEN,
}


def family_for_pattern(pattern: str, reference: str) -> int:
    """Scanner family reproducing ``pattern`` as ``reference`` matches it, or -1.

    ``reference`` is "tiktoken" (the pattern is the whole pre-tokenizer) or "tokenizers"
    (the pattern is a Split(Isolated) followed by ByteLevel(use_regex=false)).
    """
    if reference == "tiktoken":
        return _TIKTOKEN_FAMILIES.get(pattern, -1)
    if reference == "tokenizers":
        return _TOKENIZERS_SPLIT_FAMILIES.get(pattern, -1)
    return -1


def _is_plain_split(step, pattern=None) -> bool:
    if not isinstance(step, dict) or step.get("type") != "Split":
        return False
    pat = step.get("pattern")
    if not isinstance(pat, dict) or set(pat) != {"Regex"}:
        return False
    if pattern is not None and pat["Regex"] != pattern:
        return False
    return step.get("behavior") == "Isolated" and not step.get("invert", False)


def _is_plain_byte_level(step) -> bool:
    return (isinstance(step, dict) and step.get("type") == "ByteLevel"
            and not step.get("add_prefix_space", True) and step.get("use_regex", True) is False)


def family_for_pre_tokenizer(spec, reference: str) -> int:
    """Scanner family for a parsed pre-tokenizer spec, or -1.

    Recognised: ``{"type": "Pattern", "pattern": p}`` (as ``family_for_pattern``); for
    tokenizers, ``Sequence[Split(Regex p, Isolated), ByteLevel(add_prefix_space=false,
    use_regex=false)]`` with a known ``p``, and DeepSeek-V4's ``Sequence`` of its three
    Isolated Splits then that ByteLevel (``trim_offsets`` does not affect pieces).
    """
    if not isinstance(spec, dict):
        return -1
    if spec.get("type") == "Pattern":
        return family_for_pattern(spec.get("pattern"), reference)
    if reference != "tokenizers" or spec.get("type") != "Sequence":
        return -1
    steps = spec.get("pretokenizers")
    if not isinstance(steps, list) or not steps or not _is_plain_byte_level(steps[len(steps) - 1]):
        return -1
    splits = steps[:len(steps) - 1]
    if len(splits) == 1 and _is_plain_split(splits[0]):
        return family_for_pattern(splits[0]["pattern"]["Regex"], "tokenizers")
    if len(splits) == len(DEEPSEEK_V4_SPLITS) and all(
            _is_plain_split(st, p) for st, p in zip(splits, DEEPSEEK_V4_SPLITS)):
        return PT_DEEPSEEK_V4
    return -1


def piece_ends(int family, bytes data) -> list:
    """Exclusive byte ends of the pieces of UTF-8 ``data``."""
    cdef const unsigned char *s = data
    cdef ptrdiff_t n = len(data), pos = 0, end
    out = []
    while pos < n:
        end = pt_next_piece(family, s, pos, n)
        if end <= pos or end > n:  # contract violation: never loop forever
            raise RuntimeError(f"scanner family {family} returned {end} at {pos}")
        out.append(end)
        pos = end
    return out


def split_pieces(int family, str text) -> list:
    """The pieces of ``text`` as the family's reference splits it (lone surrogates kept)."""
    data = text.encode("utf-8", "surrogatepass")
    pieces = []
    cdef Py_ssize_t start = 0
    for end in piece_ends(family, data):
        pieces.append(data[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return pieces


def property_bits(str reference) -> bytes:
    """One byte per code point 0..0x10FFFF: the PT_* property bits the scanner uses for
    ``reference`` ("tiktoken" or "tokenizers"); bit values are in unicode_tables.h."""
    cdef bytearray out = bytearray(0x110000)
    cdef unsigned char *p = out
    cdef unsigned cp
    cdef bint tt = reference == "tiktoken"
    if not tt and reference != "tokenizers":
        raise ValueError(f"unknown reference {reference!r}")
    for cp in range(0x110000):
        p[cp] = pt_props_tiktoken(cp) if tt else pt_props_tokenizers(cp)
    return bytes(out)


def count_pieces(int family, bytes data) -> int:
    """Number of pieces of UTF-8 ``data`` (scanner only, GIL released: for benchmarks)."""
    cdef const unsigned char *s = data
    cdef ptrdiff_t n = len(data), pos = 0, count = 0
    with nogil:
        while pos < n:
            pos = pt_next_piece(family, s, pos, n)
            count += 1
    return count
