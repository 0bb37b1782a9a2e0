/* piece_bpe_merges.h: the merge table, (left id, right id) -> (rank, merged id).
 *
 * tokenizers keeps ``AHashMap<(u32, u32), (u32, u32)>`` built by collecting the merges
 * list in order, so when a pair is listed twice the LATER entry (its rank) wins; ``put``
 * does the same. Ranks are positions in the list (after tokenizers drops "#version"
 * lines of string merges), so a rank also names its merged id: ``merged(rank)`` answers
 * the merge loop's stale-entry check without keeping the id in every heap entry.
 *
 * A flat open-addressing array of 16-byte slots (key, value), at most 5/8 full, probed
 * linearly: one cache line per lookup in the common case. Read-only after building.
 */
#ifndef TOKSERVE_PIECE_BPE_MERGES_H
#define TOKSERVE_PIECE_BPE_MERGES_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "piece_bpe_pages.h"
#include "piece_bpe_vocab.h"

namespace piece_bpe {

class Merges {
public:
    static constexpr uint64_t NONE = 0xFFFFFFFFFFFFFFFFULL;

    /* Room for ``n`` merges (building; before any ``put``). */
    void reserve(size_t n) {
        size_t cap = 16;
        while (cap * 5 < n * 8) cap <<= 1;
        slots_.assign(cap, Slot{NONE, 0});
        mask_ = cap - 1;
        merged_.clear();
        merged_.reserve(n);
        count_ = 0;
    }

    /* Records merge number ``rank`` (ranks are given in increasing order, from 0). */
    void put(uint32_t left, uint32_t right, uint32_t new_id) {
        uint32_t rank = (uint32_t)merged_.size();
        merged_.push_back(new_id);
        uint64_t key = ((uint64_t)left << 32) | right;
        uint64_t val = ((uint64_t)rank << 32) | new_id;
        if ((count_ + 1) * 8 > slots_.size() * 5) grow();
        size_t i = slot_of(key);
        while (slots_[i].key != NONE && slots_[i].key != key) i = (i + 1) & mask_;
        if (slots_[i].key == NONE) count_++;
        slots_[i].key = key;
        slots_[i].val = val;  /* a repeated pair: the later rank wins, as in tokenizers */
    }

    /* rank << 32 | merged id of the pair (left, right), or NONE. */
    inline uint64_t find(uint32_t left, uint32_t right) const {
        uint64_t key = ((uint64_t)left << 32) | right;
        for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
            const Slot &s = slots_[i];
            if (s.key == key) return s.val;
            if (s.key == NONE) return NONE;
        }
    }

    /* Starts loading the slot put or find of (left, right) reads first. */
    inline void prefetch(uint32_t left, uint32_t right) const {
        __builtin_prefetch(&slots_[slot_of(((uint64_t)left << 32) | right)]);
    }

    /* The id merge number ``rank`` makes. */
    inline uint32_t merged(uint32_t rank) const { return merged_[rank]; }

    /* Distinct pairs. */
    size_t count() const { return count_; }

private:
    struct Slot {
        uint64_t key, val;
    };

    void grow() {
        std::vector<Slot, PagesAllocator<Slot>> old;
        old.swap(slots_);
        size_t cap = old.size() * 2;
        slots_.assign(cap, Slot{NONE, 0});
        mask_ = cap - 1;
        for (const Slot &s : old) {
            if (s.key == NONE) continue;
            size_t i = slot_of(s.key);
            while (slots_[i].key != NONE) i = (i + 1) & mask_;
            slots_[i] = s;
        }
    }

    /* A full 64-bit mix: a pair's two ids are dense small numbers in the two halves of
     * the key, and a cheaper multiplicative hash of that clustered the table badly
     * (long linear probes on every lookup). */
    inline size_t slot_of(uint64_t key) const { return (size_t)(mix64(key) & mask_); }

    std::vector<Slot, PagesAllocator<Slot>> slots_;
    size_t mask_ = 0;
    size_t count_ = 0;
    std::vector<uint32_t, PagesAllocator<uint32_t>> merged_;  /* rank -> merged id */
};

/* The (last character of a, first character of b) pairs of all merges (a, b), as code
 * points: where two adjacent characters form no such pair, no merge can ever join the
 * symbols on either side (piece_bpe_model.h says why), so a chunk is cut there. Pairs of
 * ASCII characters, most of them, are answered from a 2 KiB bitmap; others from a flat
 * table at most half full. Read-only after building. */
class CharPairs {
public:
    void add(int32_t last, int32_t first) {
        if (last < 0 || first < 0) return;
        if (last < 0x10000) ends_[last >> 6] |= 1ULL << (last & 63);
        if (first < 0x10000) starts_[first >> 6] |= 1ULL << (first & 63);
        if (last < 128 && first < 128) {
            ascii_[last * 2 + (first >> 6)] |= 1ULL << (first & 63);
            return;
        }
        if ((count_ + 1) * 2 > slots_.size()) grow();
        uint64_t k = key(last, first);
        size_t i = slot_of(k);
        while (slots_[i] != EMPTY && slots_[i] != k) i = (i + 1) & (slots_.size() - 1);
        if (slots_[i] == EMPTY) {
            slots_[i] = k;
            count_++;
        }
    }

    /* May a merge join a symbol ending with ``last`` to one starting with ``first``?
     * (A negative character is unknown: yes.) */
    inline bool joins(int32_t last, int32_t first) const {
        if (last < 0 || first < 0) return true;
        if (last < 128 && first < 128) return (ascii_[last * 2 + (first >> 6)] >> (first & 63)) & 1;
        /* a character that ends no merge's left piece (or starts no right one) joins
         * nothing: most CJK characters of a small vocabulary, answered from 8 KiB */
        if (last < 0x10000 && !((ends_[last >> 6] >> (last & 63)) & 1)) return false;
        if (first < 0x10000 && !((starts_[first >> 6] >> (first & 63)) & 1)) return false;
        uint64_t k = key(last, first);
        for (size_t i = slot_of(k);; i = (i + 1) & (slots_.size() - 1)) {
            if (slots_[i] == k) return true;
            if (slots_[i] == EMPTY) return false;
        }
    }

private:
    static constexpr uint64_t EMPTY = ~0ULL;
    static uint64_t key(int32_t last, int32_t first) {
        return ((uint64_t)(uint32_t)last << 32) | (uint32_t)first;
    }
    inline size_t slot_of(uint64_t k) const { return (size_t)(mix64(k) & (slots_.size() - 1)); }

    void grow() {
        std::vector<uint64_t> old(slots_.size() * 2, EMPTY);
        old.swap(slots_);
        for (uint64_t k : old) {
            if (k == EMPTY) continue;
            size_t i = slot_of(k);
            while (slots_[i] != EMPTY) i = (i + 1) & (slots_.size() - 1);
            slots_[i] = k;
        }
    }

    uint64_t ascii_[256] = {};  /* bit (last, first) for ASCII pairs */
    uint64_t ends_[1024] = {};    /* BMP characters some merge's left piece ends with */
    uint64_t starts_[1024] = {};  /* ... and some merge's right piece starts with */
    std::vector<uint64_t> slots_ = std::vector<uint64_t>(16, EMPTY);  /* at most half full */
    size_t count_ = 0;
};

}  // namespace piece_bpe

#endif
