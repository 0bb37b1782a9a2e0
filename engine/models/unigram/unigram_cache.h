/* unigram_cache.h: the Unigram model's bounded word -> tokens cache, shared by threads.
 *
 * Why: a T5 text is mostly words that recur (the pre-tokenizer hands the model one
 * "▁word" at a time), and a Viterbi pass over a word walks the trie from each of its
 * characters; a hit is one hash and one copy.
 *
 * Why readers write nothing (the BPE model's piece_cache.h states the measurements):
 * each shard is a seqlock. A reader reads the shard's sequence number, finds and copies
 * the entry, and re-reads the number; if a writer ran in between (the number changed or
 * is odd) the lookup is a miss, never a torn read. Writers take the shard's mutex and
 * make the number odd while they write. Every offset a reader follows is checked
 * against the arena's fixed size first, so a racing reader never leaves the arena.
 *
 * Bounded: each shard holds at most ceil(capacity / SHARDS) entries in a fixed arena of
 * ARENA_PER_ENTRY bytes per entry, and is emptied when either is full (cheaper than LRU;
 * a working set that fits stays hot). Words longer than MAX_KEY bytes are not cached
 * (tokenizers caches words below 256 bytes too). A token is stored as its id and its
 * byte span in the word (uint16 each: words are short), so byte-fallback and fused
 * <unk> spans come back exactly.
 */
#ifndef TOKSERVE_UNIGRAM_CACHE_H
#define TOKSERVE_UNIGRAM_CACHE_H

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

/* A fast 64-bit hash of p[0:n], never 0 (0 marks an empty slot). */
static inline uint64_t ug_hash(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0xFF51AFD7ED558CCDULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
        h ^= h >> 29;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    return h ? h : 1;
}

class UnigramCache {
public:
    static const size_t SHARDS = 32;
    static const size_t MAX_KEY = 255;
    static const size_t ARENA_PER_ENTRY = 96;

    UnigramCache() : hits_(0), misses_(0) {}

    bool enabled() const { return per_shard_ != 0; }

    /* Not concurrent with lookups: called at construction only. 0 turns it off. */
    void set_capacity(size_t capacity) {
        per_shard_ = (capacity + SHARDS - 1) / SHARDS;
        size_t slots = 16;
        while (slots < 2 * per_shard_) slots <<= 1;
        size_t limit = per_shard_ * ARENA_PER_ENTRY;
        if (limit > 0xFFFFFFFFu) limit = 0xFFFFFFFFu;
        for (size_t i = 0; i < SHARDS; i++) {
            Shard &s = shards_[i];
            std::lock_guard<std::mutex> guard(s.lock);
            s.n_slots = per_shard_ ? slots : 0;
            s.slots.reset(s.n_slots ? (Slot *)calloc(s.n_slots, sizeof(Slot)) : nullptr);
            s.arena_size = per_shard_ && s.slots ? limit : 0;
            s.arena.reset(s.arena_size ? (unsigned char *)calloc(s.arena_size, 1) : nullptr);
            if (!s.arena) s.n_slots = s.arena_size = 0;
            s.used = s.count = 0;
        }
    }

