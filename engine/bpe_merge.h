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
 * - ``merge_small`` (up to 48 bytes, nearly every piece): a flat array and a linear
 *   minimum scan; fewer than ~48 symbols fit in cache lines and beat any heap.
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

#include "bpe_tables.h"
#include "pair_cache.h"

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
    int32_t byte_ids[256];
    bool concat_ranks;
    uint64_t pair_owner;          /* this model's serial in the per-thread pair cache */
};

/* One per encode call on one thread: that thread's pair cache, looked up once
 * (thread_local access is a function call in a loaded module), and the piece cache's
 * statistics, added to the shared counters once at the end. */
struct PieceCtx {
    pair_cache::Entry *pairs;
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

/* Concatenated ranks: true when the bytes q[0:n] (n <= BPE_FILTER_FIRST) are surely no
 * token, so the pair covering them never merges. Asked of the dense byte-pair table (2
 * bytes) or the token filter (which has no false "absent"): both are 256 KiB and mostly
 * in L2, where the pair cache's 512 KiB of random keys is not, and answers that never
 * enter the pair cache leave it to the pairs that do merge (random letters ran markedly
 * faster: benchmarks/README.md, "Why the engine is shaped like this"). */
static inline bool bpe_surely_no_token(const BpeVocab &v, const unsigned char *q, size_t n) {
    return n == 2 ? v.byte_pairs[((uint32_t)q[0] << 8) | q[1]] == 0xFFFFFFFFu
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
 * A function of the two ids alone, so it goes through the per-thread pair cache, after
 * the filters for short concatenated pairs (bpe_surely_no_token). */
static inline uint64_t bpe_pair_at(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p,
                                   int32_t a, int32_t b, size_t start, size_t end) {
    uint64_t r;
    size_t n = end - start;
    if (v.concat_ranks && n <= BPE_FILTER_FIRST && bpe_surely_no_token(v, p + start, n))
        return BPE_NO_MERGE;
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
        uint32_t tid = v.byte_pairs[((uint32_t)p[i] << 8) | p[i + 1]];
        return tid == 0xFFFFFFFFu ? BPE_NO_MERGE : ((uint64_t)tid << 32) | tid;
    }
    return bpe_pair_at(v, ctx, p, v.byte_ids[p[i]], v.byte_ids[p[i + 1]], i, i + 2);
}

/* One merge of T as the backtracking encoder remembers it (backtrack.h): its rank and
 * the leftmost and rightmost symbols of the sequence after it. */
struct BpeStep {
    uint32_t rank;
    int32_t left, right;
};

/* T(p[0:n]) for n <= BPE_SMALL_PIECE into ids[]; returns how many. With ``trace``, also
 * writes each merge made, in order (at most n - 1); with ``last``, the two ids the last
 * merge joined. */
static inline size_t bpe_merge_small_into(const BpeVocab &v, PieceCtx *ctx,
                                          const unsigned char *p, size_t n, int32_t *ids,
                                          BpeStep *trace = nullptr, int32_t *last = nullptr) {
    size_t st[BPE_SMALL_PIECE + 1];
    uint64_t ranks[BPE_SMALL_PIECE];
    size_t m = n;
    for (size_t i = 0; i < n; i++) {
        ids[i] = v.byte_ids[p[i]];
        st[i] = i;
    }
    st[n] = n;
    for (size_t i = 0; i + 1 < n; i++) ranks[i] = bpe_byte_pair(v, ctx, p, i);
    while (m > 1) {
        /* Lowest rank, leftmost on ties: the minimum of rank << 32 | position, a
         * comparison the compiler turns into a conditional move (a branch per rank
         * was slower on text in other scripts). */
        uint64_t lo = BPE_NO_MERGE;
        for (size_t i = 0; i + 1 < m; i++) {
            uint64_t key = (ranks[i] & 0xFFFFFFFF00000000ULL) | (uint64_t)i;
            lo = key < lo ? key : lo;
        }
        if ((lo >> 32) == 0xFFFFFFFFULL) break;
        size_t best = (size_t)(lo & 0xFFFFFFFFULL);
        if (last) last[0] = ids[best], last[1] = ids[best + 1];
        ids[best] = (int32_t)(ranks[best] & 0xFFFFFFFFULL);
        for (size_t i = best + 1; i + 1 < m; i++) {
            ids[i] = ids[i + 1];
            ranks[i] = ranks[i + 1];
        }
        for (size_t i = best + 1; i < m; i++) st[i] = st[i + 1];
        m--;
        if (best + 1 < m)
            ranks[best] = bpe_pair_at(v, ctx, p, ids[best], ids[best + 1], st[best], st[best + 2]);
        if (best > 0)
            ranks[best - 1] = bpe_pair_at(v, ctx, p, ids[best - 1], ids[best], st[best - 1],
                                          st[best + 1]);
        if (trace) *trace++ = {(uint32_t)(lo >> 32), ids[0], ids[m - 1]};
    }
    return m;
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
