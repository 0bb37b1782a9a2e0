/* backtrack.h: long pieces in O(n) token steps, exactly as the merge loop would merge them.
 *
 * Why: merging is one step per byte. A megabyte of one letter, of spaces or of random
 * letters is one pre-tokenizer piece, and a merge loop (even with a heap) is tens of
 * times slower on it than a token-at-a-time encoder (benchmarks/README.md, "Hostile
 * input"). Requests on the billing path can be padded that way, so the long-piece path
 * takes one step per TOKEN.
 *
 * The facts it rests on (stated and proved for the rank rule in GitHub's rust-gems
 * ``bpe`` crate; they use only that the merge loop is deterministic, takes the lowest
 * rank leftmost, and that whether two adjacent symbols merge depends on those two alone,
 * so they hold for merges lists too). Write T(s) for the merge loop's ids of bytes s,
 * and call a sequence of tokens *valid* when it is T of its own bytes:
 *
 * 1. Any contiguous run of tokens of T(s) is valid (no merge of T(s) crossed its edges,
 *    so the merges inside it are the ones T makes on its bytes alone).
 * 2. Hence T(s) is the only valid sequence for s, and when k is one of its token
 *    boundaries, T(s[0:k]) is the first tokens of T(s).
 * 3. A sequence is valid if and only if its first token t is (T(bytes t) == [t]) and
 *    every pair of neighbours is (T(bytes a + bytes b) == [a, b]).
 *
 * So T(s) is found by a depth-first search that checks only neighbours: at ``pos`` take
 * the longest token the text continues with, keep it if the pair it makes with the last
 * token is valid, else try the next shorter token that is a prefix of it; when none
 * fits, ``pos`` is no token boundary of T(s) (fact 2: the sequence that reached it is
 * the only one that can), so it is marked dead and the last token gives way to its next
 * shorter prefix. Every position dies at most once and is left at most once per
 * candidate length, so the search is linear in n for a given vocabulary.
 *
 * The questions are answered by T itself, never by a second statement of the rule:
 * each token's own merge run is traced once (its ranks in order, and the symbols at its
 * two edges after each merge), and a pair is valid when, replaying the two traces
 * interleaved by rank, the pair across the middle never wins (``apart``). Answers are
 * kept: per token in one 64-byte record (filled on first use, shared by threads), per
 * pair of tokens in a per-thread direct-mapped table (pair_cache.h). On repeated text
 * a step is a lookup; on random letters it is a few loads and a replay of two short
 * traces, markedly cheaper than merging the pair's bytes again.
 */
#ifndef TOKSERVE_BACKTRACK_H
#define TOKSERVE_BACKTRACK_H

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bpe_merge.h"

class BacktrackMemo {
public:
    static const unsigned FILTER_BITS = BT_PREFIX_BITS;  /* o200k_base sets 10% of it */
    static const unsigned TOKEN_BITS = BT_TOKEN_BITS;    /* o200k_base sets 9% of it */

    BacktrackMemo() = default;
    BacktrackMemo(const BacktrackMemo &) = delete;
    BacktrackMemo &operator=(const BacktrackMemo &) = delete;
    ~BacktrackMemo() { release(); }

    static const size_t FILTER_WORDS = (1u << FILTER_BITS) / 64;
    static const size_t TOKEN_WORDS = (1u << TOKEN_BITS) / 64;

    /* Build side (bpe_image.h): the two filters, from every token the merge loop can
     * produce (mergeable[id] != 0), into zeroed ``prefixes`` and ``tokens``. */
    static void fill_filters(const unsigned char *arena, const uint32_t *start,
                             const uint32_t *len, const uint8_t *mergeable, size_t n_ids,
                             uint64_t *prefixes, uint64_t *tokens) {
        for (size_t id = 0; id < n_ids; id++) {
            if (!mergeable[id] || len[id] < 3) continue;
            const unsigned char *t = arena + start[id];
            uint64_t h = step(step(SEED, t[0]), t[1]);
            for (size_t k = 2; k < len[id]; k++) {
                h = step(h, t[k]);
                set(prefixes, slot(h, FILTER_BITS));
            }
            set(tokens, slot(h, TOKEN_BITS));
        }
    }

