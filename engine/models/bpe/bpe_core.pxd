# The BPE model's C++ (bpe_tables.h, bpe_model.h and the headers they include), as the
# Cython glue in _bpe.pyx sees it. Everything declared here is nogil-safe C++.

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.vector cimport vector


cdef extern from "bpe_tables.h" nogil:
    ptrdiff_t bt_b64_decode(const unsigned char *s, size_t n, unsigned char *out)


cdef extern from "piece_cache.h" nogil:
    cdef cppclass PieceCache:
        void set_capacity(size_t capacity)
        void clear()
        uint64_t hits()
        uint64_t misses()


cdef extern from "bpe_image.h" nogil:
    const uint32_t BPE_IMAGE_LAYOUT
    int IMG_OK, IMG_NO_BYTE, IMG_BAD_MERGE, IMG_BAD_ID, IMG_DAMAGED
    cdef cppclass BpeImageBuilder:
        int64_t detail
        void add_token(const unsigned char *p, size_t n, int64_t id, cbool mergeable)
        void add_merge(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
        int build(cbool concat_ranks, vector[uint64_t] *out)


cdef extern from "bpe_model.h" nogil:
    cdef cppclass BpeCore:
        cbool whole_piece_lookup
        cbool splitting
        cbool backtracking
        cbool char_symbols
        cbool pair_table
        cbool short_memo
        int family
        PieceCache cache
        int attach(const unsigned char *image, size_t size)
        size_t size()
        cbool known(int64_t id)
        const unsigned char *token(int32_t id)
        size_t token_len(int32_t id)
        void encode_span(const unsigned char *s, size_t n, const vector[int64_t] *ends,
                         vector[int32_t] *out)
        void encode_one(const unsigned char *p, size_t n, vector[int32_t] *out)
        cbool split_of(int32_t t, int32_t *a, int32_t *b)
