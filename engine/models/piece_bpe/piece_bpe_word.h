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
};

enum { PB_OK = 0, PB_UNK_MISSING = 1 };

/* Appends the first symbols of p[0:n] to *out; PB_UNK_MISSING when a character needs
 * an unk_token that is not a piece. */
static inline int first_symbols(const SymbolRules &r, const unsigned char *p, size_t n,
                                std::vector<Symbol> *out) {
    int32_t unk = -1;  /* the pending unknown symbol's id (-1: none) and its length */
    uint32_t unk_len = 0;
    size_t i = 0;
    while (i < n) {
        int32_t cp;
        size_t k = utf8_char(p + i, n - i, &cp);
        int32_t id = r.vocab->find_char(p + i, k, cp);
        if (id >= 0) {
            if (unk >= 0) {
                out->push_back(Symbol{unk, unk_len});
                unk = -1;
            }
            out->push_back(Symbol{id, (uint32_t)k});
        } else {
            bool bytes = r.byte_fallback;
            for (size_t j = 0; bytes && j < k; j++) bytes = r.byte_ids[p[i + j]] >= 0;
            if (bytes) {
                for (size_t j = 0; j < k; j++) out->push_back(Symbol{r.byte_ids[p[i + j]], 1});
            } else if (r.unk_id != -1) {
                if (r.unk_id < 0) return PB_UNK_MISSING;
                if (unk >= 0 && r.fuse_unk) {
                    unk_len += (uint32_t)k;
                } else {
                    if (unk >= 0) out->push_back(Symbol{unk, unk_len});
                    unk = r.unk_id;
                    unk_len = (uint32_t)k;
                }
            }
        }
        i += k;
    }
    if (unk >= 0) out->push_back(Symbol{unk, unk_len});
    return PB_OK;
}

/* Short chunks (see above: only when Vocab::plain). s[0:*n] is merged in place. */
static inline void merge_short(const Merges &m, Symbol *s, size_t *n) {
    size_t len = *n;
    if (len < 2) return;
    uint64_t pair[64];  /* rank << 32 | merged id of (s[i], s[i + 1]), or NONE */
    for (size_t i = 0; i + 1 < len; i++) pair[i] = m.find((uint32_t)s[i].id, (uint32_t)s[i + 1].id);
    for (;;) {
        size_t best = len;
        uint64_t low = Merges::NONE;
        for (size_t i = 0; i + 1 < len; i++) {
            if (pair[i] < low) {  /* strict: the leftmost of equal ranks */
                low = pair[i];
                best = i;
            }
        }
        if (best == len) break;
        s[best].id = (int32_t)(low & 0xFFFFFFFFu);
        s[best].len += s[best + 1].len;
        for (size_t i = best + 1; i + 1 < len; i++) s[i] = s[i + 1];
        for (size_t i = best + 1; i + 2 < len; i++) pair[i] = pair[i + 1];
        len--;
        if (best > 0) pair[best - 1] = m.find((uint32_t)s[best - 1].id, (uint32_t)s[best].id);
        if (best + 1 < len) pair[best] = m.find((uint32_t)s[best].id, (uint32_t)s[best + 1].id);
    }
    *n = len;
}

/* The most symbols merge_short takes. */
static constexpr size_t SHORT_MAX = 64;

/* Reusable memory of merge_heap. */
struct HeapScratch {
    std::vector<int64_t> prev, next;
    std::vector<uint64_t> heap;  /* rank << 32 | position; a min-heap */
};

/* Any chunk: tokenizers' algorithm, step for step. *s is merged in place (compacted). */
static inline void merge_heap(const Merges &m, std::vector<Symbol> *symbols, HeapScratch *w) {
    std::vector<Symbol> &s = *symbols;
    size_t n = s.size();
    if (n < 2) return;
    w->prev.resize(n);
    w->next.resize(n);
    for (size_t i = 0; i < n; i++) {
        w->prev[i] = (int64_t)i - 1;
        w->next[i] = i + 1 < n ? (int64_t)i + 1 : -1;
    }
    std::vector<uint64_t> &heap = w->heap;
    heap.clear();
    std::greater<uint64_t> later;
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t r = m.find((uint32_t)s[i].id, (uint32_t)s[i + 1].id);
        if (r != Merges::NONE) heap.push_back((r & 0xFFFFFFFF00000000ULL) | i);
    }
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        uint64_t top = heap.back();
        heap.pop_back();
        size_t pos = (size_t)(top & 0xFFFFFFFFu);
        uint32_t new_id = m.merged((uint32_t)(top >> 32));
        if (s[pos].len == 0 || w->next[pos] == -1) continue;
        size_t right = (size_t)w->next[pos];
        uint64_t now = m.find((uint32_t)s[pos].id, (uint32_t)s[right].id);
        if (now == Merges::NONE || (uint32_t)(now & 0xFFFFFFFFu) != new_id) continue;  /* stale */
        s[pos].id = (int32_t)new_id;
        s[pos].len += s[right].len;
        s[right].len = 0;
        int64_t after = w->next[right];
        w->next[pos] = after;
        if (after >= 0) w->prev[(size_t)after] = (int64_t)pos;
        int64_t before = w->prev[pos];
        if (before >= 0) {
            uint64_t r = m.find((uint32_t)s[(size_t)before].id, (uint32_t)new_id);
            if (r != Merges::NONE) {
                heap.push_back((r & 0xFFFFFFFF00000000ULL) | (uint64_t)before);
                std::push_heap(heap.begin(), heap.end(), later);
            }
        }
        if (after >= 0) {
            uint64_t r = m.find((uint32_t)new_id, (uint32_t)s[(size_t)after].id);
            if (r != Merges::NONE) {
                heap.push_back((r & 0xFFFFFFFF00000000ULL) | pos);
                std::push_heap(heap.begin(), heap.end(), later);
            }
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].len != 0) s[k++] = s[i];
    s.resize(k);
}

}  // namespace piece_bpe

#endif
