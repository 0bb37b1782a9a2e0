/* piece_cache.h: the BPE model's bounded piece -> ids cache, shared by all threads.
 *
 * Why readers write nothing: with a mutex per shard (even 32 cache-line-aligned shards)
 * a 2-thread batch over warm text ran no faster than 1 thread: every lookup took a
 * lock, and the lock's cache line bounced between the cores. Here each shard is a
 * seqlock: a reader reads the sequence number, looks up and copies the ids, and
 * re-reads the number; if a writer ran in between (the number changed or is odd) the
 * lookup counts as a miss and the piece is merged, never read torn. Writers (inserts
 * after a miss) take the shard's mutex and make the number odd while they write.
 *
 * Why flat: on new text nearly every lookup misses and is followed by an insert, so the
 * cache's own cost is paid per new piece. A shard is an open-addressing table of
 * two-word slots plus one fixed byte arena (key bytes followed by the ids), allocated
 * once: nothing is allocated on the hot path, and a reader racing a writer can never
 * reach freed memory (every offset and length it reads is checked against the arena's
 * fixed size before use).
 *
 * Bounded: each shard holds at most ceil(capacity / SHARDS) entries and ARENA_PER_ENTRY
 * bytes per allowed entry (capacity 0 turns the cache off), and is emptied when either
 * is full (cheaper than LRU bookkeeping; a working set that fits stays hot).
 * Statistics are added by the caller once per call (``add_stats``), not per lookup.
 *
 * Admission: a piece is cached on its second sighting. On new text nearly every
 * multi-token piece comes once, and caching it on first sight costs a lookup that
 * misses (a probe into a table far larger than L2) and an insert (a shard lock, two
 * arena writes) for nothing: on a cold pass the cache made English and CJK slower
 * than no cache at all. So the first sighting only sets a bit in
 * a 128 KiB filter (``seen_before``), one bit per hash, emptied when a quarter of its
 * bits are set. A false "seen" caches a piece one sighting early and a forgotten one is
 * merged once more; neither can change an id, and neither can a lost bit when two
 * threads set bits of one word at once (relaxed loads and stores, no lock). The filter
 * belongs to the model, not the thread: a per-thread filter never admitted a piece
 * that two batch workers met once each, and 2-thread warm batches lost many of their
 * hits. It must span more distinct pieces than the cache holds, or a text repeated
 * with a longer period than the filter's is never admitted.
 */
#ifndef TOKSERVE_PIECE_CACHE_H
#define TOKSERVE_PIECE_CACHE_H

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "bpe_tables.h"

class PieceCache {
public:
    static const size_t SHARDS = 32;
    static const size_t ARENA_PER_ENTRY = 160;
    static const size_t MAX_IDS = 256;  /* longest id list a reader copies */

    static const unsigned SEEN_BITS = 20;  /* 1,048,576 bits */

    /* Off (capacity 0) until ``set_capacity``. Tables come from calloc: zero is empty,
     * and untouched pages cost no memory, so a cache takes memory as it fills. */
    PieceCache() : hits_(0), misses_(0), seen_marks_(0) {
        seen_.reset(zeroed<std::atomic<uint64_t>>((1u << SEEN_BITS) / 64));
    }

    bool enabled() const { return per_shard_ != 0; }

    /* Not concurrent with lookups: called at construction only. */
    void set_capacity(size_t capacity) {
        per_shard_ = (capacity + SHARDS - 1) / SHARDS;
        size_t slots = 16;
        while (slots < 2 * per_shard_) slots <<= 1;  /* at most half full */
        size_t limit = per_shard_ * ARENA_PER_ENTRY;
        if (limit > 0xFFFFFFFFu) limit = 0xFFFFFFFFu;  /* offsets are 32-bit */
        for (size_t i = 0; i < SHARDS; i++) {
            Shard &s = shards_[i];
            std::lock_guard<std::mutex> guard(s.lock);
            s.n_slots = per_shard_ ? slots : 0;
            s.slots.reset(s.n_slots ? zeroed<Slot>(s.n_slots) : nullptr);
            s.arena_size = per_shard_ && s.slots ? limit : 0;
            s.arena.reset(s.arena_size ? zeroed<unsigned char>(s.arena_size) : nullptr);
            if (!s.arena) s.n_slots = s.arena_size = 0;  /* out of memory: this shard is off */
            s.used = s.count = 0;
        }
    }

    /* The key hash get() and put() take: computed once per piece by the caller, which
     * also feeds it to the admission filter (seen_before). Never 0 (0 = empty). */
    static uint64_t hash_of(const unsigned char *p, size_t n) {
        return nonzero(bt_key_hash(bt_head(p, n), p, n));
    }

    /* A bt_key_hash made a valid key: this cache's hash is that hash, 0 moved to 1. */
    static uint64_t nonzero(uint64_t h) { return h ? h : 1; }

