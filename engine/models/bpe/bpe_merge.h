/* bpe_merge.h: the BPE model's merge loops, on the read-only tables of bpe_tables.h.
 *
 * One rule, two ways of stating it: a .tiktoken file ranks byte strings, and the pair
 * to merge is the adjacent one whose concatenated bytes have the lowest rank (looked
 * up in the token table itself); a tokenizer.json merges list is a table of id pairs,
 * ``(left << 32 | right) -> (rank << 32 | merged id)``. Ties go to the leftmost pair in
 * both references. ``T(s)`` below is that merge run on the bytes ``s`` alone.
 *
 * Three loops compute T, each exact, chosen by the piece's length:
 *
 * - ``merge_small`` (up to 48 bytes, nearly every piece): symbols in place in flat
 *   arrays and a linear minimum scan, four ranks at a time; fewer than ~48 symbols fit
 *   in cache lines and beat any heap.
 * - ``merge_heap``: a linked list plus a binary heap with stale-entry checks, O(n log n).
 *   Used only to answer the backtracking encoder's questions about pairs of long
 *   tokens (two runs of 128 spaces), never on a whole piece.
 * - ``Backtrack`` (backtrack.h): pieces longer than 48 bytes (a megabyte of one
 *   letter, of spaces, of random letters) in O(n) steps of one token each.
 *
 * Invariants: every id produced is a key of the decoder table; the concatenated bytes
 * of a piece's ids equal the piece. Everything here is nogil and allocation-free except
 * the output vector and the heap loop's scratch.
 */
#ifndef TOKSERVE_BPE_MERGE_H
#define TOKSERVE_BPE_MERGE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bpe_chars.h"
#include "bpe_pairs.h"
#include "bpe_tables.h"
#include "pair_cache.h"
#include "short_pieces.h"

static const uint64_t BPE_NO_MERGE = 0xFFFFFFFFFFFFFFFFULL;
static const size_t BPE_SMALL_PIECE = 48;
/* Pairs whose bytes are at most this long ask the filters before the pair cache. */
static const size_t BPE_FILTER_FIRST = 8;

/* The vocabulary as the merge loops read it: borrowed pointers into tables that the
 * owner (BpeModel) built and never changes afterwards. */
struct BpeVocab {
    const bt_bytesmap *encoder;   /* mergeable token bytes -> id */
    const bt_u64map *merges;      /* merges lists only: id pair -> rank << 32 | id */
    const unsigned char *arena;   /* every token's bytes */
    const uint32_t *tok_start;
    const uint32_t *tok_len;
    const uint32_t *byte_pairs;   /* concat ranks: id of the 2-byte token a << 8 | b */
    const uint16_t *longest_from; /* longest mergeable token starting with bytes a, b */
    const uint64_t *token_filter; /* a bit per hash of each mergeable token of 3+ bytes */
    BpeChars chars;               /* concat ranks: characters that start as tokens */
    BpePairs pairs;               /* concat ranks: id pair -> joined token (or none) */
    int32_t byte_ids[256];
    bool concat_ranks;
    uint64_t pair_owner;          /* this model's serial in the per-thread pair cache */
};

/* One per encode call on one thread: that thread's pair cache, looked up once
 * (thread_local access is a function call in a loaded module), and the piece cache's
 * statistics, added to the shared counters once at the end. */
struct PieceCtx {
    pair_cache::Entry *pairs;
    short_pieces::Entry *shorts;  /* this thread's memo of short pieces (short_pieces.h) */
    uint64_t hits;
    uint64_t misses;
    uint64_t marks;  /* bits set in the piece cache's seen filter */
    /* The last short piece and the last part of a cut piece, and where their ids sit
     * in the output: a repeated digit group or CJK character costs a compare. */
    struct Repeat {
        const unsigned char *p;
        size_t n, at, count;
    } piece, part;
};

static inline void bpe_ctx_init(PieceCtx *ctx) {
    ctx->pairs = pc_table();
    ctx->shorts = short_pieces::table();
    ctx->hits = ctx->misses = ctx->marks = 0;
    ctx->piece = ctx->part = {nullptr, 0, 0, 0};
}

static const size_t BPE_REPEAT_MAX = 16;