    /* Appends the cached ids of word p[0:n] (hash h) to *ids and, unless spans is
     * NULL, their byte spans to *spans (start, end per id); false and both unchanged
     * on a miss (including a lookup that overlapped a writer). */
    bool get(uint64_t h, const unsigned char *p, size_t n, std::vector<int32_t> *ids,
             std::vector<uint32_t> *spans) const {
        if (per_shard_ == 0 || n > MAX_KEY) return false;
        const Shard &s = shards_[h >> 59];
        if (s.n_slots == 0) return false;
        uint64_t seq = s.seq.load(std::memory_order_acquire);
        if (seq & 1) return false;
        size_t before = ids->size(), spans_before = spans ? spans->size() : 0;
        bool found = false;
        size_t mask = s.n_slots - 1;
        for (size_t i = h & mask, probes = 0; probes < s.n_slots; i = (i + 1) & mask, probes++) {
            uint64_t key = s.slots[i].hash.load(std::memory_order_relaxed);
            if (key == 0) break;
            if (key != h) continue;
            uint64_t meta = s.slots[i].meta.load(std::memory_order_relaxed);
            size_t offset = (size_t)(meta >> 32), len = (meta >> 16) & 0xFFFF;
            size_t count = meta & 0xFFFF;
            if (len != n || offset + n + 8 * count > s.arena_size) continue;
            if (memcmp(&s.arena[offset], p, n) != 0) continue;
            const unsigned char *q = &s.arena[offset + n];
            ids->resize(before + count);
            if (spans) spans->resize(spans_before + 2 * count);
            for (size_t k = 0; k < count; k++, q += 8) {
                memcpy(&(*ids)[before + k], q, 4);
                if (!spans) continue;
                uint16_t a, b;
                memcpy(&a, q + 4, 2);
                memcpy(&b, q + 6, 2);
                (*spans)[spans_before + 2 * k] = a;
                (*spans)[spans_before + 2 * k + 1] = b;
            }
            found = true;
            break;
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (found && s.seq.load(std::memory_order_relaxed) == seq) return true;
        ids->resize(before);
        if (spans) spans->resize(spans_before);
        return false;
    }

    /* ids[0:count] and their spans[0:2 * count] for word p[0:n] (n <= MAX_KEY). */
    void put(uint64_t h, const unsigned char *p, size_t n, const int32_t *ids,
             const uint32_t *spans, size_t count) {
        if (per_shard_ == 0 || n > MAX_KEY || count > 0xFFFF) return;
        Shard &s = shards_[h >> 59];
        size_t bytes = n + 8 * count;
        if (bytes > s.arena_size) return;
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
                memcmp(&s.arena[meta >> 32], p, n) == 0) {
                present = true;  /* another thread cached it first */
                break;
            }
        }
        if (!present) {
            unsigned char *q = &s.arena[s.used];
            memcpy(q, p, n);
            q += n;
            for (size_t k = 0; k < count; k++, q += 8) {
                uint16_t a = (uint16_t)spans[2 * k], b = (uint16_t)spans[2 * k + 1];
                memcpy(q, &ids[k], 4);
                memcpy(q + 4, &a, 2);
                memcpy(q + 6, &b, 2);
            }
            s.slots[i].meta.store(((uint64_t)s.used << 32) | ((uint64_t)n << 16) | count,
                                  std::memory_order_relaxed);
            s.slots[i].hash.store(h, std::memory_order_relaxed);
            s.used += bytes;
            s.count++;
        }
        s.seq.store(seq + 2, std::memory_order_release);
    }

    void clear() {
        for (size_t i = 0; i < SHARDS; i++) {
            Shard &s = shards_[i];
            std::lock_guard<std::mutex> guard(s.lock);
            uint64_t seq = s.seq.load(std::memory_order_relaxed);
            s.seq.store(seq + 1, std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);
            wipe(s);
            s.seq.store(seq + 2, std::memory_order_release);
        }
    }

    /* Once per call, not per lookup. */
    void add_stats(uint64_t hits, uint64_t misses) {
        if (hits) hits_.fetch_add(hits, std::memory_order_relaxed);
        if (misses) misses_.fetch_add(misses, std::memory_order_relaxed);
    }

    uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

private:
    struct Slot {  /* all-zero bytes: empty (calloc) */
        std::atomic<uint64_t> hash;
        std::atomic<uint64_t> meta;  /* arena offset << 32 | key length << 16 | count */
    };

    struct Free {
        void operator()(void *p) const { free(p); }
    };

    struct alignas(64) Shard {
        std::atomic<uint64_t> seq{0};
        std::mutex lock;
        std::unique_ptr<Slot[], Free> slots;
        size_t n_slots = 0;
        std::unique_ptr<unsigned char[], Free> arena;
        size_t arena_size = 0;
        size_t used = 0;
        size_t count = 0;
    };

    static void wipe(Shard &s) {
        for (size_t i = 0; i < s.n_slots; i++) {
            s.slots[i].hash.store(0, std::memory_order_relaxed);
            s.slots[i].meta.store(0, std::memory_order_relaxed);
        }
        s.used = 0;
        s.count = 0;
    }

    Shard shards_[SHARDS];
    size_t per_shard_ = 0;
    std::atomic<uint64_t> hits_, misses_;
};

#endif
