/* piece_bpe_cache.h: the bounded chunk -> ids cache of one piece BPE model.
 *
 * Text is cut into chunks no merge can cross (piece_bpe_model.h), and chunks recur
 * ("▁the", "▁of", "▁function"), so their ids are remembered. A tokenizer is shared by
 * threads, so the cache is internally synchronized, and readers write nothing shared:
 * each of SHARDS shards is a seqlock. A reader notes the shard's sequence number, looks
 * up and copies, and checks the number again; if a writer ran meanwhile (the number
 * moved or was odd) the lookup is a miss and the chunk is merged instead, so a torn
 * read is never used. Writers take the shard's mutex and make the number odd.
 *
 * Memory is allocated once per shard (an open-addressing table of two-word slots and a
 * byte arena holding each key's bytes then its ids); a reader racing a writer checks
 * every offset against the arena's fixed size, so it cannot read outside it. Bounded:
 * a shard holding its share of ``capacity`` entries, or whose arena is full, is emptied
 * before the next insert (cheaper than LRU; a working set that fits stays). Chunks over
 * MAX_KEY bytes or MAX_IDS ids are never cached (a long chunk seldom recurs).
 */
#ifndef TOKSERVE_PIECE_BPE_CACHE_H
#define TOKSERVE_PIECE_BPE_CACHE_H

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "piece_bpe_vocab.h"

namespace piece_bpe {

class ChunkCache {
public:
    static constexpr size_t SHARDS = 16;
    static constexpr size_t MAX_KEY = 192;
    static constexpr size_t MAX_IDS = 64;
    static constexpr size_t BYTES_PER_ENTRY = 40;  /* arena budget: the average chunk is ~16 */

    ChunkCache() = default;
    ChunkCache(const ChunkCache &) = delete;
    ChunkCache &operator=(const ChunkCache &) = delete;
    ~ChunkCache() { release(); }

    /* ``capacity`` entries in all (0: off). Not concurrent with lookups (construction). */
    void set_capacity(size_t capacity) {
        release();
        per_shard_ = (capacity + SHARDS - 1) / SHARDS;
        if (!per_shard_) return;
        size_t slots = 16;
        while (slots < 2 * per_shard_) slots <<= 1;
        for (Shard &s : shards_) {
            /* calloc: zero is empty, and pages never written cost no memory */
            s.slots = (Slot *)calloc(slots, sizeof(Slot));
            s.arena_size = per_shard_ * BYTES_PER_ENTRY + MAX_KEY + 4 * MAX_IDS + 4;
            s.arena = (unsigned char *)calloc(s.arena_size, 1);
            if (!s.slots || !s.arena) {
                free(s.slots);
                free(s.arena);
                s.slots = nullptr;
                s.arena = nullptr;
                s.n_slots = s.arena_size = 0;  /* out of memory: this shard stays off */
                continue;
            }
            s.n_slots = slots;
        }
    }

    bool enabled() const { return per_shard_ != 0; }

    static constexpr size_t MISS = (size_t)-1;

    /* Writes the ids cached for p[0:n] (hash h, never 0) to out (room for n) and
     * returns how many, or MISS (also for a lookup that overlapped a writer: what it
     * wrote to out then may be torn, and is not counted). */
    size_t get(uint64_t h, const unsigned char *p, size_t n, int32_t *out) const {
        const Shard &s = shards_[h >> 60];
        if (!s.n_slots) return MISS;
        uint64_t seq = s.seq.load(std::memory_order_acquire);
        if (seq & 1) return MISS;
        size_t mask = s.n_slots - 1;
        for (size_t i = h & mask;; i = (i + 1) & mask) {  /* at most half full: ends */
            uint64_t key = s.slots[i].hash.load(std::memory_order_relaxed);
            if (key == 0) return MISS;
            if (key != h) continue;
            uint64_t meta = s.slots[i].meta.load(std::memory_order_relaxed);
            size_t off = (size_t)(meta >> 32), len = (meta >> 16) & 0xFFFF, count = meta & 0xFFFF;
            /* count <= n: a chunk has no more tokens than bytes, and out has room for n */
            if (len != n || count > n || off + 4 * count + n > s.arena_size) continue;
            const unsigned char *entry = s.arena + off;
            if (!same_bytes(entry + 4 * count, p, n)) continue;
            const int32_t *ids = (const int32_t *)(const void *)entry;  /* 4-aligned */
            for (size_t k = 0; k < count; k++) out[k] = ids[k];
            std::atomic_thread_fence(std::memory_order_acquire);
            return s.seq.load(std::memory_order_relaxed) == seq ? count : MISS;
        }
    }

