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
* Two merge rules, one loop. A ``.tiktoken`` file ranks byte strings: the adjacent pair
  to merge is the one whose concatenated bytes have the lowest rank, looked up directly
  in the token table (deriving an id-pair table at load cost 0.4 s for o200k_base, more
  than tiktoken's whole load). A ``tokenizer.json`` merges list is an id-pair table:
  ``(left_id << 32 | right_id) -> (rank << 32 | merged_id)``. Ties go to the leftmost
  pair in both references.
* Both tables are flat open-addressing arrays (``bpe_tables.h``), read-only after load.
* Short pieces (the vast majority) use a flat array and a linear minimum scan: fewer
  than ~48 symbols fit in cache lines and beat any heap. Long pieces (a megabyte of
  one letter, base64, spaces) use a doubly linked list plus a binary heap with
  stale-entry checks, so a piece of n bytes costs O(n log n), never O(n^2).
* Long pieces of CJK and similar text (a whole clause is one piece, and nearly every
  clause is new) are cut where no token of the vocabulary can cross (``piece_split.h``,
  which states why that is exact); the parts are short words that recur, so they come
  from the piece cache even in text never seen before. Measured on cold CJK text:
  o200k_base 15.3 -> 28.7 MB/s, cl100k_base 18.6 -> 33.6.
* A bounded piece -> ids cache (``piece_cache.h``: sharded seqlocks, so readers on
  several threads write nothing shared) saves the merge loop for repeated multi-token
  pieces; single-token pieces never reach it, and a piece enters it on its second
  sighting (on new text a lookup plus an insert per piece cost more than they saved).
  A small per-thread cache of id pair -> merge result (``pair_cache.h``) answers most
  of the merge loop's questions about pairs without touching the vocabulary table, and
  for ``.tiktoken`` vocabularies the first question of every loop, "do these two bytes
  merge?", is one load from a dense 65,536-entry table.

Invariants: every id produced is a key of the decoder table; the concatenated bytes of
a piece's ids equal the piece; offsets are derived from token byte lengths, so they
are exact by construction.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLong
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from libcpp.algorithm cimport pop_heap, push_heap
from libcpp.string cimport string
from libcpp.vector cimport vector

from .errors import ArtifactError


cdef extern from "pretok_scan.h":
    ptrdiff_t pt_next_piece(int family, const unsigned char *s, ptrdiff_t pos, ptrdiff_t n) nogil


cdef extern from "piece_cache.h":
    cdef cppclass PieceCache:
        void set_capacity(size_t capacity)
        @staticmethod
        uint64_t hash_of(const unsigned char *p, size_t n) noexcept nogil
        bint get(uint64_t h, const unsigned char *p, size_t n,
                 vector[int32_t] *out) noexcept nogil
        void put(uint64_t h, const unsigned char *p, size_t n, const int32_t *ids,
                 size_t count) noexcept nogil
        void clear() noexcept nogil
        bint enabled() noexcept nogil
        bint seen_before(uint64_t h) noexcept nogil
        void add_stats(uint64_t hits, uint64_t misses, uint64_t marks) noexcept nogil
        uint64_t hits()
        uint64_t misses()


cdef extern from "piece_split.h":
    cdef cppclass PieceSplitter:
        int build(const unsigned char *arena, const size_t *start, const uint32_t *length,
                  const char *mergeable, size_t n_ids)
        bint ready() noexcept nogil
        size_t next_cut(const unsigned char *p, size_t pos, size_t n, unsigned patience) noexcept nogil


cdef extern from "pair_cache.h":
    cdef cppclass PairEntry "pair_cache::Entry":
        pass
    uint64_t pc_new_owner(size_t vocab_size) nogil
    PairEntry *pc_table() noexcept nogil
    int pc_get(const PairEntry *table, uint64_t owner, int32_t a, int32_t b,
               uint64_t *value) noexcept nogil
    void pc_put(PairEntry *table, uint64_t owner, int32_t a, int32_t b,
                uint64_t value) noexcept nogil


cdef struct PieceCtx:
    # One per encode call on one thread: that thread's pair cache, looked up once
    # (thread_local access is a function call in a loaded module), and the piece
    # cache's statistics, added to the shared counters once at the end (a shared
    # counter bumped per piece stops threads from scaling).
    PairEntry *pairs
    uint64_t hits
    uint64_t misses
    uint64_t marks  # bits set in the piece cache's seen filter


cdef inline void _ctx_init(PieceCtx *ctx) noexcept nogil:
    ctx.pairs = pc_table()
    ctx.hits = 0
    ctx.misses = 0
    ctx.marks = 0


cdef extern from "parallel_for.h":
    ctypedef void (*pf_task)(void *ctx, size_t i) noexcept nogil
    void pf_run(size_t n, int threads, pf_task fn, void *ctx) nogil


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
    (<BpeModel>jobs.model)._encode_span(jobs.data[i], jobs.size[i], jobs.ends[i], &ids)
    jobs.out[i].swap(ids)


cdef extern from "bpe_tables.h":
    ctypedef struct bt_u64map:
        size_t size
    ctypedef struct bt_bytesmap:
        pass
    int bt_u64_init(bt_u64map *m, size_t expected) nogil
    void bt_u64_free(bt_u64map *m) nogil
    void bt_u64_put_new(bt_u64map *m, uint64_t key, uint64_t val) nogil
    uint64_t bt_u64_get(const bt_u64map *m, uint64_t key) nogil
    int bt_bytes_init(bt_bytesmap *m, size_t expected) nogil
    void bt_bytes_free(bt_bytesmap *m) nogil
    void bt_bytes_put(bt_bytesmap *m, const unsigned char *p, size_t n, int32_t id) nogil
    int32_t bt_bytes_get(const bt_bytesmap *m, const unsigned char *p, size_t n) nogil
    ptrdiff_t bt_b64_decode(const unsigned char *s, size_t n, unsigned char *out) nogil


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
cdef size_t SPLIT_MIN_BYTES = 7
cdef unsigned SPLIT_PATIENCE = 6


cdef class BpeModel:
    """Ranks, merges and the id -> bytes table of one vocabulary.

    ``family`` selects the compiled pre-tokenizer scanner (>= 0) or none (-1, the
    caller passes piece boundaries computed by the ``regex`` fallback).
    """

    cdef bt_bytesmap encoder
    cdef bt_u64map merges
    cdef vector[unsigned char] arena
    cdef vector[size_t] tok_start
    cdef vector[uint32_t] tok_len
    cdef vector[char] known
    cdef int32_t byte_ids[256]
    # Longest mergeable token starting with each pair of bytes (0xFFFF: that or longer)
    cdef vector[uint16_t] longest_from
    cdef vector[uint32_t] byte_pairs  # concat ranks: id of bytes (a, b) at a << 8 | b
    cdef bint whole_piece_lookup
    cdef bint concat_ranks
    cdef public int family
    cdef PieceCache cache
    cdef PieceSplitter splitter
    cdef uint64_t pair_owner  # this model's serial in the per-thread pair cache, 0: none
    cdef list id_objects  # int objects 0..size-1, shared by every returned id list

    def __cinit__(self):
        self.family = -1
        self.pair_owner = 0  # no pair cache until the tables are built

    def __dealloc__(self):
        bt_bytes_free(&self.encoder)
        bt_u64_free(&self.merges)

    def __init__(self, tokens=None, merges=None, added=None, *, bytes tiktoken_data=None,
                 bint whole_piece_lookup=True, int family=-1, size_t cache_capacity=65536,
                 bint split_pieces=True):
        """Build the tables.

        Args:
            tokens: iterable of ``(token_bytes, id)`` for the BPE vocabulary, or None
                with ``tiktoken_data``: the raw bytes of a ``.tiktoken`` rank file,
                parsed here in C (it is most of the load time otherwise).
            merges: ``None`` for tiktoken semantics (derive pair merges from ranks, the
                rank of a token being its id); else a list of ``(left, right)`` byte
                strings in rank order (``tokenizer.json``).
            added: iterable of ``(literal_bytes, id)`` decodable but never produced by
                merging (special and added tokens).
            whole_piece_lookup: emit a piece that is itself a token directly.
            split_pieces: cut pieces where no token can cross (piece_split.h); off only
                to compare against (tests, benchmarks).
        Raises:
            ArtifactError: a single byte or a merge operand is missing from the vocabulary.
        """
        cdef bytes tok
        cdef long tid
        cdef size_t max_id = 0, total = 0, pos = 0, n_tokens
        self.whole_piece_lookup = whole_piece_lookup
        self.family = family
        self.cache.set_capacity(cache_capacity)
        if tiktoken_data is not None:
            tokens = _parse_tiktoken(tiktoken_data)
        pairs = tokens if isinstance(tokens, list) else list(tokens)
        added_list = list(added or ())
        for tok, tid in pairs:
            if tid < 0 or tid >= 0x7FFFFFFF:
                raise ArtifactError(f"token id {tid} out of range")
            total += len(tok)
            if <size_t>tid + 1 > max_id:
                max_id = tid + 1
        for tok, tid in added_list:
            if tid < 0 or tid >= 0x7FFFFFFF:
                raise ArtifactError(f"token id {tid} out of range")
            total += len(tok)
            if <size_t>tid + 1 > max_id:
                max_id = tid + 1
        n_tokens = len(pairs)
        self.arena.resize(total + 1)
        self.tok_start.resize(max_id, 0)
        self.tok_len.resize(max_id, 0)
        self.known.resize(max_id, 0)
        if bt_bytes_init(&self.encoder, n_tokens) != 0:
            raise MemoryError()
        for source in (pairs, added_list):
            for tok, tid in source:
                n = len(tok)
                memcpy(&self.arena[pos], PyBytes_AS_STRING(tok), n)
                self.tok_start[tid] = pos
                self.tok_len[tid] = n
                self.known[tid] = 1
                pos += n
        cdef vector[char] mergeable
        mergeable.resize(max_id, 0)
        self.longest_from.assign(65536, 0)
        cdef size_t first
        for tok, tid in pairs:
            bt_bytes_put(&self.encoder, &self.arena[self.tok_start[tid]], self.tok_len[tid], tid)
            mergeable[tid] = 1
            if self.tok_len[tid] >= 2:
                first = (<size_t>self.arena[self.tok_start[tid]] << 8) | self.arena[self.tok_start[tid] + 1]
                if self.tok_len[tid] > self.longest_from[first]:
                    self.longest_from[first] = min(self.tok_len[tid], 0xFFFF)
        if split_pieces and self.splitter.build(self.arena.data(), self.tok_start.data(),
                                                self.tok_len.data(), mergeable.data(),
                                                max_id) != 0:
            raise MemoryError()
        # Handing out the same int object for an id costs an INCREF; building a fresh one
        # for every id above 256 cost half of a large batch's time (measured, o200k).
        self.id_objects = list(range(max_id))
        cdef int b
        cdef unsigned char c
        for b in range(256):
            c = <unsigned char>b
            self.byte_ids[b] = bt_bytes_get(&self.encoder, &c, 1)
            if self.byte_ids[b] < 0:
                raise ArtifactError(f"vocabulary has no token for the single byte 0x{b:02x}")
        self.concat_ranks = merges is None
        cdef size_t k
        cdef const unsigned char *ptr
        if merges is None:
            if bt_u64_init(&self.merges, 0) != 0:
                raise MemoryError()
            # Every merge loop starts by ranking each adjacent pair of bytes; 65,536
            # answers fit in 256 KiB, so those come from one load, not a hash probe.
            # (The encoder's own answer for each 2-byte string, as _pair_at would get.)
            self.byte_pairs.assign(65536, 0xFFFFFFFFu)
            for k in range(max_id):
                if self.tok_len[k] == 2:
                    ptr = self._ptr(k)
                    self.byte_pairs[(<uint32_t>ptr[0] << 8) | ptr[1]] = <uint32_t>bt_bytes_get(
                        &self.encoder, ptr, 2)
        else:
            if bt_u64_init(&self.merges, len(merges)) != 0:
                raise MemoryError()
            self._load_merges(merges)
        self.pair_owner = pc_new_owner(max_id)

    cdef inline const unsigned char *_ptr(self, int32_t tid) noexcept nogil:
        return &self.arena[self.tok_start[tid]]

    def _load_merges(self, merges):
        cdef bytes a, b
        cdef uint64_t rank = 0
        cdef int32_t ia, ib, im
        for a, b in merges:
            ia = bt_bytes_get(&self.encoder, <const unsigned char *>PyBytes_AS_STRING(a), len(a))
            ib = bt_bytes_get(&self.encoder, <const unsigned char *>PyBytes_AS_STRING(b), len(b))
            ab = a + b
            im = bt_bytes_get(&self.encoder, <const unsigned char *>PyBytes_AS_STRING(ab), len(ab))
            if ia < 0 or ib < 0 or im < 0:
                raise ArtifactError(f"merge {a!r} + {b!r} (rank {rank}) uses a token missing "
                                    f"from the vocabulary")
            bt_u64_put_new(&self.merges, bpe_pair_key(ia, ib), (rank << 32) | <uint32_t>im)
            rank += 1

    # ------------------------------------------------------------------ merging

    cdef inline uint64_t _pair_at(self, PieceCtx *ctx, const unsigned char *p, int32_t a,
                                  int32_t b, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
        # Two adjacent symbols covering p[start:end]: tiktoken ranks merge by the rank of
        # the concatenated bytes (no pair table to build at load); merges lists by ids.
        # The answer is a function of the two ids alone, so it goes through the
        # per-thread pair cache (pair_cache.h) first.
        cdef int32_t tid
        cdef uint64_t r
        if pc_get(ctx.pairs, self.pair_owner, a, b, &r):
            return r
        if self.concat_ranks:
            tid = bt_bytes_get(&self.encoder, p + start, end - start)
            r = NO_MERGE if tid < 0 else (<uint64_t><uint32_t>tid << 32) | <uint32_t>tid
        else:
            r = bt_u64_get(&self.merges, bpe_pair_key(a, b))
        pc_put(ctx.pairs, self.pair_owner, a, b, r)
        return r

    cdef inline uint64_t _byte_pair(self, PieceCtx *ctx, const unsigned char *p,
                                    Py_ssize_t i) noexcept nogil:
        # Rank of the two bytes p[i], p[i + 1] as adjacent single-byte symbols.
        cdef uint32_t tid
        if self.concat_ranks:
            tid = self.byte_pairs[(<uint32_t>p[i] << 8) | p[i + 1]]
            return NO_MERGE if tid == 0xFFFFFFFFu else (<uint64_t>tid << 32) | tid
        return self._pair_at(ctx, p, self.byte_ids[p[i]], self.byte_ids[p[i + 1]], i, i + 2)

    cdef void _merge_small(self, PieceCtx *ctx, const unsigned char *p, Py_ssize_t n,
                           vector[int32_t] *out) noexcept nogil:
        cdef int32_t ids[48]
        cdef Py_ssize_t st[49]
        cdef uint64_t ranks[48]
        cdef Py_ssize_t m = n, i, best
        cdef uint64_t lo, key
        for i in range(n):
            ids[i] = self.byte_ids[p[i]]
            st[i] = i
        st[n] = n
        for i in range(n - 1):
            ranks[i] = self._byte_pair(ctx, p, i)
        while m > 1:
            # Lowest rank, leftmost on ties: the minimum of rank << 32 | position, a
            # comparison the compiler turns into a conditional move (with a branch per
            # rank, cold o200k_base text in other scripts was 4% slower).
            lo = NO_MERGE
            for i in range(m - 1):
                key = (ranks[i] & 0xFFFFFFFF00000000ULL) | <uint64_t>i
                lo = key if key < lo else lo
            if (lo >> 32) == 0xFFFFFFFFULL:
                break
            best = <Py_ssize_t>(lo & 0xFFFFFFFFULL)
            ids[best] = <int32_t>(ranks[best] & 0xFFFFFFFFULL)
            for i in range(best + 1, m - 1):
                ids[i] = ids[i + 1]
                ranks[i] = ranks[i + 1]
            for i in range(best + 1, m):
                st[i] = st[i + 1]
            m -= 1
            if best + 1 < m:
                ranks[best] = self._pair_at(ctx, p, ids[best], ids[best + 1], st[best], st[best + 2])
            if best > 0:
                ranks[best - 1] = self._pair_at(ctx, p, ids[best - 1], ids[best], st[best - 1],
                                                st[best + 1])
        for i in range(m):
            out.push_back(ids[i])

    cdef void _merge_large(self, PieceCtx *ctx, const unsigned char *p, Py_ssize_t n,
                           vector[int32_t] *out) noexcept nogil:
        # Linked list over symbol slots (a slot is the symbol's first byte position);
        # heap of (rank << 32 | slot), complemented so that the max-heap primitives pop
        # the lowest rank, then the leftmost slot. Entries made stale by earlier merges
        # are detected by recomputing the pair's rank when popped.
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
            r = self._byte_pair(ctx, p, i)
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
            r = self._pair_at(ctx, p, ids[pos], ids[right], pos, _end(nxt, right, n))
            if r == NO_MERGE or (r >> 32) != (key >> 32):
                continue
            ids[pos] = <int32_t>(r & 0xFFFFFFFFULL)
            ids[right] = -1
            nxt[pos] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = pos
            left = prv[pos]
            if left >= 0:
                r = self._pair_at(ctx, p, ids[left], ids[pos], left, _end(nxt, pos, n))
                if r != NO_MERGE:
                    heap.push_back(~(((r >> 32) << 32) | <uint64_t>left))
                    push_heap(heap.begin(), heap.end())
            if nxt[pos] >= 0:
                r = self._pair_at(ctx, p, ids[pos], ids[nxt[pos]], pos, _end(nxt, nxt[pos], n))
                if r != NO_MERGE:
                    heap.push_back(~(((r >> 32) << 32) | <uint64_t>pos))
                    push_heap(heap.begin(), heap.end())
        pos = 0
        while pos >= 0:
            out.push_back(ids[pos])
            pos = nxt[pos]

    cdef void _encode_piece(self, PieceCtx *ctx, const unsigned char *p, Py_ssize_t n,
                            vector[int32_t] *out) noexcept nogil:
        cdef int32_t whole
        cdef size_t longest
        if n == 1:
            out.push_back(self.byte_ids[p[0]])
            return
        # (A piece longer than every token starting with its first two bytes, such as
        # most CJK clauses, cannot be one: no hash of its bytes, no probe.)
        longest = self.longest_from[(<size_t>p[0] << 8) | p[1]]
        if self.whole_piece_lookup and (<size_t>n <= longest or longest == 0xFFFF):
            whole = bt_bytes_get(&self.encoder, p, n)
            if whole >= 0:
                out.push_back(whole)
                return
        self._cached(ctx, p, n, out, True)

    cdef void _cached(self, PieceCtx *ctx, const unsigned char *p, Py_ssize_t n,
                      vector[int32_t] *out, bint whole_piece) noexcept nogil:
        # Merge p[0:n] through the piece cache: a whole piece (cut into parts where
        # exact, see piece_split.h) or one of its parts. Both kinds share the cache,
        # keyed by bytes alone, and that is exact: with whole_piece_lookup a piece
        # whose bytes are a token never gets here, so an entry for such bytes can only
        # come from a part, and for any other bytes a piece and a part merge the same.
        cdef uint64_t h
        cdef size_t before
        if (<size_t>n < CACHE_MIN_BYTES or <size_t>n > CACHE_MAX_PIECE
                or not self.cache.enabled()):
            self._merge_parts(ctx, p, n, out, whole_piece)
            return
        # Cached on its second sighting (see "Admission" in piece_cache.h).
        h = PieceCache.hash_of(p, n)
        if not self.cache.seen_before(h):
            ctx.misses += 1
            ctx.marks += 1
            self._merge_parts(ctx, p, n, out, whole_piece)
            return
        if self.cache.get(h, p, n, out):
            ctx.hits += 1
            return
        ctx.misses += 1
        before = out.size()
        self._merge_parts(ctx, p, n, out, whole_piece)
        self.cache.put(h, p, n, out.data() + before, out.size() - before)

    cdef void _merge_parts(self, PieceCtx *ctx, const unsigned char *p, Py_ssize_t n,
                           vector[int32_t] *out, bint whole_piece) noexcept nogil:
        # A whole piece with a non-ASCII byte is cut where no token can cross
        # (piece_split.h) and each part goes through the cache on its own; anything
        # else is merged as it is.
        cdef size_t pos = 0, cut
        if (not whole_piece or <size_t>n < SPLIT_MIN_BYTES or not self.splitter.ready()
                or not _has_high_byte(p, n)):
            self._merge(ctx, p, n, out)
            return
        cut = self.splitter.next_cut(p, 0, n, SPLIT_PATIENCE)
        if cut >= <size_t>n:
            self._merge(ctx, p, n, out)
            return
        while pos < <size_t>n:
            self._cached(ctx, p + pos, cut - pos, out, False)
            pos = cut
            if pos < <size_t>n:
                cut = self.splitter.next_cut(p, pos, n, SPLIT_PATIENCE)

    cdef inline void _merge(self, PieceCtx *ctx, const unsigned char *p, Py_ssize_t n,
                            vector[int32_t] *out) noexcept nogil:
        if n <= SMALL_PIECE:
            self._merge_small(ctx, p, n, out)
        else:
            self._merge_large(ctx, p, n, out)

    cdef void _encode_span(self, const unsigned char *s, Py_ssize_t n,
                           const vector[int64_t] *ends, vector[int32_t] *out) noexcept nogil:
        cdef Py_ssize_t pos = 0, end
        cdef size_t k
        cdef PieceCtx ctx
        _ctx_init(&ctx)
        if ends == NULL:
            while pos < n:
                end = pt_next_piece(self.family, s, pos, n)
                self._encode_piece(&ctx, s + pos, end - pos, out)
                pos = end
        else:
            for k in range(ends.size()):
                end = ends[0][k]
                if end > pos:
                    self._encode_piece(&ctx, s + pos, end - pos, out)
                    pos = end
        self.cache.add_stats(ctx.hits, ctx.misses, ctx.marks)

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
        return self._to_list(self._encode(data, ends))

    def count(self, bytes data, ends=None):
        """Like ``encode`` but returns only the number of ids (no list is built)."""
        return self._encode(data, ends).size()

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
                if self.family < 0:
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

    cdef list _to_list(self, const vector[int32_t] &ids):
        cdef size_t i, size = len(self.id_objects)
        cdef list out = PyList_New(ids.size())
        for i in range(ids.size()):
            if <size_t>ids[i] < size:
                item = <object>PyList_GET_ITEM(self.id_objects, ids[i])
            else:
                item = ids[i]
            Py_INCREF(item)
            PyList_SET_ITEM(out, i, item)
        return out

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
            pos += self.tok_len[out[i]]
            item = PyLong_FromLong(pos)
            Py_INCREF(item)
            PyList_SET_ITEM(spans, 2 * i + 1, item)
        return self._to_list(out), spans

    def encode_piece(self, bytes piece):
        """Merge one piece as given (no pre-tokenization); for tests and the trainer."""
        cdef vector[int32_t] out
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(piece)
        cdef PieceCtx ctx
        if n:
            with nogil:
                _ctx_init(&ctx)
                self._encode_piece(&ctx, s, n, &out)
            self.cache.add_stats(ctx.hits, ctx.misses, ctx.marks)
        return self._to_list(out)

    def decode_bytes(self, ids):
        """ids -> bytes; returns ``(bytes, unknown_ids)`` so the caller raises typed errors."""
        cdef string buf
        cdef long tid
        cdef size_t size = self.known.size()
        unknown = []
        for obj in ids:
            tid = obj
            if tid < 0 or <size_t>tid >= size or not self.known[tid]:
                unknown.append(obj)
                continue
            buf.append(<const char *>self._ptr(tid), self.tok_len[tid])
        return buf, unknown

    def token_length(self, long tid):
        return self.tok_len[tid]

    @property
    def size(self):
        """One past the largest id (the vocabulary size as clients index it)."""
        return self.known.size()

    @property
    def merge_count(self):
        return self.merges.size

    @property
    def cache_hits(self):
        return self.cache.hits()

    @property
    def cache_misses(self):
        return self.cache.misses()

    def clear_cache(self):
        self.cache.clear()




def _parse_tiktoken(bytes data):
    """``base64 rank`` lines -> list of (token bytes, rank), with the line number on error."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), i = 0, line_start, sp, end
    cdef long rank
    cdef ptrdiff_t w
    cdef unsigned char buf[4096]
    cdef Py_ssize_t lineno = 0
    out = []
    while i < n:
        line_start = i
        lineno += 1
        while i < n and s[i] != 10:
            i += 1
        end = i
        i += 1
        if end > line_start and s[end - 1] == 13:
            end -= 1
        if end == line_start:
            continue
        sp = line_start
        while sp < end and s[sp] != 32:
            sp += 1
        rank = 0
        w = -1
        if sp < end and sp - line_start <= 4096 and end - sp - 1 > 0:
            w = bt_b64_decode(s + line_start, sp - line_start, buf)
            for k in range(sp + 1, end):
                if s[k] < 48 or s[k] > 57:
                    w = -1
                    break
                rank = rank * 10 + (s[k] - 48)
        if w < 0:
            raise ArtifactError(f"line {lineno}: expected 'base64-token rank', got "
                                f"{data[line_start:min(end, line_start + 60)]!r}", line=lineno)
        out.append((<bytes>buf[:w], rank))
    if not out:
        raise ArtifactError("no ranks found in the rank file")
    return out


cdef inline bint _has_high_byte(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] >= 0x80:
            return True
    return False


cdef inline Py_ssize_t _end(const vector[int32_t] &nxt, int32_t slot, Py_ssize_t n) noexcept nogil:
    return nxt[slot] if nxt[slot] >= 0 else n