    /* Not concurrent with encode: called when the model is attached to its image. */
    void init(const uint64_t *prefixes, const uint64_t *tokens, size_t n_ids, size_t max_len) {
        release();
        /* calloc: zero pages, so only the records of tokens met take memory */
        info_ = (Info *)calloc(n_ids, sizeof(Info));
        n_ids_ = info_ ? n_ids : 0;
        max_len_ = max_len;
        filter_ = prefixes;
        tokens_ = tokens;
    }

    bool ready() const { return info_ != nullptr; }

    /* T(p[0:n]) into *out (appended). */
    void encode(const BpeVocab &v, PieceCtx *ctx, const unsigned char *p, size_t n,
                std::vector<int32_t> *out) {
        const size_t base = out->size();
        std::vector<uint64_t> dead(n / 64 + 1, 0);
        pair_cache::Entry *valid = pc_valid_table();
        size_t pos = 0;
        int32_t cand = longest(v, p, n);
        /* The longest token at pos depends only on the next ``limit`` bytes: on
         * repeated text they equal those at one of the last few positions looked up,
         * and a compare replaces the lookups. */
        struct Seen { size_t pos, lim; int32_t tok; } seen[MEMO];
        for (unsigned i = 0; i < MEMO; i++) seen[i] = {0, limit(v, p, n), cand};
        unsigned next_seen = 0;
        while (pos < n) {
            for (;;) {
                const Info &c = info(v, ctx, cand);
                if (c.prefix >= 0) __builtin_prefetch(&info_[c.prefix]);  /* often next */
                size_t end = pos + c.len;
                bool ok = !(dead[end >> 6] >> (end & 63) & 1) && c.result == cand;
                if (ok && out->size() > base) {
                    int32_t last = out->back();
                    const Info &l = info_[last];  /* filled when it was a candidate */
                    ok = pair(v, ctx, valid, last, l, cand, c, p + pos - l.len);
                }
                if (ok) {
                    out->push_back(cand);
                    pos = end;
                    if (pos < n) {
                        size_t lim = limit(v, p + pos, n - pos);
                        unsigned i = 0;
                        while (i < MEMO && !(seen[i].lim == lim &&
                                             memcmp(p + pos, p + seen[i].pos, lim) == 0))
                            i++;
                        if (i < MEMO) {
                            cand = seen[i].tok;
                        } else {
                            cand = longest(v, p + pos, n - pos);
                            seen[next_seen] = {pos, lim, cand};
                            next_seen = (next_seen + 1) % MEMO;
                        }
                    }
                    break;
                }
                if (c.prefix >= 0) {
                    cand = c.prefix;
                    continue;
                }
                /* Nothing fits at pos: it is no boundary of T. Retry the last token's
                 * shorter prefixes (it fails the dead check at once). */
                dead[pos >> 6] |= 1ULL << (pos & 63);
                if (out->size() == base) {  /* cannot happen (T exists); stay exact */
                    out->resize(base);
                    bpe_merge_plain(v, ctx, p, n, out);
                    return;
                }
                cand = out->back();
                out->pop_back();
                pos -= info_[cand].len;
                break;
            }
        }
    }

private:
    static const unsigned MEMO = 4;
    static const unsigned INLINE_STEPS = 3;
    static const uint32_t UNTRACED = 0xFFFFFFFFu;
    enum : uint32_t { EMPTY = 0, WRITING = 1, FILLED = 2 };

    /* What the search needs of one token, in one cache line: its length, the next
     * shorter token that is a prefix of it (or -1), ``result`` (the token itself when
     * T(bytes t) == [t], else -1) and T's merges on its bytes in order, the edge symbols
     * after each (``steps`` of them; UNTRACED for tokens longer than the flat loop). */
    struct alignas(64) Info {
        std::atomic<uint32_t> state;
        uint32_t len;
        int32_t prefix;
        int32_t result;
        uint32_t steps;
        BpeStep inline_steps[INLINE_STEPS];
        BpeStep *more;  /* the steps when there are more than INLINE_STEPS */

