/* piece_bpe_word.h: one chunk of text -> its symbols -> merged symbols, exactly as
 * tokenizers 0.23's BPE::merge_word and Word::merge_all (models/bpe/{model,word}.rs).
 *
 * First symbols (``first_symbols``), per character, in this order:
 *   1. the character is a piece: its id (any pending unknown symbol is emitted first);
 *   2. byte_fallback and every byte's "<0xNN>" is a piece: one symbol per byte, each of
 *      length 1 (a pending unknown symbol is NOT emitted first: it stays pending and
 *      lands after these bytes, as in tokenizers);
 *   3. an unk_token: an unknown symbol, pending until the next case-1 character or the
 *      end; with fuse_unk consecutive ones grow one symbol, else the previous is emitted;
 *   4. otherwise the character is dropped (no symbol, no length: later offsets shift).
 * A symbol's ``len`` is the bytes of text it covers; offsets are running sums of them.
 *
 * Merging (tokenizers' algorithm): a min-heap of (rank, position) entries, one per
 * adjacent pair that has a merge; a popped entry is skipped when its left symbol was
 * absorbed, has no right neighbour, or the pair there now makes a different id; after a
 * merge the new pairs with both neighbours are pushed. That is O(n log n) for any n
 * (``merge_heap``, used for long chunks: a 10^6-character word with no spaces).
 *
 * For short chunks ``merge_short`` scans for the lowest (rank, position) pair instead.
 * It gives the same result when every id names one non-empty piece (Vocab::plain):
 * then a symbol's piece is the concatenation of the pieces it covers, a pair's span
 * only grows while its left symbol lives, so a stale heap entry (same position, longer
 * span) always names a longer piece, hence a different id, and is skipped; the heap
 * thus always pops the lowest (rank, position) among the current pairs, which is what
 * the scan picks (positions keep their order, so the lowest is the leftmost).
 */
#ifndef TOKSERVE_PIECE_BPE_WORD_H
#define TOKSERVE_PIECE_BPE_WORD_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>
#if defined(__SSE2__) && !defined(PIECE_BPE_NO_SIMD)
#include <emmintrin.h>
#endif

#include "piece_bpe_merges.h"
#include "piece_bpe_vocab.h"

