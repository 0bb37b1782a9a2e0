# cython: language_level=3, embedsignature=True
"""Byte spans -> offsets in code points, UTF-16 units or bytes, in one pass over the text.

Contract (shared/API.md): a token covering UTF-8 bytes [bs, be) starts at the unit index
where the character containing byte bs begins and ends just after the character
containing byte be - 1. So partial-character tokens widen to whole characters and
neighbours may share one; an empty span (a post-processor BOS/EOS) sits at the
character boundary at or before bs.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libcpp.vector cimport vector

UNIT_CHAR = 0
UNIT_UTF16 = 1
UNIT_BYTE = 2


def units_from_byte_spans(bytes data, list spans, int unit):
    """``spans`` is flat ``[s0, e0, s1, e1, ...]`` in bytes of ``data`` -> list of (s, e)."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef vector[Py_ssize_t] prefix
    cdef Py_ssize_t i, acc = 0, bs, be, k
    cdef unsigned char c
    prefix.resize(n + 1)
    for i in range(n):
        prefix[i] = acc
        c = s[i]
        if unit == UNIT_BYTE:
            acc += 1
        elif (c & 0xC0) != 0x80:
            acc += 2 if (unit == UNIT_UTF16 and c >= 0xF0) else 1
    prefix[n] = acc
    cdef Py_ssize_t m = len(spans) // 2
    out = [None] * m
    for k in range(m):
        bs = spans[2 * k]
        be = spans[2 * k + 1]
        if bs < 0:
            bs = 0
        if be > n:
            be = n
        while bs > 0 and bs < n and (s[bs] & 0xC0) == 0x80:
            bs -= 1
        if be <= bs:
            out[k] = (prefix[bs], prefix[bs])
            continue
        while be < n and (s[be] & 0xC0) == 0x80:
            be += 1
        out[k] = (prefix[bs], prefix[be])
    return out
