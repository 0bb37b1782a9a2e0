# cython: language_level=3
"""The added-token stage's literal search, compiled: every match of a text in one call.

Gemma 3 adds 6,415 literals, and ordinary text holds them everywhere (each newline run
is one): found one at a time by the Python trie (added_tokens.py's LiteralTrie), they
cost more than the model. ``LiteralSplitter.find`` walks the text's UTF-8 once
(literal_split_trie.h) and hands back every match as ``(byte start, byte end, id)``
triples in one ``array('q')``, which ``PieceBpeModel.encode_gaps`` takes as they are.

Exactness: the matches are those of ``AddedTokenScanner.find`` (converted to bytes) when
no token has ``lstrip``, ``rstrip`` or ``single_word`` and there are no plain ranges;
the caller checks both (the header says why bytes and characters agree). A literal
given twice takes the later id, as the scanner's literal -> token dict does.
"""

from cpython cimport array
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy
from libcpp cimport bool as cbool
from libcpp.vector cimport vector

import array as _array


cdef extern from "literal_split_trie.h" namespace "literal_split" nogil:
    cdef cppclass Trie:
        void add(const unsigned char *p, size_t n, int32_t id, cbool refused)
        void finish()
        cbool find(const unsigned char *p, size_t n, vector[int64_t] &out,
                   cbool stop_on_refused)


cdef enum:
    # texts of fewer UTF-8 bytes are searched holding the GIL (releasing it costs more)
    _KEEP_GIL_BELOW = 2048


cdef array.array _TEMPLATE = _array.array("q")


cdef class LiteralSplitter:
    """A set of literals and their ids; immutable after construction, safe across threads.

    Args:
        pairs: ``(literal UTF-8, id)``; literals non-empty, ids in [0, 2^31).
        refused: literals (UTF-8) that ``find(..., stop_on_refused=True)`` stops at (the
            ``reject`` policy's: it then answers None and the caller takes the slow
            path, which names them and their positions).
    """

    cdef Trie *trie

    def __cinit__(self):
        self.trie = new Trie()

    def __dealloc__(self):
        del self.trie

    def __init__(self, pairs, refused=()):
        cdef bytes lit
        cdef long long tid
        refused = frozenset(refused)
        for lit, tid in pairs:
            if not lit:
                raise ValueError("an empty literal")
            if tid < 0 or tid >= 1 << 31:
                raise ValueError(f"id {tid} of {lit!r} is not in [0, 2^31)")
            self.trie.add(<const unsigned char *>lit, len(lit), <int32_t>tid, lit in refused)
        self.trie.finish()

    def find(self, bytes data not None, bint stop_on_refused=False):
        """The leftmost-longest matches in ``data`` (UTF-8): flat ``array('q')``
        ``[start0, end0, id0, start1, ...]`` in byte offsets, left to right; None when
        ``stop_on_refused`` and a refused literal matches."""
        cdef const unsigned char *p = <const unsigned char *>data
        cdef size_t n = len(data)
        cdef vector[int64_t] out
        cdef cbool whole
        if n >= _KEEP_GIL_BELOW:
            with nogil:
                whole = self.trie.find(p, n, out, stop_on_refused)
        else:
            whole = self.trie.find(p, n, out, stop_on_refused)
        if not whole:
            return None
        cdef array.array found = array.clone(_TEMPLATE, out.size(), False)
        if out.size():
            memcpy(found.data.as_voidptr, out.data(), out.size() * sizeof(int64_t))
        return found
