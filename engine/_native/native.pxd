# The native utilities every compiled model may use (large_pages.h, parallel_for.h), as
# Cython sees them; a model's own C++ is declared in its folder (models/bpe/bpe_core.pxd).
# Everything declared here is nogil-safe C++.


cdef extern from "large_pages.h" nogil:
    ctypedef struct lp_block:
        unsigned char *data
        size_t mapped
    lp_block lp_copy(const unsigned char *data, size_t n)
    void lp_free(lp_block b)


cdef extern from "parallel_for.h" nogil:
    ctypedef void (*pf_task)(void *ctx, size_t i) noexcept nogil
    void pf_run(size_t n, int threads, pf_task fn, void *ctx)
