/* piece_bpe_vocab.h: the piece BPE model's vocabulary, piece bytes <-> id.
 *
 * A piece is a string of the tokenizer.json vocabulary ("▁Hello", "<0xE4>", "<unk>"),
 * held as its UTF-8 bytes. Why these tables and not std::unordered_map: a map allocates a
 * node per piece (Gemma 3 has 262,144) and every lookup chases a pointer; here the
 * pieces sit in one byte arena and the hash table is a flat array of 16-byte slots
 * (32 bits of hash, the id, where the bytes are), at most half full, probed linearly.
 *
 * The merge loop never looks pieces up by bytes: it works on ids. Bytes are looked up
 * when a chunk's characters become its first symbols (one lookup per character), so
 * every character of the Basic Multilingual Plane also has a direct entry in ``bmp_``
 * (256 KiB, -1 when that character is no piece); characters above it (emoji) go
 * through the hash table.
 *
 * Invariant: read-only after ``finish()``, so any number of threads may read at once.
 */
#ifndef TOKSERVE_PIECE_BPE_VOCAB_H
#define TOKSERVE_PIECE_BPE_VOCAB_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "piece_bpe_pages.h"

namespace piece_bpe {

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return x;
}

/* The first min(n, 8) bytes at p as a little-endian word, from fixed-size loads only
 * (short keys are the common case: a variable-length copy costs more than the hash). */
static inline uint64_t load_head(const unsigned char *p, size_t n) {
    uint64_t w = 0;
    if (n >= 8) {
        memcpy(&w, p, 8);
    } else if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        w = (uint64_t)lo | ((uint64_t)hi << (8 * (n - 4)));
    } else if (n > 0) {
        w = (uint64_t)p[0] | ((uint64_t)p[n >> 1] << (8 * (n >> 1))) |
            ((uint64_t)p[n - 1] << (8 * (n - 1)));
    }
    return w;
}

/* A hash of the bytes p[0:n]; never 0 (the chunk cache uses 0 for an empty slot). */
static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL * (n + 1);
    size_t i = 0;
    for (; i + 8 < n; i += 8) h = (h ^ load_head(p + i, 8)) * 0xbf58476d1ce4e5b9ULL;
    h = mix64(h ^ load_head(p + i, n - i));
    return h ? h : 1;
}

/* p[0:n] == q[0:n], inline: the keys compared are a few bytes long, and a call to
 * memcmp for each cost more than the comparison. */
static inline bool same_bytes(const unsigned char *p, const unsigned char *q, size_t n) {
    for (; n > 8; p += 8, q += 8, n -= 8)
        if (load_head(p, 8) != load_head(q, 8)) return false;
    return load_head(p, n) == load_head(q, n);
}

/* The UTF-8 character at p (avail > 0 bytes there): returns its length and sets *cp to
 * its code point; a byte that starts no well-formed character is a 1-byte "character"
 * with *cp = -1 (the model's input is the UTF-8 of a str, so that never happens there;
 * it is defined only so that other bytes cannot read out of bounds). */
static inline size_t utf8_char(const unsigned char *p, size_t avail, int32_t *cp) {
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = (int32_t)c;
        return 1;
    }
    if (c >= 0xC2 && c < 0xE0 && avail >= 2 && (p[1] & 0xC0) == 0x80) {
        *cp = (int32_t)(((c & 0x1F) << 6) | (p[1] & 0x3F));
        return 2;
    }
    if (c >= 0xE0 && c < 0xF0 && avail >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
        int32_t v = (int32_t)(((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F));
        if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF)) {
            *cp = v;
            return 3;
        }
    }
    if (c >= 0xF0 && c < 0xF5 && avail >= 4 && (p[1] & 0xC0) == 0x80 &&
        (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
        int32_t v = (int32_t)(((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) |
                              ((p[2] & 0x3F) << 6) | (p[3] & 0x3F));
        if (v >= 0x10000 && v <= 0x10FFFF) {
            *cp = v;
            return 4;
        }
    }
    *cp = -1;
    return 1;
}

/* The start of the character that ends at p + end (end > 0): the last byte that is not
 * a continuation byte, looking back at most 4 bytes. */
static inline size_t utf8_char_start(const unsigned char *p, size_t end) {
    size_t j = end - 1;
    while (j > 0 && end - j < 4 && (p[j] & 0xC0) == 0x80) j--;
    return j;
}

/* Appends the UTF-8 of a str's code points (CPython's representation: ``kind`` 1, 2 or
 * 4 bytes per code point at ``data``, n of them) to *out; false for a lone surrogate,
 * which UTF-8 cannot hold. Loading reads a million merge pieces: asking CPython for each
 * one's UTF-8 would allocate and keep a copy inside every non-ASCII str. */
static inline bool append_utf8(int kind, const void *data, size_t n, std::vector<unsigned char> *out) {
    for (size_t i = 0; i < n; i++) {
        uint32_t c = kind == 1 ? ((const uint8_t *)data)[i]
                   : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
        if (c < 0x80) {
            out->push_back((unsigned char)c);
        } else if (c < 0x800) {
            out->push_back((unsigned char)(0xC0 | (c >> 6)));
            out->push_back((unsigned char)(0x80 | (c & 0x3F)));
        } else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF) return false;
            out->push_back((unsigned char)(0xE0 | (c >> 12)));
            out->push_back((unsigned char)(0x80 | ((c >> 6) & 0x3F)));
            out->push_back((unsigned char)(0x80 | (c & 0x3F)));
        } else {
            out->push_back((unsigned char)(0xF0 | (c >> 18)));
            out->push_back((unsigned char)(0x80 | ((c >> 12) & 0x3F)));
            out->push_back((unsigned char)(0x80 | ((c >> 6) & 0x3F)));
            out->push_back((unsigned char)(0x80 | (c & 0x3F)));
        }
    }
    return true;
}