/* True (and the ids appended) when p[0:n] is the bytes ``r`` remembers. */
static inline bool bpe_repeat(const PieceCtx::Repeat &r, const unsigned char *p, size_t n,
                              std::vector<int32_t> *out) {
    if (n != r.n || memcmp(p, r.p, n) != 0) return false;
    for (size_t k = 0; k < r.count; k++) {
        int32_t id = (*out)[r.at + k];  /* a copy: push_back may move the vector */
        out->push_back(id);
    }
    return true;
}

static inline uint64_t bpe_pair_key(int32_t a, int32_t b) {
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

/* Concatenated ranks: the id of the two-byte token q[0] q[1], or BPE_NO_TOKEN; one load
 * from the dense byte-pair table (bpe_tables.h). */
static inline uint32_t bpe_two_byte_token(const BpeVocab &v, const unsigned char *q) {
    return bt_two_byte_token(v.byte_pairs, q);
}

/* Concatenated ranks: true when the bytes q[0:n] (n <= BPE_FILTER_FIRST) are surely no
 * token, so the pair covering them never merges. Asked of the dense byte-pair table (2
 * bytes) or the token filter (which has no false "absent"): both are 256 KiB and mostly
 * in L2, where the pair cache's 512 KiB of random keys is not, and answers that never
 * enter the pair cache leave it to the pairs that do merge (random letters ran markedly
 * faster: docs/ENGINE.md). */
static inline bool bpe_surely_no_token(const BpeVocab &v, const unsigned char *q, size_t n) {
    return n == 2 ? bpe_two_byte_token(v, q) == BPE_NO_TOKEN
                  : !bt_filter_has(v.token_filter, q, n);
}

/* Concatenated ranks: rank << 32 | id of the token q[0:n], or NO_MERGE. Shorter keys
 * were asked of the filters already (bpe_surely_no_token); longer ones are here, before
 * the table is read. */
static inline uint64_t bpe_concat_rank(const BpeVocab &v, const unsigned char *q, size_t n) {
    if (n > BPE_FILTER_FIRST && !bt_filter_has(v.token_filter, q, n)) return BPE_NO_MERGE;
    int32_t tid = bt_bytes_get(v.encoder, q, n);
    return tid < 0 ? BPE_NO_MERGE : ((uint64_t)(uint32_t)tid << 32) | (uint32_t)tid;
}

/* Rank << 32 | merged id of two adjacent symbols covering p[start:end], or NO_MERGE.
 * A function of the two ids alone: after the filters for short concatenated pairs
 * (bpe_surely_no_token), a .tiktoken vocabulary asks its pair table (bpe_pairs.h); a
 * merges list, or a vocabulary too large for that table, goes through the per-thread
 * pair cache to its own table. */
static inline uint64_t bpe_pair_at(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                   int32_t a, int32_t b, size_t start, size_t end) {
    uint64_t r;
    size_t n = end - start;
    if (v.concat_ranks && n <= BPE_FILTER_FIRST && bpe_surely_no_token(v, p + start, n))
        return BPE_NO_MERGE;
    if (v.pairs.slots) {  /* concat ranks: one line of the pair table (bpe_pairs.h) */
        int32_t t = bpe_pairs_get(v.pairs, a, b);
        return t < 0 ? BPE_NO_MERGE : ((uint64_t)(uint32_t)t << 32) | (uint32_t)t;
    }
    if (pc_get(ctx->pairs, v.pair_owner, a, b, &r)) return r;
    r = v.concat_ranks ? bpe_concat_rank(v, p + start, n)
                       : bt_u64_get(v.merges, bpe_pair_key(a, b));
    pc_put(ctx->pairs, v.pair_owner, a, b, r);
    return r;
}

/* The same for symbols x and y that meet at ``mid`` (x's bytes end there, y's begin);
 * their lengths are read only for concatenated ranks, whose rule needs the bytes. */
static inline uint64_t bpe_pair_across(const BpeVocab &v, PieceCtx *ctx,
                                       const unsigned char *mid, int32_t x, int32_t y) {
    if (!v.concat_ranks) return bpe_pair_at(v, ctx, mid, x, y, 0, 0);
    size_t lx = v.tok_len[x];
    return bpe_pair_at(v, ctx, mid - lx, x, y, 0, lx + v.tok_len[y]);
}

/* Rank of the two bytes p[i], p[i + 1] as adjacent single-byte symbols: for concat
 * ranks one load from a dense 65,536-entry table, the first question of every loop. */
static inline uint64_t bpe_byte_pair(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                     size_t i) {
    if (v.concat_ranks) {
        uint32_t tid = bpe_two_byte_token(v, p + i);
        return tid == BPE_NO_TOKEN ? BPE_NO_MERGE : ((uint64_t)tid << 32) | tid;
    }
    return bpe_pair_at(v, ctx, p, v.byte_ids[p[i]], v.byte_ids[p[i + 1]], i, i + 2);
}

/* Concatenated ranks: true when no two adjacent bytes of p[0:n] are a token. The first
 * merge of T always joins two such bytes, so then T(p[0:n]) is the bytes' own ids. Asked
 * of a non-ASCII piece before it is cut (bpe_model.h): most answer at their first pair,
 * and a word in a script the vocabulary barely covers (cl100k_base has an id per byte
 * for most of Armenian) is answered in one pass over the byte-pair table instead of by
 * the splitter and a merge loop per part (callgrind: 0.58x the instructions on Armenian
 * text, +0.3% on the benchmark corpus). */
static inline bool bpe_bytes_stay(const BpeVocab &v, const unsigned char *p, size_t n) {
    if (!v.concat_ranks) return false;
    for (size_t i = 0; i + 1 < n; i++)
        if (bpe_two_byte_token(v, p + i) != BPE_NO_TOKEN) return false;
    return true;
}

/* One merge of T as the backtracking encoder remembers it (backtrack.h): its rank and
 * the leftmost and rightmost symbols of the sequence after it. */
struct BpeStep {
    uint32_t rank;
    int32_t left, right;
};

/* The flat loop's state: symbols stay at the position of their first byte (no array is
 * ever shifted), linked by ``next``/``prev``; ``rank[i]`` is the rank of the pair a
 * live symbol at i makes with the next one (BPE_NONE: none, or i is no symbol), and
 * ``merged[i]`` what it merges into. Positions only grow left to right, so the lowest
 * rank at the lowest position is the reference's leftmost lowest pair. */
static const int32_t BPE_NONE = 0x7FFFFFFF;  /* above every rank (ranks are below 2^21) */

struct BpeFlat {
    alignas(16) int32_t rank[BPE_SMALL_PIECE + 4];  /* padded to whole 4-lane groups */
    int32_t merged[BPE_SMALL_PIECE];
    int32_t ids[BPE_SMALL_PIECE];
    uint8_t next[BPE_SMALL_PIECE], prev[BPE_SMALL_PIECE];
};

static inline void bpe_flat_set(BpeFlat *f, size_t i, uint64_t r) {
    f->rank[i] = r == BPE_NO_MERGE ? BPE_NONE : (int32_t)(r >> 32);
    f->merged[i] = (int32_t)(r & 0xFFFFFFFFULL);
}

#if defined(__SSE2__)
static inline __m128i bpe_min4(__m128i a, __m128i b) {  /* SSE2 has no 32-bit min */
    __m128i less = _mm_cmplt_epi32(b, a);
    return _mm_or_si128(_mm_and_si128(less, b), _mm_andnot_si128(less, a));
}
#endif

/* The first position holding the lowest rank among rank[0:lanes], or -1 when every one
 * is BPE_NONE. The pass that finds the minimum is the loop's inner step (once per
 * merge), so it runs four ranks at a time where SSE2 is there (every x86-64). */
static inline ptrdiff_t bpe_flat_lowest(const BpeFlat *f, size_t lanes) {
#if defined(__SSE2__)
    __m128i lo = _mm_set1_epi32(BPE_NONE);
    for (size_t i = 0; i < lanes; i += 4) {
        lo = bpe_min4(lo, _mm_load_si128((const __m128i *)(f->rank + i)));
    }
    lo = bpe_min4(lo, _mm_shuffle_epi32(lo, 0x4E));  /* the minimum into every lane */
    lo = bpe_min4(lo, _mm_shuffle_epi32(lo, 0xB1));
    if (_mm_cvtsi128_si32(lo) == BPE_NONE) return -1;
    for (size_t i = 0;; i += 4) {
        int at = _mm_movemask_ps(_mm_castsi128_ps(
            _mm_cmpeq_epi32(_mm_load_si128((const __m128i *)(f->rank + i)), lo)));
        if (at) return (ptrdiff_t)(i + __builtin_ctz((unsigned)at));
    }
#else
    uint64_t lo = (uint64_t)BPE_NONE << 32;
    for (size_t i = 0; i < lanes; i++) {  /* rank << 32 | position: a conditional move */
        uint64_t key = ((uint64_t)(uint32_t)f->rank[i] << 32) | (uint64_t)i;
        lo = key < lo ? key : lo;
    }
    return (lo >> 32) == (uint64_t)BPE_NONE ? -1 : (ptrdiff_t)(lo & 0xFFFFFFFFULL);
#endif
}

/* True when p[0:n] holds a byte from 0xC0 to 0xEF (where a 2- or 3-byte character
 * starts), eight bytes at a time: ASCII pieces and runs of emoji (4-byte characters,
 * never taken whole) keep the plain start. A lane's top bit after the masks is
 * b7 & b6 & ~(b5 & b4) of its byte; shifts bring lower bits of the same byte up, and
 * bits shifted in from the lane below only reach positions the final mask drops. */
static inline bool bpe_has_char_lead(const unsigned char *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & (w << 1) & ~((w << 2) & (w << 3)) & 0x8080808080808080ULL) return true;
    }
    for (; i < n; i++)
        if (p[i] >= 0xC0 && p[i] < 0xF0) return true;
    return false;
}

