# cython: language_level=3, embedsignature=True
"""The BPE model stage: rank-based merging on UTF-8 bytes, in C++ without the GIL.

This file is the Cython glue: it builds one vocabulary's tables as an image
(``build_image``, bpe_image.h) or takes a mapped one (tables.py), attaches the C++ model
to it (``BpeCore``, bpe_model.h), and hands segments to the C++ loops and ids back.
Why the loops are shaped as they are (each figure is in benchmarks/README.md, "Why the
engine is shaped like this"):

* Most of a tokenizer's time goes to pre-tokenization, not merging. So a segment is
  scanned and merged in ONE nogil loop: the hand-written scanner (``pretok_scan.h``)
  hands out piece boundaries and each piece is merged immediately while its bytes are
  hot in cache. Python sees one call per segment, never one per piece.
* Most pieces are a single token. tiktoken-format vocabularies look the whole piece up
  first (tiktoken's own rule; for ``tokenizer.json`` only with ``ignore_merges``), so
  the common case is one hash lookup.
* Two merge rules, one loop. A ``.tiktoken`` file ranks byte strings: the adjacent pair
  to merge is the one whose concatenated bytes have the lowest rank, looked up directly
  in the token table (an id-pair table derived at load would cost more load time than
  tiktoken's whole load). A ``tokenizer.json`` merges list is an id-pair table:
  ``(left_id << 32 | right_id) -> (rank << 32 | merged_id)``. Ties go to the leftmost
  pair in both references.
* Both tables are flat open-addressing arrays (``bpe_tables.h``), read-only after load,
  in one pointer-free image that worker processes can share as a mapped file. The
  common answer "these bytes are no token" comes from an L2-sized bit filter first.
* Short pieces (the vast majority) use flat arrays, symbols kept in place, and a
  linear minimum scan: fewer than ~48 symbols fit in cache lines and beat any heap
  (bpe_merge.h). Longer pieces (a megabyte of one letter, of spaces, of random
  letters) are encoded a token at a time by a backtracking search (backtrack.h),
  linear in their length.
* Long pieces of CJK and similar text (a whole clause is one piece, and nearly every
  clause is new) are cut where no token of the vocabulary can cross (``piece_split.h``,
  which states why that is exact); the parts are short words that recur, so they come
  from the piece cache even in text never seen before.
* A bounded piece -> ids cache (``piece_cache.h``: sharded seqlocks, so readers on
  several threads write nothing shared) saves the merge loop for repeated multi-token
  pieces; single-token pieces never reach it, and a piece enters it on its second
  sighting (on new text a lookup plus an insert per piece cost more than they saved).
  Pieces of 2 to 5 bytes, below its bound, are remembered per thread instead
  (``short_pieces.h``: one load from a 64 KiB table).
  A small per-thread cache of id pair -> merge result (``pair_cache.h``) answers most
  of the merge loop's questions about pairs without touching the vocabulary table, and
  for ``.tiktoken`` vocabularies the first question of every loop, "do these two bytes
  merge?", is one load from a dense 65,536-entry table.

Invariants: every id produced is a key of the decoder table; the concatenated bytes of
a piece's ids equal the piece; offsets are derived from token byte lengths, so they
are exact by construction.
"""

from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.long cimport PyLong_FromLong
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy
from libcpp.string cimport string
from libcpp.vector cimport vector

from ..._native.native cimport lp_block, lp_copy, lp_free, pf_run
from ...added_vocabulary._literals cimport LiteralHeads
from .bpe_core cimport (BPE_IMAGE_LAYOUT, IMG_BAD_ID, IMG_BAD_MERGE, IMG_DAMAGED, IMG_NO_BYTE,
                        IMG_OK, BpeCore, BpeImageBuilder, bt_b64_decode)

from ...errors import ArtifactError
from ...text_input import MAX_TEXT_CHARS as _MAX_CHARS


