# BpeModel's C-level contract: its fields and the nogil entry points other Cython
# modules may call (the Python API is in _bpe.pyi).

from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

from ...added_vocabulary._literals cimport LiteralHeads
from .bpe_core cimport BpeCore


cdef class BpeModel:
    cdef BpeCore core
    cdef readonly object image  # the tables (bytes, or a mapped file), read in place
    cdef object _view           # the buffer export that keeps ``image`` mapped

    # Ids of UTF-8 data[0:n]; ``ends``: the pieces' exclusive ends, or NULL for the
    # compiled scanner. Thread-safe; call without the GIL.
    cdef void encode_span(self, const unsigned char *data, size_t n,
                          const vector[int64_t] *ends, vector[int32_t] *out) noexcept nogil
    cdef vector[int32_t] _encode(self, bytes data, ends) except *
    cdef int _scan_and_merge(self, const unsigned char *s, Py_ssize_t n,
                             vector[int32_t] *out) except -1
    cdef bint _text_as_is(self, text, LiteralHeads heads, const unsigned char **s,
                          Py_ssize_t *n) except -1
    cdef list _to_list(self, const vector[int32_t] &ids)
    cdef vector[vector[int32_t]] _encode_many(self, list segments, int num_threads) except *