class Vocab {
public:
    static constexpr uint32_t NO_ENTRY = 0xFFFFFFFFu;

    void reserve(size_t pieces, size_t bytes) {
        entries_.reserve(pieces);
        arena_.reserve(bytes);
    }

    /* Adds the piece p[0:n] with ``id`` (building only; a piece is added once). */
    void add(const unsigned char *p, size_t n, uint32_t id) {
        Entry e;
        e.off = (uint32_t)arena_.size();
        e.len = (uint32_t)n;
        e.id = id;
        arena_.insert(arena_.end(), p, p + n);
        entries_.push_back(e);
        if (id + 1 > size_) size_ = id + 1;
    }

    /* Builds the lookup tables from what ``add`` was given. */
    void finish() {
        size_t cap = 16;
        while (cap < 2 * entries_.size() + 2) cap <<= 1;
        slots_.assign(cap, Slot{0, 0, 0, 0});
        mask_ = cap - 1;
        by_id_.assign(size_, NO_ENTRY);
        bmp_.assign(0x10000, -1);
        injective_ = true;
        has_empty_ = false;
        for (size_t i = 0; i < entries_.size(); i++) {
            const Entry &e = entries_[i];
            const unsigned char *p = arena_.data() + e.off;
            uint64_t h = hash_bytes(p, e.len);
            size_t k = h & mask_;
            while (slots_[k].tag) k = (k + 1) & mask_;
            slots_[k] = Slot{tag_of(h), e.id, e.off, e.len};
            if (by_id_[e.id] == NO_ENTRY)
                by_id_[e.id] = (uint32_t)i;
            else
                injective_ = false;  /* two pieces share an id */
            if (e.len == 0) has_empty_ = true;
            int32_t cp;
            if (e.len > 0 && e.len < 4 && utf8_char(p, e.len, &cp) == e.len && cp >= 0)
                bmp_[cp] = (int32_t)e.id;
        }
    }

    /* The id of the piece p[0:n] whose hash_bytes is h, or -1. */
    int32_t find_hashed(const unsigned char *p, size_t n, uint64_t h) const {
        uint32_t tag = tag_of(h);
        for (size_t k = h & mask_;; k = (k + 1) & mask_) {
            const Slot &s = slots_[k];
            if (s.tag == tag && s.len == n && same_bytes(arena_.data() + s.off, p, n))
                return (int32_t)s.id;
            if (s.tag == 0) return -1;
        }
    }

    int32_t find(const unsigned char *p, size_t n) const {
        return find_hashed(p, n, hash_bytes(p, n));
    }

    /* Starts loading what find_hashed(p, n, h) reads first, so that the lookups of a
     * batch overlap their memory latency (loading a vocabulary looks up 1.5 million
     * merge pieces in a table far larger than the caches). */
    void prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }

    /* Then the piece bytes of the slot it will probably compare. */
    void prefetch_piece(uint64_t h) const {
        const Slot &s = slots_[h & mask_];
        if (s.tag) __builtin_prefetch(arena_.data() + s.off);
    }

    /* The id of the single character p[0:n] whose code point is cp (-1: malformed), or -1. */
    int32_t find_char(const unsigned char *p, size_t n, int32_t cp) const {
        if (cp >= 0 && cp < 0x10000) return bmp_[cp];
        return find(p, n);
    }

    /* One past the largest id (0 for an empty vocabulary). */
    size_t size() const { return size_; }
    size_t count() const { return entries_.size(); }

    /* False when two pieces share an id or a piece is empty: then a symbol's piece is
     * not determined by its id, and the model takes only its exact (heap) merge path. */
    bool plain() const { return injective_ && !has_empty_; }

    /* The piece of ``id`` (the first added, if several share it); false if none. */
    bool piece(uint32_t id, const unsigned char **p, size_t *n) const {
        if (id >= size_ || by_id_[id] == NO_ENTRY) return false;
        const Entry &e = entries_[by_id_[id]];
        *p = arena_.data() + e.off;
        *n = e.len;
        return true;
    }

private:
    struct Entry {
        uint32_t off, len, id;
    };
    std::vector<unsigned char> arena_;
    std::vector<Entry, PagesAllocator<Entry>> entries_;
    struct Slot {
        uint32_t tag;  /* hash bits, never 0; 0 = empty */
        uint32_t id, off, len;
    };
    static uint32_t tag_of(uint64_t h) {
        uint32_t t = (uint32_t)(h >> 32);
        return t ? t : 1;
    }
    std::vector<Slot, PagesAllocator<Slot>> slots_;
    size_t mask_ = 0;
    std::vector<uint32_t> by_id_;  /* id -> entry index */
    std::vector<int32_t> bmp_;     /* code point < 0x10000 -> id of that one-character piece */
    size_t size_ = 0;
    bool injective_ = true, has_empty_ = false;
};

}  // namespace piece_bpe

#endif