    /* Starts loading the slot get(h, ...) reads first. */
    void prefetch(uint64_t h) const {
        const Shard &s = shards_[h >> 60];
        if (s.n_slots) __builtin_prefetch(&s.slots[h & (s.n_slots - 1)]);
    }

    /* Remembers ids[0:count] for p[0:n] (hash h). An entry is the ids, then the key
     * bytes, padded to 4 bytes so that every entry's ids are 4-aligned. */
    void put(uint64_t h, const unsigned char *p, size_t n, const int32_t *ids, size_t count) {
        Shard &s = shards_[h >> 60];
        if (!s.n_slots || n > MAX_KEY || count > MAX_IDS) return;
        size_t bytes = (4 * count + n + 3) & ~(size_t)3;
        std::lock_guard<std::mutex> guard(s.lock);
        uint64_t seq = s.seq.load(std::memory_order_relaxed);
        s.seq.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        if (s.count >= per_shard_ || s.used + bytes > s.arena_size) wipe(s);
        size_t mask = s.n_slots - 1;
        size_t i = h & mask;
        bool present = false;
        for (;; i = (i + 1) & mask) {
            uint64_t key = s.slots[i].hash.load(std::memory_order_relaxed);
            if (key == 0) break;
            uint64_t meta = s.slots[i].meta.load(std::memory_order_relaxed);
            if (key == h && ((meta >> 16) & 0xFFFF) == n &&
                same_bytes(s.arena + (meta >> 32) + 4 * (meta & 0xFFFF), p, n)) {
                present = true;  /* another thread put it first */
                break;
            }
        }
        if (!present) {
            memcpy(s.arena + s.used, ids, 4 * count);
            memcpy(s.arena + s.used + 4 * count, p, n);
            s.slots[i].meta.store(((uint64_t)s.used << 32) | ((uint64_t)n << 16) | count,
                                  std::memory_order_relaxed);
            s.slots[i].hash.store(h, std::memory_order_relaxed);
            s.used += bytes;
            s.count++;
        }
        s.seq.store(seq + 2, std::memory_order_release);
    }

    void clear() {
        for (Shard &s : shards_) {
            if (!s.n_slots) continue;
            std::lock_guard<std::mutex> guard(s.lock);
            uint64_t seq = s.seq.load(std::memory_order_relaxed);
            s.seq.store(seq + 1, std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);
            wipe(s);
            s.seq.store(seq + 2, std::memory_order_release);
        }
    }

    /* Statistics, added once per encode call by the caller. */
    void add_stats(uint64_t hits, uint64_t misses) {
        if (hits) hits_.fetch_add(hits, std::memory_order_relaxed);
        if (misses) misses_.fetch_add(misses, std::memory_order_relaxed);
    }
    uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

private:
    struct Slot {  /* all zero: empty */
        std::atomic<uint64_t> hash;
        std::atomic<uint64_t> meta;  /* arena offset << 32 | key bytes << 16 | ids */
    };

    struct alignas(64) Shard {
        std::atomic<uint64_t> seq{0};
        std::mutex lock;  /* writers only */
        Slot *slots = nullptr;
        size_t n_slots = 0;
        unsigned char *arena = nullptr;
        size_t arena_size = 0;
        size_t used = 0, count = 0;  /* under lock */
    };

    /* Under the shard's lock with its number odd (or with no reader possible). */
    static void wipe(Shard &s) {
        if (s.count == 0) return;
        for (size_t i = 0; i < s.n_slots; i++) {
            s.slots[i].hash.store(0, std::memory_order_relaxed);
            s.slots[i].meta.store(0, std::memory_order_relaxed);
        }
        s.used = s.count = 0;
    }

    void release() {
        for (Shard &s : shards_) {
            free(s.slots);
            free(s.arena);
            s.slots = nullptr;
            s.arena = nullptr;
            s.n_slots = s.arena_size = s.used = s.count = 0;
        }
        per_shard_ = 0;
    }

    Shard shards_[SHARDS];
    size_t per_shard_ = 0;
    std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace piece_bpe

#endif
