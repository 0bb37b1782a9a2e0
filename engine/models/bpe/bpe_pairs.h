/* bpe_pairs.h: concatenated ranks, every pair of tokens whose joined bytes are a token.
 *
 * Why: with a .tiktoken vocabulary the merge loop asks, for two adjacent symbols a and
 * b, "is the bytes of a followed by the bytes of b a token, and which?". Answered from
 * the byte table, that is a hash of the joined bytes and two lines of a table far larger
 * than L2 (its tags, then its slot), behind a per-thread pair cache that is empty for
 * every new model. Here the answer is keyed by the two ids: one line of one table,
 * built with the image and shared by every process that maps it.
 *
 * Exact: the table holds (a, b) -> t for every token t and every cut of t's bytes into
 * two tokens a and b, so a pair absent from it joins into no token. A slot is one word,
 * a << 42 | b << 21 | t, so it needs ids below 2^21 (a larger vocabulary gets no table
 * and keeps the byte lookup); all-ones marks an empty slot (a key never has bit 63 set).
 * Tables are at most half full (bt_capacity_for), probed linearly from a mixed hash.
 */
#ifndef TOKSERVE_BPE_PAIRS_H
#define TOKSERVE_BPE_PAIRS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bpe_tables.h"

static const unsigned BPE_PAIR_ID_BITS = 21;
static const uint64_t BPE_PAIR_ID_MASK = (1ULL << BPE_PAIR_ID_BITS) - 1;
static const uint64_t BPE_PAIR_EMPTY = 0xFFFFFFFFFFFFFFFFULL;

/* The table as the merge loop reads it; ``slots`` NULL: none. */
struct BpePairs {
    const uint64_t *slots;
    size_t mask;
};

static inline uint64_t bpe_pairs_key(uint32_t a, uint32_t b) {
    return (uint64_t)a << BPE_PAIR_ID_BITS | b;
}

/* The three ids of a full slot. */
static inline void bpe_pairs_split(uint64_t e, uint64_t *a, uint64_t *b, uint64_t *t) {
    *a = e >> (2 * BPE_PAIR_ID_BITS);
    *b = (e >> BPE_PAIR_ID_BITS) & BPE_PAIR_ID_MASK;
    *t = e & BPE_PAIR_ID_MASK;
}

/* The token a and b join into, or -1. */
static inline int32_t bpe_pairs_get(const BpePairs &t, int32_t a, int32_t b) {
    uint64_t key = bpe_pairs_key((uint32_t)a, (uint32_t)b);
    for (size_t i = bt_mix(key) & t.mask;; i = (i + 1) & t.mask) {
        uint64_t e = t.slots[i];
        if (e == BPE_PAIR_EMPTY) return -1;
        if (e >> BPE_PAIR_ID_BITS == key) return (int32_t)(e & BPE_PAIR_ID_MASK);
    }
}

/* What the build asks to find a token by its bytes: the single bytes' ids, the dense
 * two-byte table and the token filter answer before the byte table is probed (most
 * cuts of a token are not two tokens, and the filter proves that for most of them). */
struct BpePairsFind {
    const bt_bytesmap *enc;
    const int32_t *byte_ids;
    const uint32_t *byte_pairs;     /* the dense byte-pair table (bpe_tables.h) */
    const uint64_t *token_filter;   /* tokens of 3+ bytes (bt_filter_has) */

    /* The id of the token x[0:m], or -1; ``h`` is the filter hash of x[0:m] when m >= 3. */
    int32_t token(const unsigned char *x, size_t m, uint64_t h) const {
        if (m == 1) return byte_ids[x[0]];
        if (m == 2) {
            uint32_t t = bt_two_byte_token(byte_pairs, x);
            return t == BPE_NO_TOKEN ? -1 : (int32_t)t;
        }
        if (!bt_filter_has_hash(token_filter, h)) return -1;
        return bt_bytes_get(enc, x, m);
    }
};

/* The slots of every (a, b) -> t of the vocabulary: token ``id`` is text[start[id]:
 * start[id] + len[id]] where mergeable[id]. Empty when some id does not fit in 21 bits.
 * Only the id the byte table gives for t's bytes is recorded (a vocabulary may list the
 * same bytes twice), so the pair table and the byte table always agree. */
static inline std::vector<uint64_t> bpe_pairs_collect(const BpePairsFind &find,
                                                      const unsigned char *text,
                                                      const uint32_t *start,
                                                      const uint32_t *len,
                                                      const uint8_t *mergeable, size_t n_ids) {
    std::vector<uint64_t> entries;
    if (n_ids > BPE_PAIR_ID_MASK) return entries;
    for (size_t id = 0; id < n_ids; id++) {
        if (!mergeable[id] || len[id] < 2) continue;
        const unsigned char *q = text + start[id];
        size_t n = len[id];
        if (bt_bytes_get(find.enc, q, n) != (int32_t)id) continue;  /* bytes another id holds */
        uint64_t h = BT_FILTER_SEED;  /* of q[0:k], grown one byte at a time */
        for (size_t k = 1; k < n; k++) {
            h = bt_filter_step(h, q[k - 1]);
            int32_t a = find.token(q, k, h);
            if (a < 0) continue;
            uint64_t g = BT_FILTER_SEED;
            for (size_t i = k; i < n; i++) g = bt_filter_step(g, q[i]);
            int32_t b = find.token(q + k, n - k, g);
            if (b < 0) continue;
            entries.push_back(bpe_pairs_key((uint32_t)a, (uint32_t)b) << BPE_PAIR_ID_BITS | id);
        }
    }
    return entries;
}

/* Place ``entries`` in ``cap`` slots (a power of two, more than twice as many). */
static inline void bpe_pairs_place(uint64_t *slots, size_t cap,
                                   const std::vector<uint64_t> &entries) {
    for (size_t i = 0; i < cap; i++) slots[i] = BPE_PAIR_EMPTY;
    for (uint64_t e : entries) {
        size_t i = bt_mix(e >> BPE_PAIR_ID_BITS) & (cap - 1);
        while (slots[i] != BPE_PAIR_EMPTY) i = (i + 1) & (cap - 1);
        slots[i] = e;
    }
}

#endif