    /* Appends the cached ids of piece p[0:n] (hash h) to *out; false (and *out as it was) on
     * a miss, including a lookup that overlapped a writer. */
    bool get(uint64_t h, const unsigned char *p, size_t n, std::vector<int32_t> *out) const {
        if (per_shard_ == 0) return false;
        const Shard &s = shards_[h >> 59];
        uint64_t seq = s.seq.load(std::memory_order_acquire);
        if (seq & 1) return false;
        size_t before = out->size();
        bool found = false;
        size_t mask = s.n_slots - 1;
        for (size_t i = h & mask, probes = 0; probes < s.n_slots; i = (i + 1) & mask, probes++) {
            uint64_t key = s.slots[i].hash.load(std::memory_order_relaxed);
            if (key == 0) break;
            if (key != h) continue;
            uint64_t meta = s.slots[i].meta.load(std::memory_order_relaxed);
            size_t offset = (size_t)(meta >> 32), len = (meta >> 16) & 0xFFFF;
            size_t count = meta & 0xFFFF;
            if (len != n || count > MAX_IDS || offset + n + 4 * count > s.arena_size) continue;
            if (!bt_same_bytes(&s.arena[offset], p, n)) continue;
            /* straight into *out; taken back below if a writer overlapped */
            out->resize(before + count);
            memcpy(out->data() + before, &s.arena[offset + n], count * sizeof(int32_t));
            found = true;
            break;
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (found && s.seq.load(std::memory_order_relaxed) == seq) return true;
        out->resize(before);
        return false;
    }

    void put(uint64_t h, const unsigned char *p, size_t n, const int32_t *ids, size_t count) {
        if (per_shard_ == 0 || n > 0xFFFF || count > MAX_IDS) return;
        Shard &s = shards_[h >> 59];
        size_t bytes = n + count * sizeof(int32_t);
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
            memcpy(&s.arena[s.used], p, n);
            memcpy(&s.arena[s.used + n], ids, count * sizeof(int32_t));
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
        wipe_seen();
    }

    /* True when a piece with hash h was (probably) met before; otherwise remembers it.
     * Uses hash bits 20.. (the shard takes the top five, the slot the low ones). */
    bool seen_before(uint64_t h) {
        unsigned bit = (unsigned)(h >> 20) & ((1u << SEEN_BITS) - 1);
        uint64_t mask = 1ULL << (bit & 63);
        std::atomic<uint64_t> &word = seen_[bit >> 6];
        uint64_t w = word.load(std::memory_order_relaxed);
        if (w & mask) return true;
        word.store(w | mask, std::memory_order_relaxed);
        return false;
    }

    /* Once per encode call: hits, misses and bits newly set in the seen filter (which
     * is emptied here once a quarter of it has been set). */
    void add_stats(uint64_t hits, uint64_t misses, uint64_t marks) {
        if (hits) hits_.fetch_add(hits, std::memory_order_relaxed);
        if (misses) misses_.fetch_add(misses, std::memory_order_relaxed);
        if (marks && seen_marks_.fetch_add(marks, std::memory_order_relaxed) + marks >
                         (1u << SEEN_BITS) / 4) {
            seen_marks_.store(0, std::memory_order_relaxed);
            wipe_seen();
        }
    }

    uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

private:
    struct Slot {  /* all-zero bytes: empty (calloc) */
        std::atomic<uint64_t> hash;  /* 0 = empty; hash_of never returns 0 */
        std::atomic<uint64_t> meta;  /* arena offset << 32 | key length << 16 | id count */
    };

    struct Free {
        void operator()(void *p) const { free(p); }
    };

    template <class T>
    static T *zeroed(size_t n) { return (T *)calloc(n, sizeof(T)); }

    struct alignas(64) Shard {
        std::atomic<uint64_t> seq{0};
        std::mutex lock;  /* writers only */
        std::unique_ptr<Slot[], Free> slots;
        size_t n_slots = 0;
        std::unique_ptr<unsigned char[], Free> arena;
        size_t arena_size = 0;
        size_t used = 0;   /* writer state, under lock */
        size_t count = 0;
    };

    /* Under the shard's lock with the sequence number odd (or before any reader). */
    static void wipe(Shard &s) {
        for (size_t i = 0; i < s.n_slots; i++) {
            s.slots[i].hash.store(0, std::memory_order_relaxed);
            s.slots[i].meta.store(0, std::memory_order_relaxed);
        }
        s.used = 0;
        s.count = 0;
    }

    void wipe_seen() {
        for (size_t i = 0; i < (1u << SEEN_BITS) / 64; i++)
            seen_[i].store(0, std::memory_order_relaxed);
    }

    Shard shards_[SHARDS];
    size_t per_shard_ = 0;
    std::atomic<uint64_t> hits_, misses_;
    std::unique_ptr<std::atomic<uint64_t>[], Free> seen_;
    std::atomic<uint64_t> seen_marks_;
};

#endif
