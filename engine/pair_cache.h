/* pair_cache.h: a small per-thread cache of "pair of adjacent ids -> merge result".
 *
 * Why: the merge loop asks "do these two adjacent symbols merge, and at what rank?"
 * two to three times per input byte on text whose pieces are not single tokens (CJK,
 * most non-Latin scripts). Each answer from the vocabulary's own table costs a hash
 * of the bytes and a probe into tables far larger than L2; the same few thousand
 * pairs come back over and over. A 16,384-entry direct-mapped table answers most of
 * those from L2 (4,096 entries: CJK 12.0 MB/s with the piece cache off; 16,384: 12.9;
 * 65,536: 14.3 but 1.5 MiB per thread).
 *
 * Exact by construction: the key is the full pair of ids, and the answer for a pair is
 * a pure function of the model, so an entry is either absent or right. Entries carry
 * the owning model's serial number, a 64-bit counter that is never reused, so a model
 * freed and another allocated at the same address cannot read the first one's entries.
 * thread_local: no locks, no torn entries; every thread (Python's or a batch worker)
 * has its own 384 KiB.
 */
#ifndef TOKSERVE_PAIR_CACHE_H
#define TOKSERVE_PAIR_CACHE_H

#include <atomic>
#include <cstdint>

namespace pair_cache {

const unsigned BITS = 14;

struct Entry {
    uint64_t owner;  /* 0: empty (serial numbers start at 1) */
    uint64_t key;
    uint64_t value;
};

inline Entry *table() {
    static thread_local Entry entries[1u << BITS];
    return entries;
}

inline std::atomic<uint64_t> &serials() {
    static std::atomic<uint64_t> next(1);
    return next;
}

inline unsigned slot(uint64_t key) {
    return (unsigned)((key * 0x9E3779B97F4A7C15ULL) >> (64 - BITS));
}

}  // namespace pair_cache

static inline uint64_t pc_new_owner() {
    return pair_cache::serials().fetch_add(1, std::memory_order_relaxed);
}

/* 1 and *value set when (owner, key) is cached. */
static inline int pc_get(uint64_t owner, uint64_t key, uint64_t *value) {
    const pair_cache::Entry &e = pair_cache::table()[pair_cache::slot(key)];
    if (e.owner != owner || e.key != key) return 0;
    *value = e.value;
    return 1;
}

static inline void pc_put(uint64_t owner, uint64_t key, uint64_t value) {
    pair_cache::Entry &e = pair_cache::table()[pair_cache::slot(key)];
    e.owner = owner;
    e.key = key;
    e.value = value;
}

#endif
