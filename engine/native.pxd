# The BPE model's C++ (bpe_tables.h, bpe_model.h and the headers they include), as the
# Cython glue in _bpe.pyx sees it. Everything declared here is nogil-safe C++.

from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.vector cimport vector


cdef extern from "bpe_tables.h" nogil:
    ctypedef struct bt_u64map:
        size_t size
    ctypedef struct bt_bytesmap:
        pass
    int bt_u64_init(bt_u64map *m, size_t expected)
    void bt_u64_put_new(bt_u64map *m, uint64_t key, uint64_t val)
    int bt_bytes_init(bt_bytesmap *m, size_t expected)
    void bt_bytes_put(bt_bytesmap *m, const unsigned char *p, size_t n, int32_t id)
    int32_t bt_bytes_get(const bt_bytesmap *m, const unsigned char *p, size_t n)
    ptrdiff_t bt_b64_decode(const unsigned char *s, size_t n, unsigned char *out)


cdef extern from "piece_cache.h" nogil:
    cdef cppclass PieceCache:
        void set_capacity(size_t capacity)
        void clear()
        uint64_t hits()
        uint64_t misses()


cdef extern from "piece_split.h" nogil:
    cdef cppclass PieceSplitter:
        int build(const unsigned char *arena, const size_t *start, const uint32_t *length,
                  const char *mergeable, size_t n_ids)


cdef extern from "bpe_merge.h" nogil:
    uint64_t bpe_pair_key(int32_t a, int32_t b)


cdef extern from "bpe_model.h" nogil:
    cdef cppclass BpeCore:
        bt_bytesmap encoder
        bt_u64map merges
        vector[unsigned char] arena
        vector[size_t] tok_start
        vector[uint32_t] tok_len
        vector[char] known
        vector[uint16_t] longest_from
        vector[uint32_t] byte_pairs
        int32_t byte_ids[256]
        size_t max_len
        cbool concat_ranks
        cbool whole_piece_lookup
        cbool backtracking
        int family
        PieceCache cache
        PieceSplitter splitter
        void finish(const char *mergeable)
        size_t size()
        const unsigned char *token(int32_t id)
        void encode_span(const unsigned char *s, size_t n, const vector[int64_t] *ends,
                         vector[int32_t] *out)
        void encode_one(const unsigned char *p, size_t n, vector[int32_t] *out)
        cbool split_of(int32_t t, int32_t *a, int32_t *b)


cdef extern from "parallel_for.h" nogil:
    ctypedef void (*pf_task)(void *ctx, size_t i) noexcept nogil
    void pf_run(size_t n, int threads, pf_task fn, void *ctx)