/* The flat loop's start from whole characters (bpe_chars.h): each character that may
 * enter as its token is one symbol, every other byte its own, and adjacent symbols are
 * ranked. Not for a traced merge: the trace would miss the characters' own merges. */
static inline void bpe_flat_chars(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                  size_t n, BpeFlat *f, size_t lanes) {
    for (size_t k = 0; k < lanes; k++) f->rank[k] = BPE_NONE;
    size_t last = (size_t)-1;
    for (size_t i = 0; i < n;) {
        int32_t id;
        size_t k = p[i] >= 0xC2 ? bpe_char_at(v.chars, p, i, n, &id) : 0;
        if (!k) {
            k = 1;
            id = v.byte_ids[p[i]];
        }
        f->ids[i] = id;
        f->prev[i] = (uint8_t)last;
        if (i) f->next[last] = (uint8_t)i;
        last = i;
        i += k;
    }
    f->next[last] = (uint8_t)n;
    for (size_t a = 0; f->next[a] < n; a = f->next[a]) {
        size_t b = f->next[a], end = f->next[b];
        bpe_flat_set(f, a, end - a == 2 ? bpe_byte_pair(v, ctx, p, a)
                                        : bpe_pair_at(v, ctx, p, f->ids[a], f->ids[b], a, end));
    }
}

