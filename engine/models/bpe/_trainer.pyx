# cython: language_level=3, embedsignature=True
"""Hot loops of the byte-level BPE trainer (``engine.trainer`` is the Python face).

Two pieces:

* ``PieceCounter``: a ``bytes -> count`` table of pre-tokenized pieces ("weighted piece
  types"). For the known pattern families the compiled scanner (``pretok_scan.h``, the
  same one the engine encodes with, so training and encoding see identical pieces) cuts
  the text and every piece is counted in one nogil loop; other patterns come in as
  counts from the ``regex`` module. Counters travel between processes as one compact
  blob (``to_blob`` / ``add_blob``).
* ``MergeTrainer``: the merge loop over those types. State, kept exact after every merge:

  - ``words``: each piece type of two or more bytes as a flat run of symbol ids (rewritten
    in place; a merge only shortens a word) with its corpus count as weight;
  - ``pair count``: sum over words of weight x number of adjacent occurrences (overlapping
    ones included, e.g. ``a a a`` holds ``(a, a)`` twice), in an open-addressing table;
  - ``where``: for each pair, the words that may hold it (stale entries allowed, checked
    when visited, deduplicated per merge by a stamp);
  - a max-heap of ``(count, left bytes, right bytes)`` entries with lazy deletion: an entry
    is valid iff its count equals the pair's current count. Every count increase pushes
    a fresh entry, so each live pair always has an entry >= its count; a popped entry whose
    count dropped is re-pushed with the current count. Hence the first valid pop is the
    true maximum.

  Tie-break (documented, deterministic): highest count, then the lexicographically
  greatest ``(left bytes, right bytes)`` (byte strings compared as unsigned bytes, a
  prefix sorting first, i.e. Python's ``bytes`` order).

  A merge ``(A, B)`` rewrites each affected word left to right, non-overlapping (``a a a``
  becomes ``aa a``), and adjusts only the pairs next to each rewrite. If ``A + B`` is
  already a token (reached earlier by another split, e.g. ``(a, bc)`` then ``(ab, c)``),
  the merge reuses that token: ranks stay one-to-one with byte strings, as the tiktoken
  format requires, and the merge is still recorded.

Merging never crosses a piece boundary because pieces are separate words.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp.string cimport string
from libcpp.vector cimport vector
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize


from ..._native.pretok_scan cimport pt_next_piece


cdef extern from * nogil:
    """
    #include <algorithm>
    #include <cstdint>
    #include <cstring>
    #include <string>
    #include <vector>

    namespace bpetrain {

    static inline uint64_t mix64(uint64_t x) {
        x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33; return x;
    }

    static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
        uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
        while (n >= 8) { uint64_t w; std::memcpy(&w, p, 8); h = mix64(h ^ w); p += 8; n -= 8; }
        uint64_t w = 0; std::memcpy(&w, p, n);
        return mix64(h ^ w ^ ((uint64_t)n << 56));
    }

    /* piece bytes -> count; keys live in one arena, slots are indices (open addressing). */
    struct PieceTable {
        std::vector<unsigned char> arena;
        std::vector<uint64_t> off;     /* entry i: bytes arena[off[i], off[i] + len[i]) */
        std::vector<uint32_t> len;
        std::vector<int64_t> count;
        std::vector<uint64_t> hash;
        std::vector<int32_t> slots;    /* -1 = empty */
        size_t mask = 0;

        PieceTable() { rehash(1 << 16); }

        void rehash(size_t cap) {
            slots.assign(cap, -1);
            mask = cap - 1;
            for (size_t i = 0; i < count.size(); ++i) {
                size_t s = hash[i] & mask;
                while (slots[s] >= 0) s = (s + 1) & mask;
                slots[s] = (int32_t)i;
            }
        }

        void add(const unsigned char *p, size_t n, int64_t c) {
            uint64_t h = hash_bytes(p, n);
            size_t s = h & mask;
            for (;;) {
                int32_t e = slots[s];
                if (e < 0) break;
                if (hash[e] == h && len[e] == n && std::memcmp(&arena[off[e]], p, n) == 0) {
                    count[e] += c;
                    return;
                }
                s = (s + 1) & mask;
            }
            int32_t e = (int32_t)count.size();
            off.push_back(arena.size());
            len.push_back((uint32_t)n);
            arena.insert(arena.end(), p, p + n);
            count.push_back(c);
            hash.push_back(h);
            slots[s] = e;
            if ((count.size() + 1) * 2 > slots.size()) rehash(slots.size() * 2);
        }

        void add_family(int family, const unsigned char *s, ptrdiff_t n) {
            ptrdiff_t pos = 0;
            while (pos < n) {
                ptrdiff_t end = pt_next_piece(family, s, pos, n);
                if (end <= pos || end > n) end = n;  /* never loop forever */
                add(s + pos, (size_t)(end - pos), 1);
                pos = end;
            }
        }
    };

    struct HeapEntry {
        int64_t count;
        int32_t a, b;   /* symbol ids */
        int32_t pair;   /* index into the pair table */
    };

    struct Core {
        std::vector<std::string> tokens;        /* id -> bytes; id == rank */
        /* bytes -> id, to reuse a token reached by a second split */
        std::vector<int32_t> tok_slots;
        size_t tok_mask = 0;

        std::vector<int32_t> sym;
        std::vector<uint64_t> wstart;
        std::vector<int32_t> wlen;
        std::vector<int64_t> weight;
        std::vector<int64_t> wstamp;

        /* pair table: key (a << 32 | b) -> index */
        std::vector<uint64_t> pkey_slots;
        std::vector<int32_t> pidx_slots;
        size_t pmask = 0;
        std::vector<uint64_t> pkey;
        std::vector<int64_t> pcount;
        std::vector<std::vector<int32_t> > pwhere;
        std::vector<int64_t> ptouched;          /* stamp of the last merge that raised it */
        std::vector<int32_t> raised;            /* pairs raised during the current merge */

        std::vector<HeapEntry> heap;
        int64_t step = 0;

        /* last merge */
        int32_t last_a = -1, last_b = -1, last_new = -1;
        int64_t last_count = 0;

        bool less(const HeapEntry &x, const HeapEntry &y) const {
            if (x.count != y.count) return x.count < y.count;
            int c = tokens[x.a].compare(tokens[y.a]);
            if (c != 0) return c < 0;
            return tokens[x.b].compare(tokens[y.b]) < 0;
        }
        struct Less {
            const Core *core;
            bool operator()(const HeapEntry &x, const HeapEntry &y) const { return core->less(x, y); }
        };

        void tok_rehash(size_t cap) {
            tok_slots.assign(cap, -1);
            tok_mask = cap - 1;
            for (size_t i = 0; i < tokens.size(); ++i) {
                const std::string &t = tokens[i];
                size_t s = hash_bytes((const unsigned char *)t.data(), t.size()) & tok_mask;
                while (tok_slots[s] >= 0) s = (s + 1) & tok_mask;
                tok_slots[s] = (int32_t)i;
            }
        }

        int32_t token_for(const std::string &t) {
            size_t s = hash_bytes((const unsigned char *)t.data(), t.size()) & tok_mask;
            for (;;) {
                int32_t e = tok_slots[s];
                if (e < 0) break;
                if (tokens[e] == t) return e;
                s = (s + 1) & tok_mask;
            }
            int32_t id = (int32_t)tokens.size();
            tokens.push_back(t);
            tok_slots[s] = id;
            if ((tokens.size() + 1) * 2 > tok_slots.size()) tok_rehash(tok_slots.size() * 2);
            return id;
        }

        void pair_rehash(size_t cap) {
            pkey_slots.assign(cap, 0);
            pidx_slots.assign(cap, -1);
            pmask = cap - 1;
            for (size_t i = 0; i < pkey.size(); ++i) {
                size_t s = mix64(pkey[i]) & pmask;
                while (pidx_slots[s] >= 0) s = (s + 1) & pmask;
                pkey_slots[s] = pkey[i];
                pidx_slots[s] = (int32_t)i;
            }
        }

        int32_t pair_index(int32_t a, int32_t b) {
            uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
            size_t s = mix64(k) & pmask;
            for (;;) {
                int32_t e = pidx_slots[s];
                if (e < 0) break;
                if (pkey_slots[s] == k) return e;
                s = (s + 1) & pmask;
            }
            int32_t e = (int32_t)pkey.size();
            pkey.push_back(k);
            pcount.push_back(0);
            pwhere.emplace_back();
            ptouched.push_back(-1);
            pkey_slots[s] = k;
            pidx_slots[s] = e;
            if ((pkey.size() + 1) * 2 > pkey_slots.size()) pair_rehash(pkey_slots.size() * 2);
            return e;
        }

        inline void dec(int32_t a, int32_t b, int64_t w) { pcount[pair_index(a, b)] -= w; }

        inline void inc(int32_t a, int32_t b, int64_t w, int32_t word) {
            int32_t p = pair_index(a, b);
            pcount[p] += w;
            std::vector<int32_t> &wh = pwhere[p];
            if (wh.empty() || wh.back() != word) wh.push_back(word);
            if (ptouched[p] != step) { ptouched[p] = step; raised.push_back(p); }
        }

        void push(int32_t p) {
            uint64_t k = pkey[p];
            HeapEntry e{pcount[p], (int32_t)(k >> 32), (int32_t)(uint32_t)k, p};
            heap.push_back(e);
            std::push_heap(heap.begin(), heap.end(), Less{this});
        }

        /* words: concatenated piece bytes, their lengths and counts (pieces of >= 2 bytes) */
        void init(const unsigned char *data, const uint32_t *lens, const int64_t *counts, size_t nwords) {
            tokens.clear();
            for (int i = 0; i < 256; ++i) tokens.push_back(std::string(1, (char)i));
            tok_rehash(1024);
            size_t total = 0;
            for (size_t i = 0; i < nwords; ++i) total += lens[i];
            sym.resize(total);
            wstart.resize(nwords); wlen.resize(nwords); weight.resize(nwords);
            wstamp.assign(nwords, -1);
            size_t pos = 0;
            for (size_t i = 0; i < nwords; ++i) {
                wstart[i] = pos; wlen[i] = (int32_t)lens[i]; weight[i] = counts[i];
                for (uint32_t j = 0; j < lens[i]; ++j) sym[pos + j] = data[pos + j];
                pos += lens[i];
            }
            size_t cap = 1 << 16;
            pair_rehash(cap);
            step = 0;
            for (size_t i = 0; i < nwords; ++i) {
                const int32_t *s = &sym[wstart[i]];
                for (int32_t j = 0; j + 1 < wlen[i]; ++j) inc(s[j], s[j + 1], weight[i], (int32_t)i);
            }
            raised.clear();
            heap.clear();
            for (size_t p = 0; p < pkey.size(); ++p) {
                if (pcount[p] > 0) {
                    uint64_t k = pkey[p];
                    heap.push_back(HeapEntry{pcount[p], (int32_t)(k >> 32), (int32_t)(uint32_t)k, (int32_t)p});
                }
            }
            std::make_heap(heap.begin(), heap.end(), Less{this});
        }

        /* one merge; returns false when no pair is left */
        bool merge_one() {
            int32_t best = -1;
            while (!heap.empty()) {
                HeapEntry top = heap.front();
                std::pop_heap(heap.begin(), heap.end(), Less{this});
                heap.pop_back();
                int64_t cur = pcount[top.pair];
                if (cur == top.count && cur > 0) { best = top.pair; break; }
                if (cur > 0 && cur < top.count) {
                    top.count = cur;
                    heap.push_back(top);
                    std::push_heap(heap.begin(), heap.end(), Less{this});
                }
            }
            if (best < 0) return false;
            ++step;
            uint64_t k = pkey[best];
            int32_t A = (int32_t)(k >> 32), B = (int32_t)(uint32_t)k;
            last_a = A; last_b = B; last_count = pcount[best];
            int32_t N = token_for(tokens[A] + tokens[B]);
            last_new = N;
            std::vector<int32_t> words;
            words.swap(pwhere[best]);
            raised.clear();
            for (int32_t w : words) {
                if (wstamp[w] == step) continue;
                wstamp[w] = step;
                int32_t *s = &sym[wstart[w]];
                int32_t n = wlen[w];
                int64_t wt = weight[w];
                int32_t i = 0, j = 0;
                while (i < n) {
                    if (i + 1 < n && s[i] == A && s[i + 1] == B) {
                        dec(A, B, wt);
                        if (j > 0) { int32_t L = s[j - 1]; dec(L, A, wt); inc(L, N, wt, w); }
                        if (i + 2 < n) { int32_t R = s[i + 2]; dec(B, R, wt); inc(N, R, wt, w); }
                        s[j++] = N;
                        i += 2;
                    } else {
                        s[j++] = s[i++];
                    }
                }
                wlen[w] = j;
            }
            for (int32_t p : raised) if (pcount[p] > 0) push(p);
            raised.clear();
            return true;
        }
    };

    }  // namespace bpetrain
    """
    cdef cppclass PieceTable "bpetrain::PieceTable":
        vector[unsigned char] arena
        vector[uint64_t] off
        vector[uint32_t] len
        vector[int64_t] count
        void add(const unsigned char *p, size_t n, int64_t c)
        void add_family(int family, const unsigned char *s, ptrdiff_t n)

    cdef cppclass Core "bpetrain::Core":
        vector[string] tokens
        int32_t last_a, last_b, last_new
        int64_t last_count
        void init(const unsigned char *data, const uint32_t *lens, const int64_t *counts,
                  size_t nwords)
        bint merge_one()


cdef class PieceCounter:
    """``bytes -> count`` of pre-tokenized pieces. Not thread-safe; one per process."""

    cdef PieceTable table

    def __len__(self):
        return self.table.count.size()

    def add_family(self, int family, bytes data):
        """Count the pieces the compiled scanner ``family`` cuts UTF-8 ``data`` into."""
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef ptrdiff_t n = PyBytes_GET_SIZE(data)
        with nogil:
            self.table.add_family(family, p, n)

    def add_counts(self, counts):
        """Add a ``{str | bytes: int}`` mapping (str keys are UTF-8 encoded)."""
        cdef bytes b
        for key, c in counts.items():
            b = key.encode("utf-8") if isinstance(key, str) else key
            self.table.add(<const unsigned char *>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), c)

    def add_pieces(self, pieces):
        """Count each ``str`` piece of an iterable once."""
        cdef bytes b
        for piece in pieces:
            b = piece.encode("utf-8")
            self.table.add(<const unsigned char *>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), 1)

    def to_blob(self):
        """Compact serialisation: header, lengths (u32), counts (i64), then the bytes."""
        cdef size_t n = self.table.count.size()
        cdef size_t nbytes = self.table.arena.size()
        cdef size_t size = 8 + n * 12 + nbytes
        out = PyBytes_FromStringAndSize(NULL, size)
        cdef char *p = PyBytes_AS_STRING(out)
        cdef uint64_t n64 = n
        memcpy(p, &n64, 8)
        if n:
            memcpy(p + 8, self.table.len.data(), n * 4)
            memcpy(p + 8 + n * 4, self.table.count.data(), n * 8)
        if nbytes:
            memcpy(p + 8 + n * 12, self.table.arena.data(), nbytes)
        return out

    def add_blob(self, bytes blob):
        """Add a blob made by ``to_blob`` (possibly in another process)."""
        cdef const char *p = PyBytes_AS_STRING(blob)
        cdef uint64_t n
        memcpy(&n, p, 8)
        cdef const uint32_t *lens = <const uint32_t *>(p + 8)
        cdef const unsigned char *data = <const unsigned char *>(p + 8 + n * 12)
        cdef size_t i, pos = 0
        cdef int64_t c
        with nogil:
            for i in range(n):
                memcpy(&c, p + 8 + n * 4 + i * 8, 8)
                self.table.add(data + pos, lens[i], c)
                pos += lens[i]

    def items(self):
        """``[(piece bytes, count)]`` sorted by bytes (deterministic order)."""
        cdef size_t i, n = self.table.count.size()
        cdef const char *arena = <const char *>self.table.arena.data()
        out = []
        for i in range(n):
            out.append((PyBytes_FromStringAndSize(arena + self.table.off[i], self.table.len[i]),
                        self.table.count[i]))
        out.sort()
        return out

    def total(self):
        """Sum of all counts (number of pieces seen)."""
        cdef int64_t t = 0
        cdef size_t i
        for i in range(self.table.count.size()):
            t += self.table.count[i]
        return t


cdef class MergeTrainer:
    """The incremental merge loop over the pieces of a ``PieceCounter``.

    ``merge(limit)`` performs up to ``limit`` merges and returns them as
    ``[(left id, right id, new id, count)]``; ids index ``tokens()`` (id == rank).
    """

    cdef Core core

    def __init__(self, PieceCounter counter):
        # words in sorted byte order so that every internal layout is deterministic
        items = [(b, c) for b, c in counter.items() if len(b) >= 2 and c > 0]
        cdef size_t n = len(items)
        data = b"".join([b for b, _ in items])
        cdef vector[uint32_t] lens
        cdef vector[int64_t] counts
        lens.reserve(n)
        counts.reserve(n)
        for b, c in items:
            lens.push_back(len(b))
            counts.push_back(c)
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
        with nogil:
            self.core.init(p, lens.data(), counts.data(), n)

    def merge(self, Py_ssize_t limit):
        cdef Py_ssize_t i
        cdef vector[int64_t] rec
        with nogil:
            for i in range(limit):
                if not self.core.merge_one():
                    break
                rec.push_back(self.core.last_a)
                rec.push_back(self.core.last_b)
                rec.push_back(self.core.last_new)
                rec.push_back(self.core.last_count)
        cdef Py_ssize_t m = rec.size()
        return [(rec[i], rec[i + 1], rec[i + 2], rec[i + 3]) for i in range(0, m, 4)]

    def num_tokens(self):
        return self.core.tokens.size()

    def tokens(self):
        """Token bytes in id (= rank) order; the first 256 are the single bytes."""
        cdef size_t i
        out = []
        for i in range(self.core.tokens.size()):
            out.append(PyBytes_FromStringAndSize(self.core.tokens[i].data(),
                                                 self.core.tokens[i].size()))
        return out
