# cython: language_level=3
"""Python face of the compiled pre-tokenizer scanners (``pretok_scan.h``).

The BPE model calls ``pt_next_piece`` directly in its nogil loop; this module gives the
scanner families their Python names (patterns.py says which pattern each reproduces)
and runs the scanners for tests, the trainer and the pure-Python layer.
"""

from .._native.pretok_scan cimport (PT_CL100K, PT_DEEPSEEK_V4, PT_LLAMA3, PT_O200K, PT_QWEN,
                                    PT_TEKKEN, pt_next_piece, pt_props_tiktoken,
                                    pt_props_tokenizers)

CL100K = PT_CL100K
O200K = PT_O200K
LLAMA3 = PT_LLAMA3
QWEN = PT_QWEN
TEKKEN = PT_TEKKEN
DEEPSEEK_V4 = PT_DEEPSEEK_V4


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