/* T(p[0:n]) for n <= BPE_SMALL_PIECE into ids[]; returns how many. With ``trace``, also
 * writes each merge made, in order (at most n - 1); with ``last``, the two ids the last
 * merge joined. */
template <bool Record>
static inline size_t bpe_merge_flat(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                    size_t n, int32_t *ids, BpeStep *trace, int32_t *last) {
    BpeFlat f;
    size_t lanes = (n + 2) & ~(size_t)3;  /* pairs 0..n-2, whole groups of four */
    if (!Record && v.chars.ids && bpe_has_char_lead(p, n)) {
        bpe_flat_chars(v, ctx, p, n, &f, lanes);
    } else {
        for (size_t i = 0; i < n; i++) {
            f.ids[i] = v.byte_ids[p[i]];
            f.next[i] = (uint8_t)(i + 1);
            f.prev[i] = (uint8_t)(i - 1);
        }
        for (size_t i = 0; i + 1 < n; i++) bpe_flat_set(&f, i, bpe_byte_pair(v, ctx, p, i));
        for (size_t i = n - 1; i < lanes; i++) f.rank[i] = BPE_NONE;
    }
    size_t tail = n - 1;  /* the last symbol's position (read only by Record) */
    for (;;) {
        ptrdiff_t at = bpe_flat_lowest(&f, lanes);
        if (at < 0) break;
        size_t b = (size_t)at, right = f.next[b], after = f.next[right];  /* n: none */
        if (Record) {
            if (last) last[0] = f.ids[b], last[1] = f.ids[right];
            if (trace) *trace++ = {(uint32_t)f.rank[b], 0, 0};
        }
        f.ids[b] = f.merged[b];
        f.rank[right] = BPE_NONE;
        f.next[b] = (uint8_t)after;
        if (after < n) {
            f.prev[after] = (uint8_t)b;
            bpe_flat_set(&f, b, bpe_pair_at(v, ctx, p, f.ids[b], f.ids[after], b, f.next[after]));
        } else {
            f.rank[b] = BPE_NONE;
            tail = b;
        }
        if (b > 0) {
            size_t q = f.prev[b];
            bpe_flat_set(&f, q, bpe_pair_at(v, ctx, p, f.ids[q], f.ids[b], q, after));
        }
        if (Record && trace) trace[-1].left = f.ids[0], trace[-1].right = f.ids[tail];
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i = f.next[i]) ids[m++] = f.ids[i];
    return m;
}