namespace piece_bpe {

struct Symbol {
    int32_t id;
    uint32_t len;
};

/* What makes a chunk's first symbols. unk_id: -1 no unk_token, -2 an unk_token that is
 * not a piece (an error when a character needs it, as in tokenizers). */
struct SymbolRules {
    const Vocab *vocab = nullptr;
    int32_t byte_ids[256];
    bool byte_fallback = false;
    bool fuse_unk = false;
    int32_t unk_id = -1;
    /* Cuts (first_symbols' ``cuts``; piece_bpe_model.h says why they are exact): the
     * merges' character pairs (nullptr: no cuts); whether a character can become an
     * unknown symbol (then a cut is only made before a character that is a piece, which
     * emits a pending unknown symbol first, and the symbol before the cut may be one);
     * the unk_token's last character. */
    const CharPairs *pairs = nullptr;
    bool unk_possible = false;
    int32_t unk_last = -1;
};

enum { PB_OK = 0, PB_UNK_MISSING = 1 };

/* Where first_symbols may cut a chunk: a part starts at symbol ``sym`` and byte ``at``. */
struct Cut {
    uint32_t sym, at;
};

/* Writes the first symbols of p[0:n] to out (room for n: a symbol covers at least one
 * byte) and their number to *count; PB_UNK_MISSING when a character needs an
 * unk_token that is not a piece. With cuts (room for n) and r.pairs, also the places
 * where no merge can join the symbols on either side, and their number to *n_cuts. */
static inline int first_symbols(const SymbolRules &r, const unsigned char *p, size_t n,
                                Symbol *out, size_t *count, Cut *cuts = nullptr,
                                size_t *n_cuts = nullptr) {
    int32_t unk = -1;  /* the pending unknown symbol's id (-1: none) and its length */
    uint32_t unk_len = 0;
    size_t i = 0, k = 0, c = 0;
    const CharPairs *pairs = cuts ? r.pairs : nullptr;
    int32_t last = -1;       /* the last character of the symbol before this character */
    bool maybe_unk = false;  /* ... or, when it is not a piece, perhaps the unk_token's */
    while (i < n) {
        int32_t cp;
        size_t len = utf8_char(p + i, n - i, &cp);
        int32_t id = r.vocab->find_char(p + i, len, cp);
        if (id >= 0) {
            if (unk >= 0) {
                out[k++] = Symbol{unk, unk_len};
                unk = -1;
            }
            if (pairs && i > 0 && !pairs->joins(last, cp) &&
                !(maybe_unk && pairs->joins(r.unk_last, cp)))
                cuts[c++] = Cut{(uint32_t)k, (uint32_t)i};
            out[k++] = Symbol{id, (uint32_t)len};
            last = cp;
            maybe_unk = false;
        } else {
            bool bytes = r.byte_fallback;
            for (size_t j = 0; bytes && j < len; j++) bytes = r.byte_ids[p[i + j]] >= 0;
            if (bytes) {
                if (pairs && i > 0 && !r.unk_possible && !pairs->joins(last, '<'))
                    cuts[c++] = Cut{(uint32_t)k, (uint32_t)i};  /* "<0xNN>" starts with "<" */
                for (size_t j = 0; j < len; j++) out[k++] = Symbol{r.byte_ids[p[i + j]], 1};
                last = '>';
                maybe_unk = r.unk_possible;
            } else if (r.unk_id != -1) {
                if (r.unk_id < 0) return PB_UNK_MISSING;
                if (unk >= 0 && r.fuse_unk) {
                    unk_len += (uint32_t)len;
                } else {
                    if (unk >= 0) out[k++] = Symbol{unk, unk_len};
                    unk = r.unk_id;
                    unk_len = (uint32_t)len;
                }
                last = r.unk_last;
                maybe_unk = false;
            } else {
                last = -1;  /* dropped (cuts are off then): nothing is proved */
            }
        }
        i += len;
    }
    if (unk >= 0) out[k++] = Symbol{unk, unk_len};
    *count = k;
    if (n_cuts) *n_cuts = c;
    return PB_OK;
}

/* The index of the first lowest of rank[0:m] (m > 0, padded with NO_RANK to a multiple
 * of 4) and that rank. The merge loop's scan: with SSE2 four ranks per step, compared
 * as signed 32-bit numbers (ranks are below 2^31 - 1, NO_RANK is the largest). */
static constexpr int32_t NO_RANK = 0x7FFFFFFF;

#if defined(__SSE2__) && !defined(PIECE_BPE_NO_SIMD)
static inline size_t lowest_rank(const int32_t *rank, size_t m, int32_t *low) {
    __m128i best = _mm_set1_epi32(NO_RANK);
    for (size_t i = 0; i < m; i += 4) {
        __m128i v = _mm_loadu_si128((const __m128i *)(rank + i));
        __m128i lt = _mm_cmplt_epi32(v, best);
        best = _mm_or_si128(_mm_and_si128(lt, v), _mm_andnot_si128(lt, best));
    }
    __m128i other = _mm_shuffle_epi32(best, _MM_SHUFFLE(1, 0, 3, 2));
    __m128i lt = _mm_cmplt_epi32(other, best);
    best = _mm_or_si128(_mm_and_si128(lt, other), _mm_andnot_si128(lt, best));
    other = _mm_shuffle_epi32(best, _MM_SHUFFLE(2, 3, 0, 1));
    lt = _mm_cmplt_epi32(other, best);
    best = _mm_or_si128(_mm_and_si128(lt, other), _mm_andnot_si128(lt, best));
    *low = _mm_cvtsi128_si32(best);
    for (size_t i = 0;; i += 4) {
        __m128i eq = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(rank + i)), best);
        int mask = _mm_movemask_ps(_mm_castsi128_ps(eq));
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
}
#else
static inline size_t lowest_rank(const int32_t *rank, size_t m, int32_t *low) {
    size_t best = 0;
    int32_t lowest = rank[0];
    for (size_t i = 1; i < m; i++) {  /* strict: the leftmost */
        bool lower = rank[i] < lowest;
        lowest = lower ? rank[i] : lowest;
        best = lower ? i : best;
    }
    *low = lowest;
    return best;
}
#endif

