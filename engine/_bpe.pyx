# cython: language_level=3, embedsignature=True
"""The BPE model stage: rank-based merging on UTF-8 bytes, in C++ without the GIL.

Why it is shaped like this (measured on this 2-core machine, o200k_base, mixed text):

* Most of a tokenizer's time goes to pre-tokenization, not merging. So a segment is
  scanned and merged in ONE nogil loop: the hand-written scanner (``pretok_scan.h``)
  hands out piece boundaries and each piece is merged immediately while its bytes are
  hot in cache. Python sees one call per segment, never one per piece.
* Most pieces are a single token. tiktoken-format vocabularies look the whole piece up
  first (tiktoken's own rule; for ``tokenizer.json`` only with ``ignore_merges``), so
  the common case is one hash lookup.
* Merges live in id space: ``(left_id << 32 | right_id) -> (rank << 32 | merged_id)``.
  For a ``.tiktoken`` file the table is derived at load (every split of a token into
  two tokens; rank = the merged token's rank), which is exactly tiktoken's "merge the
  adjacent pair whose concatenation has the lowest rank". For ``tokenizer.json`` it
  is the merges list. Ties go to the leftmost pair in both references.
* Short pieces (the vast majority) use a flat array and a linear minimum scan: fewer
  than ~48 symbols fit in cache lines and beat any heap. Long pieces (a megabyte of
  one letter, base64, spaces) use a doubly linked list plus a binary heap with
  stale-entry checks, so a piece of n bytes costs O(n log n), never O(n^2).
* A bounded piece -> ids cache (guarded by a mutex, so threads may share it) saves
  the merge loop for repeated multi-token pieces; single-token pieces never reach it.

Invariants: every id produced is a key of the decoder table; the concatenated bytes of
a piece's ids equal the piece; offsets are derived from token byte lengths, so they
are exact by construction.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLong
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.algorithm cimport pop_heap, push_heap
from libcpp.mutex cimport mutex
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref

from .errors import ArtifactError


cdef extern from "pretok_scan.h":
    ptrdiff_t pt_next_piece(int family, const unsigned char *s, ptrdiff_t pos, ptrdiff_t n) nogil


cdef extern from *:
    """
    static inline unsigned long long bpe_pair_key(int a, int b) {
        return ((unsigned long long)(unsigned int)a << 32) | (unsigned int)b;
    }
    """
    uint64_t bpe_pair_key(int32_t a, int32_t b) nogil


cdef uint64_t NO_MERGE = 0xFFFFFFFFFFFFFFFFULL
cdef Py_ssize_t SMALL_PIECE = 48
cdef size_t CACHE_MIN_BYTES = 6
cdef size_t CACHE_MAX_PIECE = 256


cdef class BpeModel:
    """Ranks, merges and the id -> bytes table of one vocabulary.

    ``family`` selects the compiled pre-tokenizer scanner (>= 0) or none (-1, the
    caller passes piece boundaries computed by the ``regex`` fallback).
    """

    cdef unordered_map[string, int32_t] encoder
    cdef unordered_map[uint64_t, uint64_t] merges
    cdef vector[string] decoder
    cdef vector[char] known
    cdef int32_t byte_ids[256]
    cdef bint whole_piece_lookup
    cdef public int family
    cdef unordered_map[string, vector[int32_t]] cache
    cdef size_t cache_capacity
    cdef mutex cache_lock
    cdef public uint64_t cache_hits
    cdef public uint64_t cache_misses

    def __cinit__(self):
        self.family = -1
        self.cache_capacity = 65536

    def __init__(self, tokens, merges=None, added=None, *, bint whole_piece_lookup=True,
                 int family=-1, size_t cache_capacity=65536):
        """Build the tables.

        Args:
            tokens: iterable of ``(token_bytes, id)`` for the BPE vocabulary.
            merges: ``None`` for tiktoken semantics (derive pair merges from ranks, the
                rank of a token being its id); else a list of ``(left, right)`` byte
                strings in rank order (``tokenizer.json``).
            added: iterable of ``(literal_bytes, id)`` decodable but never produced by
                merging (special and added tokens).
            whole_piece_lookup: emit a piece that is itself a token directly.
        Raises:
            ArtifactError: a single byte or a merge operand is missing from the vocabulary.
        """
        cdef bytes tok
        cdef int32_t tid
        cdef size_t max_id = 0
        cdef string s
        self.whole_piece_lookup = whole_piece_lookup
        self.family = family
        self.cache_capacity = cache_capacity
        pairs = list(tokens)
        for tok, tid in pairs:
            self.encoder[string(PyBytes_AS_STRING(tok), PyBytes_GET_SIZE(tok))] = tid
            if <size_t>tid + 1 > max_id:
                max_id = tid + 1
        added_list = list(added or ())
        for tok, tid in added_list:
            if <size_t>tid + 1 > max_id:
                max_id = tid + 1
        self.decoder.resize(max_id)
        self.known.resize(max_id, 0)
        for tok, tid in pairs:
            self.decoder[tid] = string(PyBytes_AS_STRING(tok), PyBytes_GET_SIZE(tok))
            self.known[tid] = 1
        for tok, tid in added_list:
            self.decoder[tid] = string(PyBytes_AS_STRING(tok), PyBytes_GET_SIZE(tok))
            self.known[tid] = 1
        cdef int b
        cdef char c
        for b in range(256):
            c = <char>b
            s = string(&c, 1)
            it = self.encoder.find(s)
            if it == self.encoder.end():
                raise ArtifactError(f"vocabulary has no token for the single byte 0x{b:02x}")
            self.byte_ids[b] = self.encoder[s]
        if merges is None:
            self._derive_merges()
        else:
            self._load_merges(merges)

    cdef void _derive_merges(self):
        cdef string tok, left, right
        cdef int32_t tid
        cdef size_t k
        for item in self.encoder:
            tok = item.first
            tid = item.second
            for k in range(1, tok.size()):
                left = tok.substr(0, k)
                right = tok.substr(k)
                li = self.encoder.find(left)
                if li == self.encoder.end():
                    continue
                ri = self.encoder.find(right)
                if ri == self.encoder.end():
                    continue
                self.merges[bpe_pair_key(deref(li).second, deref(ri).second)] = (
                    (<uint64_t><uint32_t>tid << 32) | <uint32_t>tid)

    def _load_merges(self, merges):
        cdef bytes a, b
        cdef uint64_t rank = 0
        cdef string sa, sb
        for a, b in merges:
            sa = string(PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a))
            sb = string(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))
            ia = self.encoder.find(sa)
            ib = self.encoder.find(sb)
            im = self.encoder.find(sa + sb)
            if ia == self.encoder.end() or ib == self.encoder.end() or im == self.encoder.end():
                raise ArtifactError(f"merge {a!r} + {b!r} (rank {rank}) uses a token missing "
                                    f"from the vocabulary")
            key = bpe_pair_key(deref(ia).second, deref(ib).second)
            if self.merges.find(key) == self.merges.end():
                self.merges[key] = (rank << 32) | <uint32_t>deref(im).second
            rank += 1

    # ------------------------------------------------------------------ merging

    cdef inline uint64_t _pair(self, int32_t a, int32_t b) noexcept nogil:
        it = self.merges.find(bpe_pair_key(a, b))
        if it == self.merges.end():
            return NO_MERGE
        return deref(it).second

    cdef void _merge_small(self, const unsigned char *p, Py_ssize_t n,
                           vector[int32_t] *out) noexcept nogil:
        cdef int32_t ids[48]
        cdef uint64_t ranks[48]
        cdef Py_ssize_t m = n, i, best
        cdef uint64_t lo
        for i in range(n):
            ids[i] = self.byte_ids[p[i]]
        for i in range(n - 1):
            ranks[i] = self._pair(ids[i], ids[i + 1])
        while m > 1:
            lo = NO_MERGE
            best = -1
            for i in range(m - 1):
                if ranks[i] < lo:
                    lo = ranks[i]
                    best = i
            if best < 0:
                break
            ids[best] = <int32_t>(lo & 0xFFFFFFFFULL)
            for i in range(best + 1, m - 1):
                ids[i] = ids[i + 1]
                ranks[i] = ranks[i + 1]
            m -= 1
            if best + 1 < m:
                ranks[best] = self._pair(ids[best], ids[best + 1])
            if best > 0:
                ranks[best - 1] = self._pair(ids[best - 1], ids[best])
        for i in range(m):
            out.push_back(ids[i])

    cdef void _merge_large(self, const unsigned char *p, Py_ssize_t n,
                           vector[int32_t] *out) noexcept nogil:
        # Linked list over symbol slots; heap of (rank << 32 | slot), complemented so
        # that the max-heap primitives pop the lowest rank, then the leftmost slot.
        cdef vector[int32_t] ids
        cdef vector[int32_t] nxt
        cdef vector[int32_t] prv
        cdef vector[uint64_t] heap
        cdef Py_ssize_t i
        cdef uint64_t r, key
        cdef int32_t pos, right, left
        ids.resize(n)
        nxt.resize(n)
        prv.resize(n)
        for i in range(n):
            ids[i] = self.byte_ids[p[i]]
            nxt[i] = <int32_t>(i + 1) if i + 1 < n else -1
            prv[i] = <int32_t>(i - 1)
        for i in range(n - 1):
            r = self._pair(ids[i], ids[i + 1])
            if r != NO_MERGE:
                heap.push_back(~(((r >> 32) << 32) | <uint64_t>i))
                push_heap(heap.begin(), heap.end())
        while not heap.empty():
            pop_heap(heap.begin(), heap.end())
            key = ~heap.back()
            heap.pop_back()
            pos = <int32_t>(key & 0xFFFFFFFFULL)
            if ids[pos] < 0 or nxt[pos] < 0:
                continue
            right = nxt[pos]
            r = self._pair(ids[pos], ids[right])
            if r == NO_MERGE or (r >> 32) != (key >> 32):
                continue
            ids[pos] = <int32_t>(r & 0xFFFFFFFFULL)
            ids[right] = -1
            nxt[pos] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = pos
            left = prv[pos]
            if left >= 0:
                r = self._pair(ids[left], ids[pos])
                if r != NO_MERGE:
                    heap.push_back(~(((r >> 32) << 32) | <uint64_t>left))
                    push_heap(heap.begin(), heap.end())
            if nxt[pos] >= 0:
                r = self._pair(ids[pos], ids[nxt[pos]])
                if r != NO_MERGE:
                    heap.push_back(~(((r >> 32) << 32) | <uint64_t>pos))
                    push_heap(heap.begin(), heap.end())
        pos = 0
        while pos >= 0:
            out.push_back(ids[pos])
            pos = nxt[pos]

    cdef void _encode_piece(self, const unsigned char *p, Py_ssize_t n,
                            vector[int32_t] *out) noexcept nogil:
        cdef string key
        if n == 1:
            out.push_back(self.byte_ids[p[0]])
            return
        if self.whole_piece_lookup:
            key = string(<const char *>p, n)
            it = self.encoder.find(key)
            if it != self.encoder.end():
                out.push_back(deref(it).second)
                return
        if <size_t>n < CACHE_MIN_BYTES or <size_t>n > CACHE_MAX_PIECE:
            self._merge(p, n, out)
            return
        if not self.whole_piece_lookup:
            key = string(<const char *>p, n)
        self.cache_lock.lock()
        cit = self.cache.find(key)
        if cit != self.cache.end():
            out.insert(out.end(), deref(cit).second.begin(), deref(cit).second.end())
            self.cache_hits += 1
            self.cache_lock.unlock()
            return
        self.cache_misses += 1
        self.cache_lock.unlock()
        cdef size_t before = out.size()
        self._merge(p, n, out)
        cdef vector[int32_t] made
        made.assign(out.begin() + before, out.end())
        self.cache_lock.lock()
        if self.cache.size() >= self.cache_capacity:
            self.cache.clear()
        self.cache[key] = made
        self.cache_lock.unlock()

    cdef inline void _merge(self, const unsigned char *p, Py_ssize_t n,
                            vector[int32_t] *out) noexcept nogil:
        if n <= SMALL_PIECE:
            self._merge_small(p, n, out)
        else:
            self._merge_large(p, n, out)

    cdef void _encode_span(self, const unsigned char *s, Py_ssize_t n,
                           const vector[int64_t] *ends, vector[int32_t] *out) noexcept nogil:
        cdef Py_ssize_t pos = 0, end
        cdef size_t k
        if ends == NULL:
            while pos < n:
                end = pt_next_piece(self.family, s, pos, n)
                self._encode_piece(s + pos, end - pos, out)
                pos = end
        else:
            for k in range(ends.size()):
                end = ends[0][k]
                if end > pos:
                    self._encode_piece(s + pos, end - pos, out)
                    pos = end

    # ------------------------------------------------------------------ Python API

    cdef vector[int32_t] _encode(self, bytes data, ends) except *:
        cdef vector[int32_t] out
        cdef vector[int64_t] cuts
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        if ends is None and self.family < 0:
            raise ValueError("no compiled scanner for this pattern: pass piece ends")
        out.reserve(n // 3 + 4)
        if ends is None:
            with nogil:
                self._encode_span(s, n, NULL, &out)
        else:
            for e in ends:
                cuts.push_back(e)
            with nogil:
                self._encode_span(s, n, &cuts, &out)
        return out

    def encode(self, bytes data, ends=None):
        """UTF-8 ``data`` (one ordinary segment) -> ids.

        ``ends``: exclusive byte ends of the pre-tokenizer pieces, or None to use the
        compiled scanner. Releases the GIL while merging.
        """
        return _to_list(self._encode(data, ends))

    def count(self, bytes data, ends=None):
        """Like ``encode`` but returns only the number of ids (no list is built)."""
        return self._encode(data, ends).size()

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
            pos += self.decoder[out[i]].size()
            item = PyLong_FromLong(pos)
            Py_INCREF(item)
            PyList_SET_ITEM(spans, 2 * i + 1, item)
        return _to_list(out), spans

    def encode_piece(self, bytes piece):
        """Merge one piece as given (no pre-tokenization); for tests and the trainer."""
        cdef vector[int32_t] out
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(piece)
        if n:
            with nogil:
                self._encode_piece(s, n, &out)
        return _to_list(out)

    def decode_bytes(self, ids):
        """ids -> bytes; returns ``(bytes, unknown_ids)`` so the caller raises typed errors."""
        cdef string buf
        cdef long tid
        cdef size_t size = self.decoder.size()
        unknown = []
        for obj in ids:
            tid = obj
            if tid < 0 or <size_t>tid >= size or not self.known[tid]:
                unknown.append(obj)
                continue
            buf.append(self.decoder[tid])
        return buf, unknown

    def token_bytes(self, long tid):
        if tid < 0 or <size_t>tid >= self.decoder.size() or not self.known[tid]:
            return None
        cdef string tok = self.decoder[tid]
        return tok

    def token_length(self, long tid):
        return self.decoder[tid].size()

    @property
    def size(self):
        """One past the largest id (the vocabulary size as clients index it)."""
        return self.decoder.size()

    @property
    def merge_count(self):
        return self.merges.size()

    def clear_cache(self):
        self.cache_lock.lock()
        self.cache.clear()
        self.cache_lock.unlock()




cdef list _to_list(const vector[int32_t] &ids):
    cdef size_t i
    cdef list out = PyList_New(ids.size())
    for i in range(ids.size()):
        item = PyLong_FromLong(ids[i])
        Py_INCREF(item)
        PyList_SET_ITEM(out, i, item)
    return out