cdef extern from *:
    void _prefetch "__builtin_prefetch"(const void *p, int rw, int locality) nogil

cdef enum:
    # How many ids ahead ``_to_list`` requests the int it will take a reference on: a
    # request must go out a whole memory round trip before the id's turn, and one id
    # takes a few ns (8, 16, 32 and 64 compared in benchmarks/README.md).
    _AHEAD = 32

cdef extern from "Python.h":
    # on borrowed PyObject pointers, with no reference counting of Cython's own
    void _incref "Py_INCREF"(PyObject *o)
    void _list_set "PyList_SET_ITEM"(object list, Py_ssize_t i, PyObject *o)
    # NULL (an error set) when the text holds a lone surrogate, which UTF-8 cannot hold
    const char *_utf8_of "PyUnicode_AsUTF8AndSize"(object text, Py_ssize_t *size)
    void _clear_error "PyErr_Clear"()

cdef Py_ssize_t _MAX_TEXT_CHARS = _MAX_CHARS
cdef enum:
    # Texts of fewer UTF-8 bytes are merged holding the GIL: for them releasing and
    # taking it back costs a measurable share of the call (benchmarks/README.md), and
    # holding it this long (microseconds) never delays another thread noticeably.
    _KEEP_GIL_BELOW = 2048


cdef struct BatchJobs:
    # One entry per segment; the bytes objects are kept alive by the caller's list.
    void *model
    const unsigned char **data
    Py_ssize_t *size
    const vector[int64_t] **ends  # NULL: the compiled scanner splits the segment
    vector[int32_t] *out


