# PieceBpeModel.encode_gaps' work (included by _piece_bpe.pyx): the literal triples
# checked while the GIL is held, then one C++ loop over the text (piece_bpe_gaps.h).
#
# encode_gaps(data, cuts, pattern, content, prefix) -> list[int]: ``cuts`` holds the
# ``(byte start, byte end, id)`` triples of a text's added-token literals in ``data``
# (its UTF-8), in order, as LiteralSplitter.find gives them; each non-empty gap between
# them becomes ``prefix + gap.replace(pattern, content)`` (PieceNormalizer's fused case)
# and, when not empty, is encoded whole; each literal gives its id. ValueError for
# malformed cuts, an empty pattern, or a normalized gap too long for the model.

from libc.stdint cimport int64_t

cdef extern from "piece_bpe_gaps.h" namespace "piece_bpe" nogil:
    cdef struct GapNormalizer:
        const unsigned char *pattern
        size_t pattern_len
        const unsigned char *content
        size_t content_len
        const unsigned char *prefix
        size_t prefix_len
    int PB_GAP_TOO_LONG
    int encode_gaps(const Model &m, const unsigned char *p, size_t n, const int64_t *cuts,
                    size_t count, const GapNormalizer &g, size_t max_bytes,
                    vector[int32_t] &ids, Stats *st)


cdef int _encode_gaps(Model *core, bytes data, const int64_t[::1] cuts, bytes pattern,
                      bytes content, bytes prefix, vector[int32_t] *ids) except -1:
    """Appends the ids of ``data`` to ``ids``; returns PB_OK or the model's error code.
    Raises ValueError for triples out of order or out of ``data``, ids out of range, an
    empty pattern, or a normalized gap too long for the model."""
    cdef size_t n = <size_t>_room(data), count = <size_t>cuts.shape[0] // 3, k
    cdef int64_t pos = 0
    cdef GapNormalizer g
    cdef Stats st
    cdef int rc
    if cuts.shape[0] % 3 or not pattern:
        raise ValueError("cuts must be (start, end, id) triples and pattern non-empty")
    for k in range(count):
        if not pos <= cuts[3 * k] <= cuts[3 * k + 1] <= <int64_t>n or \
                not 0 <= cuts[3 * k + 2] < _MAX_ID:
            raise ValueError(f"cut {k} is out of order, out of the data or not an id")
        pos = cuts[3 * k + 1]
    g.pattern, g.pattern_len = <const unsigned char *>pattern, len(pattern)
    g.content, g.content_len = <const unsigned char *>content, len(content)
    g.prefix, g.prefix_len = <const unsigned char *>prefix, len(prefix)
    ids.reserve(n + count)
    cdef const int64_t *at = &cuts[0] if count else NULL
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
    if n >= _KEEP_GIL_BELOW:
        with nogil:
            rc = encode_gaps(core[0], p, n, at, count, g, _MAX_BYTES, ids[0], &st)
    else:
        rc = encode_gaps(core[0], p, n, at, count, g, _MAX_BYTES, ids[0], &st)
    core.cache.add_stats(st.hits, st.misses)
    if rc == PB_GAP_TOO_LONG:
        raise ValueError(f"a normalized gap of {_MAX_BYTES} bytes or more")
    return rc
