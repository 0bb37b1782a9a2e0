# cython: language_level=3
"""The added-token stage's pre-check, compiled: can any literal occur in UTF-8 data?

Every encode and count asks it before the literals are searched for (the search is a
regular expression over the ``str``), and most texts hold none. In C it is one pass over
the UTF-8 bytes: ``memchr`` for the literals' first byte when they all share one (``<``
in most vocabularies), a table of first bytes otherwise, then the second byte checked
against the literals' first two. A literal that occurs in the text occurs in its UTF-8,
first two bytes included, so False is exact; True only sends the text to the search.
"""

from libc.string cimport memchr, memset

cdef class LiteralHeads:
    """The first two UTF-8 bytes of a set of literals; immutable, safe across threads."""

    # (fields in _literals.pxd) first[b]: 0, no literal starts so; 1, check the next
    # byte; 2, a one-byte literal is this byte alone. second: bit (b0 << 8 | b1), a
    # literal starts b0 b1. only: the one first byte every literal shares, or -1.

    def __init__(self, literals):
        cdef bytes lit
        cdef unsigned int pair
        memset(self.first, 0, sizeof(self.first))
        memset(self.second, 0, sizeof(self.second))
        firsts = set()
        for lit in literals:
            if not lit:
                raise ValueError("an empty literal")
            firsts.add(lit[0])
            if len(lit) == 1:
                self.first[lit[0]] = 2
                continue
            if self.first[lit[0]] == 0:
                self.first[lit[0]] = 1
            pair = (<unsigned int>lit[0] << 8) | lit[1]
            self.second[pair >> 3] |= 1 << (pair & 7)
        self.only = firsts.pop() if len(firsts) == 1 else -1

    cdef bint _starts_here(self, const unsigned char *p,
                           const unsigned char *end) noexcept nogil:
        cdef unsigned char kind = self.first[p[0]]
        cdef unsigned int pair
        if kind == 2:
            return True
        if kind == 0 or p + 1 >= end:
            return False
        pair = (<unsigned int>p[0] << 8) | p[1]
        return (self.second[pair >> 3] >> (pair & 7)) & 1

    cdef bint present_in(self, const unsigned char *p, Py_ssize_t n) noexcept nogil:
        cdef const unsigned char *end = p + n
        if self.only >= 0:
            while p < end:
                p = <const unsigned char *>memchr(p, self.only, end - p)
                if p == NULL:
                    return False
                if self._starts_here(p, end):
                    return True
                p += 1
            return False
        while p < end:
            if self.first[p[0]] and self._starts_here(p, end):
                return True
            p += 1
        return False

    def present(self, const unsigned char[::1] data not None) -> bool:
        """False when no literal can occur in ``data``."""
        if data.shape[0] == 0:
            return False
        return self.present_in(&data[0], data.shape[0])
