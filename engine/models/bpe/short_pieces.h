/* short_pieces.h: a small per-thread memo of the ids of short pieces.
 *
 * Why: a piece of 2 to 5 bytes that is not itself a token (an Indic vowel sign with
 * its consonant, a CJK character or an emoji its vocabulary has no token for, "),",
 * ".\n\n") is below the piece cache's lower bound (piece_cache.h: for those the shared
 * cache's seen filter, slot and arena lines cost more than the merge), so it was
 * merged every time it came. Such pieces are few and repeat all the time (the
 * benchmark corpus: 27,000 in 5 MB, 6,000 distinct), and a merge of even three bytes
 * asks the vocabulary's tables two or three times. A direct-mapped table of 4,096
 * entries of 16 bytes (64 KiB, in L2) answers most of them with one load.
 *
 * Exact by construction: the key holds the piece's bytes, its length and the owning
 * model's serial (pair_cache.h's, never reused), so an entry is either absent or the
 * model's own answer for those exact bytes; the ids of a piece are a pure function of
 * its bytes. Up to three ids (every short piece of the benchmark corpus but 51 of
 * 27,000) of 21 bits each share the value word, an unused field all ones, so it needs
 * ids below 2^21 - 1; a model whose ids or serial do not fit gets no memo.
 * thread_local: no locks, no torn entries; every thread has its own table.
 */
#ifndef TOKSERVE_SHORT_PIECES_H
#define TOKSERVE_SHORT_PIECES_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace short_pieces {

const size_t MIN_BYTES = 2;
const size_t MAX_BYTES = 5;      /* 40 bits of key */
const unsigned BITS = 12;        /* 4,096 entries */
const unsigned ID_BITS = 21;
const uint64_t NO_ID = (1ULL << ID_BITS) - 1;
const unsigned OWNER_BITS = 21;  /* with 40 bits of bytes and 3 of length: one word */
const size_t MAX_IDS = 3;

struct Entry {
    uint64_t key;    /* bytes | length << 40 | owner << 43; 0: empty (owners start at 1) */
    uint64_t value;  /* id0 | id1 << 21 | id2 << 42, unused fields NO_ID */
};

inline Entry *table() {
    static thread_local Entry entries[1u << BITS];
    return entries;
}

inline uint64_t pack(uint64_t owner, const unsigned char *p, size_t n) {
    uint64_t key = 0;
    for (size_t i = 0; i < n; i++) key |= (uint64_t)p[i] << (8 * i);
    return key | (uint64_t)n << 40 | owner << 43;
}

inline Entry &slot(Entry *t, uint64_t key) {
    return t[(key * 0x9E3779B97F4A7C15ULL) >> (64 - BITS)];
}

}  // namespace short_pieces

/* The memo's owner number for a model with pair-cache serial ``serial`` and
 * ``vocab_size`` ids, or 0 (no memo) when they do not fit its packed words. */
static inline uint64_t sp_owner(uint64_t serial, size_t vocab_size) {
    if (serial >> short_pieces::OWNER_BITS || vocab_size >= short_pieces::NO_ID) return 0;
    return serial;
}

/* True (and the ids appended to *out) when this thread remembers p[0:n] of ``owner``. */
static inline bool sp_get(short_pieces::Entry *t, uint64_t owner, const unsigned char *p,
                          size_t n, std::vector<int32_t> *out) {
    uint64_t key = short_pieces::pack(owner, p, n);
    const short_pieces::Entry &e = short_pieces::slot(t, key);
    if (e.key != key) return false;
    for (size_t k = 0; k < short_pieces::MAX_IDS; k++) {
        uint64_t id = e.value >> (k * short_pieces::ID_BITS) & short_pieces::NO_ID;
        if (id == short_pieces::NO_ID) break;
        out->push_back((int32_t)id);
    }
    return true;
}

/* Remember ids[0:count] for p[0:n] of ``owner``; more than three ids are not kept. */
static inline void sp_put(short_pieces::Entry *t, uint64_t owner, const unsigned char *p,
                          size_t n, const int32_t *ids, size_t count) {
    if (count == 0 || count > short_pieces::MAX_IDS) return;
    uint64_t value = ~0ULL;
    for (size_t k = 0; k < count; k++) {
        value &= ~(short_pieces::NO_ID << (k * short_pieces::ID_BITS));
        value |= (uint64_t)(uint32_t)ids[k] << (k * short_pieces::ID_BITS);
    }
    uint64_t key = short_pieces::pack(owner, p, n);
    short_pieces::Entry &e = short_pieces::slot(t, key);
    e.key = key;
    e.value = value;
}

#endif
