/* piece_cache.h: the BPE model's bounded piece -> ids cache, safe to share across threads.
 *
 * Why sharded: one mutex around one map made two threads slower than one on CJK and
 * emoji text, where most pieces are several tokens and go through the cache (measured
 * with engine_bench.py, o200k_base). Keys are spread over SHARDS maps by a hash of the
 * bytes, each behind its own mutex, so two threads rarely meet on a lock.
 *
 * Bounded: each shard holds at most ceil(capacity / SHARDS) entries (capacity 0 turns
 * the cache off) and is emptied when full
 * (cheaper than LRU bookkeeping on the hot path; a working set that fits stays hot).
 * Counters are relaxed atomics: statistics, not synchronisation.
 */
#ifndef TOKSERVE_PIECE_CACHE_H
#define TOKSERVE_PIECE_CACHE_H

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

class PieceCache {
public:
    static const size_t SHARDS = 32;

    PieceCache() : per_shard_(65536 / SHARDS), hits_(0), misses_(0) {}

    void set_capacity(size_t capacity) {
        per_shard_ = (capacity + SHARDS - 1) / SHARDS;
        clear();
    }

    /* Appends the cached ids of piece p[0:n] to *out; false (and *out untouched) on a miss. */
    bool get(const unsigned char *p, size_t n, std::vector<int32_t> *out) {
        if (per_shard_ == 0) return false;
        std::string key((const char *)p, n);
        Shard &s = shards_[shard_of(p, n)];
        std::lock_guard<std::mutex> guard(s.lock);
        auto it = s.map.find(key);
        if (it == s.map.end()) {
            misses_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        out->insert(out->end(), it->second.begin(), it->second.end());
        hits_.fetch_add(1, std::memory_order_relaxed);
        return true;
    }

    void put(const unsigned char *p, size_t n, const int32_t *ids, size_t count) {
        if (per_shard_ == 0) return;
        std::string key((const char *)p, n);
        Shard &s = shards_[shard_of(p, n)];
        std::lock_guard<std::mutex> guard(s.lock);
        if (s.map.size() >= per_shard_) s.map.clear();
        s.map[key].assign(ids, ids + count);
    }

    void clear() {
        for (size_t i = 0; i < SHARDS; i++) {
            std::lock_guard<std::mutex> guard(shards_[i].lock);
            shards_[i].map.clear();
        }
    }

    uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

private:
    struct Shard {
        std::mutex lock;
        std::unordered_map<std::string, std::vector<int32_t>> map;
    };

    static size_t shard_of(const unsigned char *p, size_t n) {
        uint64_t h = 1469598103934665603ULL;  /* FNV-1a over at most 16 bytes */
        size_t m = n < 16 ? n : 16;
        for (size_t i = 0; i < m; i++) h = (h ^ p[i]) * 1099511628211ULL;
        h ^= n;
        return (size_t)((h ^ (h >> 29)) % SHARDS);
    }

    Shard shards_[SHARDS];
    size_t per_shard_;
    std::atomic<uint64_t> hits_, misses_;
};

#endif
