# LiteralHeads' C-level contract: the pre-check other Cython modules run on UTF-8 they
# already hold (BpeModel.encode_text); the Python API is in _literals.pyi.

cdef class LiteralHeads:
    cdef unsigned char first[256]
    cdef unsigned char second[8192]
    cdef int only

    cdef bint _starts_here(self, const unsigned char *p, const unsigned char *end) noexcept nogil
    # False when no literal can occur in p[0:n]; safe without the GIL.
    cdef bint present_in(self, const unsigned char *p, Py_ssize_t n) noexcept nogil
