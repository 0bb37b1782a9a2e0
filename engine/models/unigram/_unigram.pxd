# UnigramModel's C-level contract: its fields and the nogil entry point other Cython
# modules may call (the Python API is in _unigram.pyi).

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.vector cimport vector
from cpython.object cimport PyObject

from .unigram_core cimport UnigramCore


cdef class UnigramModel:
    cdef UnigramCore core
    cdef list _pieces        # id -> piece
    cdef dict _ids           # piece -> id (a duplicate piece: its last id)
    cdef PyObject **_ints    # id -> its int object, made on first use (owned refs)

    # Appends the ids of data[0:n] (``ends`` NULL: one word; else its words'
    # exclusive byte ends, ascending, the last n) to *ids and, unless spans is NULL,
    # their byte spans in data (start, end per id): UG_OK, UG_MISSING_UNK, UG_TOO_LONG
    # or UG_BAD_ENDS (nothing of the failing word appended). Thread-safe; call without
    # the GIL. ``hits``/``misses`` count cache lookups (the caller adds them to the
    # cache's statistics once per call).
    cdef int encode_span(self, const unsigned char *data, size_t n,
                         const vector[int64_t] *ends, vector[int32_t] *ids,
                         vector[uint32_t] *spans, uint64_t *hits,
                         uint64_t *misses) noexcept nogil
    cdef list _ids_list(self, const vector[int32_t] &ids)
    cdef int _encode(self, bytes data, ends, vector[int32_t] *ids,
                     vector[uint32_t] *spans) except -1
    cdef int _metaspace(self, bytes data, str replacement, bint first, str scheme,
                        bint split, vector[int32_t] *ids) except -1
    cdef vector[vector[int32_t]] _encode_many(self, list segments, int num_threads) except *