cdef void _run_job(void *ctx, size_t i) noexcept nogil:
    # Into a local vector, moved into place once: the output vectors sit side by side,
    # and pushing into them directly from two threads bounced their shared cache lines
    # (a 2-thread batch was slower than 1 thread).
    cdef BatchJobs *jobs = <BatchJobs *>ctx
    cdef vector[int32_t] ids
    ids.reserve(<size_t>jobs.size[i] // 3 + 4)
    (<BpeModel>jobs.model).encode_span(jobs.data[i], jobs.size[i], jobs.ends[i], &ids)
    jobs.out[i].swap(ids)


# Building one vocabulary's image (build_image, IMAGE_LAYOUT): a file of its own, read
# here as part of this module (an include, as uvloop splits its loop module).
include "_bpe_image.pxi"


# Handing out the same int object for an id costs an INCREF; building a fresh one for
# every id above 256 was most of a large batch's time. So each id's int is made the
# first time it is returned and kept, in one table for every model of the process
# (grown to the largest vocabulary): zero pages until an id is met, so the ids a
# process never returns cost it nothing (every worker used to hold all 200k ints).
cdef PyObject **_IDS = NULL
cdef size_t _IDS_SIZE = 0


cdef int _reserve_ids(size_t size) except -1:
    global _IDS, _IDS_SIZE
    if size <= _IDS_SIZE:
        return 0
    cdef PyObject **grown = <PyObject **>calloc(size, sizeof(PyObject *))
    if grown == NULL:
        raise MemoryError()
    if _IDS != NULL:
        memcpy(grown, _IDS, _IDS_SIZE * sizeof(PyObject *))
        free(_IDS)  # the ints it held are now held by ``grown``
    _IDS = grown
    _IDS_SIZE = size
    return 0


cdef inline object _id_object(int32_t tid):
    cdef PyObject *known
    cdef object item
    if <size_t>tid >= _IDS_SIZE:
        return tid
    known = _IDS[tid]
    if known == NULL:
        item = tid
        Py_INCREF(item)  # kept for the life of the process
        _IDS[tid] = <PyObject *>item
        return item
    return <object>known


cdef class BpeModel:
    """One vocabulary's tables (an image, read in place) and its merging.

    ``family`` selects the compiled pre-tokenizer scanner (>= 0) or none (-1, the
    caller passes piece boundaries computed by the ``regex`` fallback).
    """

    def __init__(self, tokens=None, merges=None, added=None, *, bytes tiktoken_data=None,
                 image=None, bint whole_piece_lookup=True, int family=-1,
                 size_t cache_capacity=65536, bint split_pieces=True, bint backtracking=True,
                 bint char_symbols=True, bint pair_table=True, bint short_memo=True):
        """Attach to ``image`` (any buffer: bytes, a read-only mmap), or build one from
        the vocabulary (``build_image``'s arguments).

        Args:
            whole_piece_lookup: emit a piece that is itself a token directly.
            split_pieces, backtracking, char_symbols, pair_table, short_memo: cut
                pieces where no token can cross (piece_split.h), encode long pieces
                token by token (backtrack.h), start merging from whole characters where
                exact (bpe_chars.h), rank pairs by their ids (bpe_pairs.h), remember
                short pieces per thread (short_pieces.h); off only to compare against
                (tests, benchmarks).
        Raises:
            ArtifactError: what ``build_image`` raises, or an image that is damaged.
        """
        if image is None:
            image = build_image(tokens, merges, added, tiktoken_data=tiktoken_data)
        self.image = image
        self._view = memoryview(image).cast("B")
        cdef const unsigned char[::1] data = self._view
        self.core.whole_piece_lookup = whole_piece_lookup
        self.core.splitting = split_pieces
        self.core.backtracking = backtracking
        self.core.char_symbols = char_symbols
        self.core.pair_table = pair_table
        self.core.short_memo = short_memo
        self.core.family = family
        self.core.cache.set_capacity(cache_capacity)
        if data.shape[0] == 0 or self.core.attach(&data[0], data.shape[0]) != IMG_OK:
            raise ArtifactError("the compiled tables are damaged (their layout does not check)")
        _reserve_ids(self.core.size())

    # ------------------------------------------------------------------ C level

    cdef void encode_span(self, const unsigned char *data, size_t n,
                          const vector[int64_t] *ends, vector[int32_t] *out) noexcept nogil:
        self.core.encode_span(data, n, ends, out)

    cdef vector[int32_t] _encode(self, bytes data, ends) except *:
        cdef vector[int32_t] out
        cdef vector[int64_t] cuts
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        if ends is None and self.core.family < 0:
            raise ValueError("no compiled scanner for this pattern: pass piece ends")
        if ends is None:
            self._scan_and_merge(s, n, &out)
        else:
            out.reserve(n // 3 + 4)
            for e in ends:
                cuts.push_back(e)
            with nogil:
                self.core.encode_span(s, n, &cuts, &out)
        return out

    cdef int _scan_and_merge(self, const unsigned char *s, Py_ssize_t n,
                             vector[int32_t] *out) except -1:
        out.reserve(n // 3 + 4)
        if n < _KEEP_GIL_BELOW:
            self.core.encode_span(s, n, NULL, out)
        else:
            with nogil:
                self.core.encode_span(s, n, NULL, out)
        return 0

    cdef bint _text_as_is(self, text, LiteralHeads heads, const unsigned char **s,
                          Py_ssize_t *n) except -1:
        # The UTF-8 of ``text`` read in place (*s, *n), when it is one ordinary segment
        # as it is: an exact str within the engine's limit, encodable, and (``heads``)
        # with no literal the caller's policy looks for. Else False: the caller takes
        # the general path, which checks, repairs and raises.
        if type(text) is not str or len(<str>text) > _MAX_TEXT_CHARS or self.core.family < 0:
            return False
        s[0] = <const unsigned char *>_utf8_of(text, n)
        if s[0] == NULL:
            _clear_error()
            return False
        return heads is None or not heads.present_in(s[0], n[0])

    cdef list _to_list(self, const vector[int32_t] &ids):
        # One reference taken per id, on its shared int: through Cython's object
        # temporaries each id cost three reference-count updates. The ints are spread
        # over megabytes and each reference count is a write to one of them, so the
        # loop requests the lines it will need ahead: the pointer slot 2 * _AHEAD ids
        # ahead, the int _AHEAD ids ahead (without it a cold pass waited here on one miss
        # after another: docs/ENGINE.md).
        cdef size_t i, n = ids.size()
        cdef list out = PyList_New(n)
        cdef PyObject *known
        cdef int32_t tid, ahead
        for i in range(n):
            if i + 2 * _AHEAD < n:
                ahead = ids[i + 2 * _AHEAD]
                if <size_t>ahead < _IDS_SIZE:
                    _prefetch(&_IDS[ahead], 0, 3)
            if i + _AHEAD < n:
                ahead = ids[i + _AHEAD]
                if <size_t>ahead < _IDS_SIZE and _IDS[ahead] != NULL:
                    _prefetch(_IDS[ahead], 1, 3)
            tid = ids[i]
            known = _IDS[tid] if <size_t>tid < _IDS_SIZE else NULL
            if known == NULL:
                item = _id_object(tid)
                known = <PyObject *>item
            _incref(known)
            _list_set(out, i, known)
        return out

    cdef vector[vector[int32_t]] _encode_many(self, list segments, int num_threads) except *:
        """Merge every ``(data, ends)`` segment on up to ``num_threads`` threads."""
        cdef size_t n = len(segments), i
        cdef vector[const unsigned char *] data
        cdef vector[Py_ssize_t] size
        cdef vector[vector[int64_t]] cuts
        cdef vector[const vector[int64_t] *] ends
        cdef vector[vector[int32_t]] out
        cdef BatchJobs jobs
        data.resize(n)
        size.resize(n)
        cuts.resize(n)
        ends.resize(n)
        out.resize(n)
        for i in range(n):
            segment, piece_ends = segments[i]
            if type(segment) is not bytes:
                raise TypeError("segments must be (bytes, ends) pairs")
            data[i] = <const unsigned char *>PyBytes_AS_STRING(segment)
            size[i] = PyBytes_GET_SIZE(segment)
            if piece_ends is None:
                if self.core.family < 0:
                    raise ValueError("no compiled scanner for this pattern: pass piece ends")
                ends[i] = NULL
            else:
                for e in piece_ends:
                    cuts[i].push_back(e)
                ends[i] = &cuts[i]
        jobs.model = <void *>self
        jobs.data = data.data()
        jobs.size = size.data()
        jobs.ends = ends.data()
        jobs.out = out.data()
        with nogil:
            pf_run(n, num_threads, _run_job, &jobs)
        return out

    # ------------------------------------------------------------------ Python API

    def encode(self, bytes data, ends=None):
        """UTF-8 ``data`` (one ordinary segment) -> ids.

        ``ends``: exclusive byte ends of the pre-tokenizer pieces, or None to use the
        compiled scanner. Releases the GIL while merging.
        """
        return self._to_list(self._encode(data, ends))

    def encode_text(self, text, LiteralHeads heads=None):
        """``text`` -> ids when it is one ordinary segment as it is, else None.

        The common case of an encode call in one step: the text's UTF-8 is read where
        CPython keeps it (an ASCII str's own characters; for any other str, CPython
        builds it once and keeps it with the string, as PyO3's ``&str`` and so
        tiktoken also do), not copied into a bytes object. None when ``text`` is not
        exactly a str, exceeds the engine's limit, holds a lone surrogate, may hold a
        literal of ``heads`` (the literals the caller's policy looks for; None: none),
        or the pattern has no compiled scanner.
        """
        cdef const unsigned char *s
        cdef Py_ssize_t n
        cdef vector[int32_t] out
        if not self._text_as_is(text, heads, &s, &n):
            return None
        self._scan_and_merge(s, n, &out)
        return self._to_list(out)

    def count_text(self, text, LiteralHeads heads=None):
        """Like ``encode_text`` but only the number of ids (-1 where it gives None)."""
        cdef const unsigned char *s
        cdef Py_ssize_t n
        cdef vector[int32_t] out
        if not self._text_as_is(text, heads, &s, &n):
            return -1
        self._scan_and_merge(s, n, &out)
        return out.size()

    def count(self, bytes data, ends=None):
        """Like ``encode`` but returns only the number of ids (no list is built)."""
        return self._encode(data, ends).size()

    def encode_many(self, list segments, int num_threads=1):
        """``[encode(data, ends) for data, ends in segments]``, merged in parallel.

        One call releases the GIL once for the whole batch; with one call per text the
        threads would queue for the GIL between texts and two threads ran slower than
        one. ``segments`` must stay alive (it holds the bytes) until this returns.
        """
        cdef vector[vector[int32_t]] out = self._encode_many(segments, num_threads)
        cdef size_t i
        cdef list result = PyList_New(out.size())
        for i in range(out.size()):
            item = self._to_list(out[i])
            Py_INCREF(item)
            PyList_SET_ITEM(result, i, item)
        return result

    def count_many(self, list segments, int num_threads=1):
        """Like ``encode_many`` but only the number of ids of each segment."""
        cdef vector[vector[int32_t]] out = self._encode_many(segments, num_threads)
        return [out[i].size() for i in range(out.size())]

    def encode_with_spans(self, bytes data, ends=None, Py_ssize_t base=0):
        """Ids and a flat list ``[start0, end0, start1, ...]`` of byte spans + ``base``."""
        cdef vector[int32_t] out = self._encode(data, ends)
        cdef Py_ssize_t pos = base
        cdef size_t i
        spans = PyList_New(2 * out.size())
        for i in range(out.size()):
            item = PyLong_FromLong(pos)
            Py_INCREF(item)
            PyList_SET_ITEM(spans, 2 * i, item)
            pos += self.core.token_len(out[i])
            item = PyLong_FromLong(pos)
            Py_INCREF(item)
            PyList_SET_ITEM(spans, 2 * i + 1, item)
        return self._to_list(out), spans

    def encode_piece(self, bytes piece):
        """Merge one piece as given (no pre-tokenization); for tests and the trainer."""
        cdef vector[int32_t] out
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(piece)
        with nogil:
            self.core.encode_one(s, n, &out)
        return self._to_list(out)

    def decode_bytes(self, ids):
        """ids -> ``(bytes, unknown)``: the bytes of the known ids and, in one pass over
        ``ids``, every item that is not an id of this vocabulary (not an integer, beyond
        64 bits, negative, too large, or a gap), so the caller raises once."""
        cdef string buf
        cdef long long tid
        unknown = []
        for obj in ids:
            try:
                tid = obj
            except (TypeError, OverflowError):
                unknown.append(obj)
                continue
            if not self.core.known(tid):
                unknown.append(obj)
                continue
            buf.append(<const char *>self.core.token(tid), self.core.token_len(tid))
        return buf, unknown

    def splits(self):
        """Per id, ``(left, right)``: the two ids the last merge of its own bytes joins
        when merging them gives the id itself, else None (bytes, special and added
        tokens, unreachable tokens). The merges list that reproduces this model."""
        cdef int32_t t, a = 0, b = 0
        out = []
        for t in range(<int32_t>self.core.size()):
            out.append((a, b) if self.core.split_of(t, &a, &b) else None)
        return out

    @property
    def family(self):
        """The compiled scanner family, or -1 (callers pass piece ends)."""
        return self.core.family

    @property
    def size(self):
        """One past the largest id (the vocabulary size as clients index it)."""
        return self.core.size()

    @property
    def cache_hits(self):
        return self.core.cache.hits()

    @property
    def cache_misses(self):
        return self.core.cache.misses()

    def clear_cache(self):
        self.core.cache.clear()
