/* pair_cache.h: a small per-thread cache of "pair of adjacent ids -> merge result".
 *
 * Why: the merge loop asks "do these two adjacent symbols merge, and at what rank?"
 * two to three times per input byte on text whose pieces are not single tokens (CJK,
 * most non-Latin scripts). Each answer from the vocabulary's own table costs a hash
 * of the bytes and a probe into tables far larger than L2; the same few thousand
 * pairs come back over and over. A direct-mapped table of 32,768 16-byte entries
 * (512 KiB) answers most of those from L2 (the sizes tried are in benchmarks/README.md).
 * A .tiktoken vocabulary asks its pair table instead (bpe_pairs.h: one line, shared,
 * never cold); this cache serves merges lists and the backtracking encoder.
 *
 * Exact by construction: the key is the full pair of ids, and the answer for a pair is
 * a pure function of the model, so an entry is either absent or right. Keys carry the
 * owning model's serial number, a counter that is never reused, so a model freed and
 * another allocated at the same address cannot read the first one's entries. Ids (21
 * bits each) and the serial (22 bits) share one word; a model whose ids or serial do
 * not fit gets serial 0 and does not use the cache. thread_local: no locks, no torn
 * entries; every thread (Python's or a batch worker) has its own table.
 */
#ifndef TOKSERVE_PAIR_CACHE_H
#define TOKSERVE_PAIR_CACHE_H

#include <atomic>
#include <cstddef>
#include <cstdint>

#ifndef PAIR_CACHE_BITS
#define PAIR_CACHE_BITS 15  /* 32,768 entries */
#endif

namespace pair_cache {

const unsigned BITS = PAIR_CACHE_BITS;
const unsigned ID_BITS = 21;     /* ids below 2,097,152 (o200k_base: 200,019) */
const unsigned OWNER_BITS = 22;  /* 4,194,303 models per process */

/* 16 bytes: the two ids and the owner packed in one word (three words before), so
 * 1.5 times as many pairs fit in the same share of L2. */
struct Entry {
    uint64_t key;    /* left | right << 21 | owner << 42; 0: empty (owners start at 1) */
    uint64_t value;
};

inline Entry *table() {
    static thread_local Entry entries[1u << BITS];
    return entries;
}

/* The backtracking encoder's "is this pair of tokens valid" answers (backtrack.h):
 * the same keys, a table of their own (value 1 or 0), 8,192 entries (128 KiB). */
const unsigned VALID_BITS = 13;

inline Entry *valid_table() {
    static thread_local Entry entries[1u << VALID_BITS];
    return entries;
}

inline std::atomic<uint64_t> &serials() {
    static std::atomic<uint64_t> next(1);
    return next;
}

inline unsigned slot(uint64_t key, unsigned bits) {
    return (unsigned)((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

inline uint64_t pack(uint64_t owner, int32_t a, int32_t b) {
    return (uint64_t)(uint32_t)a | (uint64_t)(uint32_t)b << ID_BITS | owner << (2 * ID_BITS);
}

}  // namespace pair_cache

/* A new model's owner number, or 0 (the model does not use the cache) when its ids or
 * the number of models made so far do not fit the packed key. */
static inline uint64_t pc_new_owner(size_t vocab_size) {
    uint64_t serial = pair_cache::serials().fetch_add(1, std::memory_order_relaxed);
    if (serial >> pair_cache::OWNER_BITS || vocab_size > (1u << pair_cache::ID_BITS)) return 0;
    return serial;
}

/* This thread's table. Fetched once per encode call and passed down: in a dlopen'ed
 * module every thread_local access is a call to __tls_get_addr, which showed in
 * profiles when it was made per lookup. */
static inline pair_cache::Entry *pc_table() { return pair_cache::table(); }

/* The same for the backtracking encoder's pair-validity table. */
static inline pair_cache::Entry *pc_valid_table() { return pair_cache::valid_table(); }

/* 1 and *value set when the pair (a, b) of model ``owner`` is cached. */
static inline int pc_get(const pair_cache::Entry *table, uint64_t owner, int32_t a,
                         int32_t b, uint64_t *value, unsigned bits = pair_cache::BITS) {
    if (!owner) return 0;
    uint64_t key = pair_cache::pack(owner, a, b);
    const pair_cache::Entry &e = table[pair_cache::slot(key, bits)];
    if (e.key != key) return 0;
    *value = e.value;
    return 1;
}

static inline void pc_put(pair_cache::Entry *table, uint64_t owner, int32_t a, int32_t b,
                          uint64_t value, unsigned bits = pair_cache::BITS) {
    if (!owner) return;
    uint64_t key = pair_cache::pack(owner, a, b);
    pair_cache::Entry &e = table[pair_cache::slot(key, bits)];
    e.key = key;
    e.value = value;
}

#endif