        const BpeStep *trace() const { return steps <= INLINE_STEPS ? inline_steps : more; }
    };

    /* Token t's record, filled on first use by one thread; another thread that asks
     * meanwhile waits for it (one short merge). */
    const Info &info(const BpeVocab &v, PieceCtx *ctx, int32_t t) {
        Info &rec = info_[t];
        uint32_t state = rec.state.load(std::memory_order_acquire);
        if (state == FILLED) return rec;
        if (state == EMPTY &&
            rec.state.compare_exchange_strong(state, WRITING, std::memory_order_acquire)) {
            fill(v, ctx, t, &rec);
            rec.state.store(FILLED, std::memory_order_release);
            return rec;
        }
        while (rec.state.load(std::memory_order_acquire) != FILLED) std::this_thread::yield();
        return rec;
    }

    void fill(const BpeVocab &v, PieceCtx *ctx, int32_t t, Info *rec) {
        size_t n = v.tok_len[t];
        const unsigned char *p = v.arena + v.tok_start[t];
        rec->len = (uint32_t)n;
        rec->prefix = n < 2 ? -1 : longest(v, p, n - 1);
        rec->more = nullptr;
        if (n <= BPE_SMALL_PIECE) {
            int32_t ids[BPE_SMALL_PIECE];
            BpeStep steps[BPE_SMALL_PIECE];
            size_t m = bpe_merge_small_into(v, ctx, p, n, ids, steps);
            size_t count = n - m;
            rec->result = m == 1 && ids[0] == t ? t : -1;
            rec->steps = (uint32_t)count;
            if (count > INLINE_STEPS) {
                rec->more = (BpeStep *)malloc(count * sizeof(BpeStep));
                if (!rec->more) {
                    rec->steps = UNTRACED;
                    return;
                }
            }
            memcpy(rec->steps <= INLINE_STEPS ? rec->inline_steps : rec->more, steps,
                   count * sizeof(BpeStep));
        } else {
            std::vector<int32_t> ids;
            bpe_merge_heap(v, ctx, p, n, &ids);
            rec->result = ids.size() == 1 && ids[0] == t ? t : -1;
            rec->steps = UNTRACED;
        }
    }

    /* T(bytes a + bytes b) == [a, b], p holding those bytes; a and b are tokens T gives
     * their own bytes (a from the valid sequence, b checked by the caller). */
    bool pair(const BpeVocab &v, PieceCtx *ctx, pair_cache::Entry *valid, int32_t a,
              const Info &ia, int32_t b, const Info &ib, const unsigned char *p) {
        uint64_t known;
        if (pc_get(valid, v.pair_owner, a, b, &known, pair_cache::VALID_BITS)) return known != 0;
        bool ok;
        if (ia.steps == UNTRACED || ib.steps == UNTRACED) {
            std::vector<int32_t> out;
            bpe_merge_plain(v, ctx, p, ia.len + ib.len, &out);
            ok = out.size() == 2 && out[0] == a && out[1] == b;
        } else {
            ok = apart(v, ctx, ia, ib, p);
        }
        pc_put(valid, v.pair_owner, a, b, ok ? 1 : 0, pair_cache::VALID_BITS);
        return ok;
    }