/* Short chunks (see above: only when Vocab::plain). s[0:*n] (n <= SHORT_MAX) is merged
 * in place. Symbols stay where they are (a merged-away one is unlinked), so a pair is
 * known by its left symbol's first position and the leftmost lowest rank is the lowest
 * index; rank[i] is the rank of the pair (i, next[i]), NO_RANK for none or a symbol
 * gone, and made[i] the id it makes. */
static inline void merge_short(const Merges &m, Symbol *s, size_t *n) {
    size_t len = *n;
    if (len < 2) return;
    alignas(16) int32_t rank[64 + 4];
    uint32_t made[64];
    uint8_t next[64], prev[64];
    size_t pairs = len - 1;
    for (size_t i = 0; i < pairs; i++) {
        uint64_t r = m.find((uint32_t)s[i].id, (uint32_t)s[i + 1].id);
        rank[i] = r == Merges::NONE ? NO_RANK : (int32_t)(r >> 32);
        made[i] = (uint32_t)r;
        next[i] = (uint8_t)(i + 1);
        prev[i + 1] = (uint8_t)i;
    }
    size_t padded = (pairs + 3) & ~(size_t)3;
    for (size_t i = pairs; i < padded; i++) rank[i] = NO_RANK;
    const uint8_t END = (uint8_t)len;  /* next[] of the last symbol */
    next[len - 1] = END;
    for (size_t left = len;;) {
        int32_t low;
        size_t best = lowest_rank(rank, padded, &low);
        if (low == NO_RANK) break;
        size_t right = next[best];
        s[best].id = (int32_t)made[best];
        s[best].len += s[right].len;
        s[right].len = 0;
        rank[right] = NO_RANK;
        size_t after = next[right];
        next[best] = (uint8_t)after;
        if (after != END) {
            prev[after] = (uint8_t)best;
            uint64_t r = m.find((uint32_t)s[best].id, (uint32_t)s[after].id);
            rank[best] = r == Merges::NONE ? NO_RANK : (int32_t)(r >> 32);
            made[best] = (uint32_t)r;
        } else {
            rank[best] = NO_RANK;
        }
        if (best > 0) {  /* the first symbol never goes, so best > 0 has a live prev */
            size_t before = prev[best];
            uint64_t r = m.find((uint32_t)s[before].id, (uint32_t)s[best].id);
            rank[before] = r == Merges::NONE ? NO_RANK : (int32_t)(r >> 32);
            made[before] = (uint32_t)r;
        }
        if (--left < 2) break;
    }
    size_t k = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i].len != 0) s[k++] = s[i];
    *n = k;
}

/* The most symbols merge_short takes. */
static constexpr size_t SHORT_MAX = 64;

/* A 4-ary min-heap of 64-bit entries (rank << 32 | position): half the levels of a
 * binary heap, and a node's children share a cache line, which is what a 10^6-symbol
 * chunk's heap (megabytes) spends its time on. Entries are unique or identical (a
 * position has one pair), so any correct heap pops the same sequence. */
class Heap4 {
public:
    void clear() { v_.clear(); }
    bool empty() const { return v_.empty(); }
    uint64_t top() const { return v_[0]; }
    size_t size() const { return v_.size(); }
    /* The k-th entry in heap order (1..4: the candidates for the next top). */
    uint64_t at(size_t k) const { return v_[k]; }
    void add(uint64_t x) { v_.push_back(x); }  /* then heapify() */

    void heapify() {
        size_t n = v_.size();
        if (n < 2) return;
        for (size_t i = (n - 2) / 4 + 1; i-- > 0;) down(i, v_[i]);
    }
    void push(uint64_t x) {
        size_t i = v_.size();
        v_.push_back(x);
        while (i > 0) {
            size_t parent = (i - 1) / 4;
            if (v_[parent] <= x) break;
            v_[i] = v_[parent];
            i = parent;
        }
        v_[i] = x;
    }
    void pop() {
        uint64_t last = v_.back();
        v_.pop_back();
        if (!v_.empty()) down(0, last);
    }
    /* pop() then push(x), in one pass down. */
    void replace_top(uint64_t x) { down(0, x); }

private:
    /* Places x in the hole at i, moving smaller children up. */
    void down(size_t i, uint64_t x) {
        size_t n = v_.size();
        for (;;) {
            size_t c = 4 * i + 1;
            if (c >= n) break;
            size_t end = c + 4 < n ? c + 4 : n, best = c;
            for (size_t k = c + 1; k < end; k++)
                if (v_[k] < v_[best]) best = k;
            if (v_[best] >= x) break;
            v_[i] = v_[best];
            i = best;
        }
        v_[i] = x;
    }