static inline size_t bpe_merge_small_into(const BpeVocab &v, PieceCtx *ctx,
                                          const unsigned char *p, size_t n, int32_t *ids,
                                          BpeStep *trace = nullptr, int32_t *last = nullptr) {
    if (n == 0) return 0;
    return trace || last ? bpe_merge_flat<true>(v, ctx, p, n, ids, trace, last)
                         : bpe_merge_flat<false>(v, ctx, p, n, ids, nullptr, nullptr);
}

/* T(p[0:n]) for n <= BPE_SMALL_PIECE, appended to *out. */
static inline void bpe_merge_small(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                   size_t n, std::vector<int32_t> *out) {
    int32_t ids[BPE_SMALL_PIECE];
    size_t m = bpe_merge_small_into(v, ctx, p, n, ids);
    out->insert(out->end(), ids, ids + m);
}

/* T(p[0:n]) for any n, appended to *out: a linked list over symbol slots (a slot is
 * the symbol's first byte position) and a heap of ~(rank << 32 | slot), so that the
 * max-heap primitives pop the lowest rank, then the leftmost slot. Entries made stale
 * by earlier merges are detected by recomputing the pair's rank when popped. */
static inline void bpe_merge_heap(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                  size_t n, std::vector<int32_t> *out, int32_t *last = nullptr) {
    std::vector<int32_t> ids(n), nxt(n), prv(n);
    std::vector<uint64_t> heap;
    auto end_of = [&](int32_t slot) -> size_t { return nxt[slot] >= 0 ? (size_t)nxt[slot] : n; };
    auto push = [&](uint64_t r, size_t slot) {
        heap.push_back(~(((r >> 32) << 32) | (uint64_t)slot));
        std::push_heap(heap.begin(), heap.end());
    };
    for (size_t i = 0; i < n; i++) {
        ids[i] = v.byte_ids[p[i]];
        nxt[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
        prv[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t r = bpe_byte_pair(v, ctx, p, i);
        if (r != BPE_NO_MERGE) push(r, i);
    }
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end());
        uint64_t key = ~heap.back();
        heap.pop_back();
        int32_t pos = (int32_t)(key & 0xFFFFFFFFULL);
        if (ids[pos] < 0 || nxt[pos] < 0) continue;
        int32_t right = nxt[pos];
        uint64_t r = bpe_pair_at(v, ctx, p, ids[pos], ids[right], pos, end_of(right));
        if (r == BPE_NO_MERGE || (r >> 32) != (key >> 32)) continue;
        if (last) last[0] = ids[pos], last[1] = ids[right];
        ids[pos] = (int32_t)(r & 0xFFFFFFFFULL);
        ids[right] = -1;
        nxt[pos] = nxt[right];
        if (nxt[right] >= 0) prv[nxt[right]] = pos;
        int32_t left = prv[pos];
        if (left >= 0) {
            r = bpe_pair_at(v, ctx, p, ids[left], ids[pos], left, end_of(pos));
            if (r != BPE_NO_MERGE) push(r, left);
        }
        if (nxt[pos] >= 0) {
            r = bpe_pair_at(v, ctx, p, ids[pos], ids[nxt[pos]], pos, end_of(nxt[pos]));
            if (r != BPE_NO_MERGE) push(r, pos);
        }
    }
    for (int32_t pos = 0; pos >= 0; pos = nxt[pos]) out->push_back(ids[pos]);
}

/* T(p[0:n]) by the flat or the heap loop (no backtracking): the oracle the
 * backtracking encoder asks about single tokens and pairs. */
static inline void bpe_merge_plain(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                   size_t n, std::vector<int32_t> *out) {
    if (n <= BPE_SMALL_PIECE)
        bpe_merge_small(v, ctx, p, n, out);
    else
        bpe_merge_heap(v, ctx, p, n, out);
}

#endif