    /* On a's bytes followed by b's, T makes a's merges and b's merges, interleaved by
     * rank (a's first on a tie: they lie further left), until the pair across the
     * middle, a's current rightmost symbol x and b's leftmost y, is the lowest: it wins
     * over a's next merge only with a strictly lower rank, over b's next with a lower or
     * equal one. The two stay apart exactly when that never happens, up to and
     * including x = a, y = b with nothing left to merge. */
    static bool apart(const BpeVocab &v, PieceCtx *ctx, const Info &ia, const Info &ib,
                      const unsigned char *p) {
        const uint64_t NONE = 1ULL << 33;
        const BpeStep *sa = ia.trace(), *sb = ib.trace();
        const unsigned char *mid = p + ia.len;
        int32_t x = v.byte_ids[mid[-1]], y = v.byte_ids[mid[0]];
        uint64_t cross = bpe_byte_pair(v, ctx, mid - 1, 0);
        uint32_t i = 0, j = 0;
        for (;;) {
            uint64_t left = i < ia.steps ? sa[i].rank : NONE;
            uint64_t right = j < ib.steps ? sb[j].rank : NONE;
            if (cross != BPE_NO_MERGE && (cross >> 32) < left && (cross >> 32) <= right)
                return false;
            if (left == NONE && right == NONE) return true;
            if (left <= right) {
                int32_t nx = sa[i++].right;
                if (nx == x) continue;
                x = nx;
            } else {
                int32_t ny = sb[j++].left;
                if (ny == y) continue;
                y = ny;
            }
            cross = bpe_pair_across(v, ctx, mid, x, y);
        }
    }

    /* Bytes the longest-token lookup at p reads (1 <= limit <= n): the longest
     * mergeable token that starts with p's first two bytes, at least its first byte. */
    size_t limit(const BpeVocab &v, const unsigned char *p, size_t n) const {
        if (n < 2) return n;
        size_t lim = v.longest_from[((size_t)p[0] << 8) | p[1]];
        if (lim == 0xFFFF) lim = max_len_;
        if (lim < 1) lim = 1;
        return lim < n ? lim : n;
    }

    /* The longest mergeable token that p[0:n] starts with (a single byte at least).
     * The prefix filter (one bit per hash of every prefix of 3 bytes or more of every
     * token) ends the walk at the first length no token starts with; lookups go down
     * from there. A false "present" only costs a lookup. */
    int32_t longest(const BpeVocab &v, const unsigned char *p, size_t n) const {
        size_t lim = limit(v, p, n), top = lim < 2 ? lim : 2;
        if (lim >= 3) {
            uint64_t h = step(step(SEED, p[0]), p[1]);
            for (size_t k = 3; k <= lim; k++) {
                h = step(h, p[k - 1]);
                if (!has(filter_, slot(h, FILTER_BITS))) break;
                top = k;
            }
        }
        for (size_t k = top; k >= 3; k--) {
            int32_t id = bt_bytes_get(v.encoder, p, k);
            if (id >= 0) return id;
        }
        if (top >= 2) {
            int32_t id = v.byte_pairs ? (int32_t)bpe_two_byte_token(v, p)
                                      : bt_bytes_get(v.encoder, p, 2);
            if (id >= 0) return id;
        }
        return v.byte_ids[p[0]];
    }

    static const uint64_t SEED = BT_FILTER_SEED;
    static uint64_t step(uint64_t h, unsigned char b) { return bt_filter_step(h, b); }
    static uint64_t slot(uint64_t h, unsigned bits) { return bt_filter_bit(h, bits); }
    static void set(uint64_t *f, uint64_t bit) { f[bit >> 6] |= 1ULL << (bit & 63); }
    static bool has(const uint64_t *f, uint64_t bit) { return f[bit >> 6] >> (bit & 63) & 1; }

    void release() {
        for (size_t i = 0; i < n_ids_; i++)
            if (info_[i].state.load(std::memory_order_relaxed) == FILLED &&
                info_[i].steps != UNTRACED && info_[i].steps > INLINE_STEPS)
                free(info_[i].more);
        free(info_);
        info_ = nullptr;
        n_ids_ = 0;
    }

    Info *info_ = nullptr;
    size_t n_ids_ = 0;
    size_t max_len_ = 0;
    const uint64_t *filter_ = nullptr;  /* prefixes of tokens (in the image) */
    const uint64_t *tokens_ = nullptr;  /* tokens themselves (in the image) */
};

#endif