    std::vector<uint64_t> v_;
};

/* Reusable memory of merge_heap. */
struct HeapScratch {
    struct Node {  /* a symbol and its neighbours, in one 16-byte line share */
        int32_t id;
        uint32_t len;
        int32_t prev, next;  /* -1: none (a chunk has < 2^31 symbols) */
    };
    std::vector<Node> nodes;
    Heap4 heap;
};

/* Any chunk: tokenizers' algorithm, step for step. s[0:*count] is merged in place
 * (compacted; *count becomes the number left). A popped entry's first new pair takes
 * the top's place (replace_top) instead of a pop and a push.
 *
 * The stale-entry check is tokenizers': the pair now at the entry's position must make
 * the entry's merged id. With a plain vocabulary (see above) that is the same as the
 * pair now there having the entry's rank (a rank names one pair and one id; a stale
 * entry's position now holds a longer pair, making a longer piece, so another id),
 * which saves reading the rank's id from a table of megabytes on every pop. */
static inline void merge_heap(const Merges &m, bool plain, Symbol *s, size_t *count,
                              HeapScratch *w) {
    size_t n = *count;
    if (n < 2) return;
    w->nodes.resize(n);
    HeapScratch::Node *node = w->nodes.data();
    for (size_t i = 0; i < n; i++)
        node[i] = HeapScratch::Node{s[i].id, s[i].len, (int32_t)i - 1,
                                    i + 1 < n ? (int32_t)i + 1 : -1};
    Heap4 &heap = w->heap;
    heap.clear();
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t r = m.find((uint32_t)s[i].id, (uint32_t)s[i + 1].id);
        if (r != Merges::NONE) heap.add((r & 0xFFFFFFFF00000000ULL) | i);
    }
    heap.heapify();
    while (!heap.empty()) {
        uint64_t top = heap.top();
        size_t pos = (size_t)(top & 0xFFFFFFFFu);
        /* The next top is one of the root's children (or a pair made here, whose node
         * is this one's neighbour): request their nodes now, so that the random reads
         * of a long chunk's pops overlap instead of following each other. */
        for (size_t k = 1, end = heap.size() < 5 ? heap.size() : 5; k < end; k++)
            __builtin_prefetch(&node[heap.at(k) & 0xFFFFFFFFu]);
        HeapScratch::Node &left = node[pos];
        if (left.len == 0 || left.next == -1) {
            heap.pop();
            continue;
        }
        HeapScratch::Node &right = node[left.next];
        uint64_t now = m.find((uint32_t)left.id, (uint32_t)right.id);
        bool stale = now == Merges::NONE ||
                     (plain ? (now >> 32) != (top >> 32)
                            : (uint32_t)now != m.merged((uint32_t)(top >> 32)));
        if (stale) {
            heap.pop();
            continue;
        }
        uint32_t new_id = (uint32_t)now;
        left.id = (int32_t)new_id;
        left.len += right.len;
        right.len = 0;
        int32_t after = right.next, before = left.prev;
        left.next = after;
        if (after >= 0) node[after].prev = (int32_t)pos;
        bool popped = false;
        if (before >= 0) {
            uint64_t r = m.find((uint32_t)node[before].id, new_id);
            if (r != Merges::NONE) {
                heap.replace_top((r & 0xFFFFFFFF00000000ULL) | (uint64_t)before);
                popped = true;
            }
        }
        if (after >= 0) {
            uint64_t r = m.find(new_id, (uint32_t)node[after].id);
            if (r != Merges::NONE) {
                uint64_t e = (r & 0xFFFFFFFF00000000ULL) | pos;
                if (popped) {
                    heap.push(e);
                } else {
                    heap.replace_top(e);
                    popped = true;
                }
            }
        }
        if (!popped) heap.pop();
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (node[i].len != 0) s[k++] = Symbol{node[i].id, node[i].len};
    *count = k;
}

}  // namespace piece_bpe

#endif
