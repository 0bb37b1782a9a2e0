# The Unigram model's C++ (unigram_model.h and the headers it includes), as the Cython
# glue in _unigram.pyx sees it. Everything declared here is nogil-safe C++.

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.vector cimport vector


cdef extern from "unigram_model.h" nogil:
    cdef cppclass UnigramCache:
        void set_capacity(size_t capacity)
        void clear()
        void add_stats(uint64_t hits, uint64_t misses)
        uint64_t hits()
        uint64_t misses()

    int UG_OK, UG_MISSING_UNK, UG_TOO_LONG, UG_BAD_ENDS

    cdef cppclass UnigramCore:
        int32_t unk_id
        cbool fuse_unk
        cbool byte_fallback
        double unk_score
        UnigramCache cache
        void add_piece(const unsigned char *p, size_t n, double score)
        cbool finish()
        size_t size()
        # Appends word s[0:n]'s ids to *ids and (spans not NULL) their byte spans,
        # start and end per id; UG_MISSING_UNK when it needs an unk id it lacks,
        # UG_TOO_LONG from 2 GiB on.
        int encode(const unsigned char *s, size_t n, vector[int32_t] *ids,
                   vector[uint32_t] *spans, uint64_t *hits, uint64_t *misses)
        # encode() for each word s[ends[i-1]:ends[i]]; spans are offsets in s.
        int encode_words(const unsigned char *s, size_t n, const int64_t *ends, size_t count,
                         vector[int32_t] *ids, vector[uint32_t] *spans, uint64_t *hits,
                         uint64_t *misses)


cdef extern from "unigram_metaspace.h" nogil:
    int UG_PREPEND_ALWAYS, UG_PREPEND_FIRST, UG_PREPEND_NEVER

    cdef struct UgMetaspace:
        const unsigned char *rep
        size_t rep_n
        int scheme
        cbool split

    # Appends the ids of normalized text s[0:n] as WhitespaceSplit then Metaspace cut
    # it (first: the text begins the input); UG_OK, UG_MISSING_UNK or UG_TOO_LONG.
    int ug_encode_metaspace(UnigramCore &core, const UgMetaspace &m, const unsigned char *s,
                            size_t n, cbool first, vector[int32_t] *ids, uint64_t *hits,
                            uint64_t *misses)
