/* Open-addressing hash tables for the BPE model (engine/_bpe.pyx).
 *
 * Why not std::unordered_map: it allocates a node per entry, so loading o200k_base
 * (200k tokens, ~450k derived merges) cost ~0.9 s and every lookup chased a pointer.
 * These tables are flat arrays sized to a power of two at most half full, probed
 * linearly; they are built once at load and only read afterwards, so concurrent
 * readers on several threads need no lock.
 */
#ifndef ENGINE_BPE_TABLES_H
#define ENGINE_BPE_TABLES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t bt_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t bt_hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = bt_mix(h ^ w);
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    return bt_mix(h ^ w ^ ((uint64_t)n << 56));
}

static inline size_t bt_capacity_for(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) cap <<= 1;
    return cap;
}

/* ------------------------------------------------------------ u64 -> u64 */

#define BT_EMPTY 0xFFFFFFFFFFFFFFFFULL

typedef struct {
    uint64_t key;
    uint64_t val;
} bt_u64slot;

typedef struct {
    bt_u64slot *slots;
    size_t mask;
    size_t size;
} bt_u64map;

static inline int bt_u64_init(bt_u64map *m, size_t expected) {
    size_t cap = bt_capacity_for(expected);
    m->slots = (bt_u64slot *)malloc(cap * sizeof(bt_u64slot));
    if (!m->slots) return -1;
    memset(m->slots, 0xFF, cap * sizeof(bt_u64slot));
    m->mask = cap - 1;
    m->size = 0;
    return 0;
}

static inline void bt_u64_free(bt_u64map *m) {
    free(m->slots);
    m->slots = NULL;
    m->mask = 0;
    m->size = 0;
}

/* Insert if absent (first writer wins: merges are given in rank order). */
static inline void bt_u64_put_new(bt_u64map *m, uint64_t key, uint64_t val) {
    size_t i = bt_mix(key) & m->mask;
    while (m->slots[i].key != BT_EMPTY) {
        if (m->slots[i].key == key) return;
        i = (i + 1) & m->mask;
    }
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->size++;
}

static inline uint64_t bt_u64_get(const bt_u64map *m, uint64_t key) {
    size_t i = bt_mix(key) & m->mask;
    for (;;) {
        uint64_t k = m->slots[i].key;
        if (k == key) return m->slots[i].val;
        if (k == BT_EMPTY) return BT_EMPTY;
        i = (i + 1) & m->mask;
    }
}

/* ------------------------------------------------------------ bytes -> id */

typedef struct {
    const unsigned char *ptr;
    uint32_t len;
    int32_t id;     /* -1 = empty slot */
    uint32_t tag;   /* high bits of the hash: most misses end without touching ptr */
    uint32_t pad;
} bt_bytesslot;

typedef struct {
    bt_bytesslot *slots;
    size_t mask;
} bt_bytesmap;

static inline int bt_bytes_init(bt_bytesmap *m, size_t expected) {
    size_t cap = bt_capacity_for(expected);
    m->slots = (bt_bytesslot *)malloc(cap * sizeof(bt_bytesslot));
    if (!m->slots) return -1;
    for (size_t i = 0; i < cap; i++) m->slots[i].id = -1;
    m->mask = cap - 1;
    return 0;
}

static inline void bt_bytes_free(bt_bytesmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->mask = 0;
}

/* Keys are borrowed: ``p`` must outlive the table (it points into the decoder arena). */
static inline void bt_bytes_put(bt_bytesmap *m, const unsigned char *p, size_t n, int32_t id) {
    uint64_t h = bt_hash_bytes(p, n);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = h & m->mask;
    while (m->slots[i].id >= 0) {
        bt_bytesslot *s = &m->slots[i];
        if (s->tag == tag && s->len == n && memcmp(s->ptr, p, n) == 0) {
            s->id = id;
            return;
        }
        i = (i + 1) & m->mask;
    }
    m->slots[i].ptr = p;
    m->slots[i].len = (uint32_t)n;
    m->slots[i].id = id;
    m->slots[i].tag = tag;
}

static inline int32_t bt_bytes_get(const bt_bytesmap *m, const unsigned char *p, size_t n) {
    uint64_t h = bt_hash_bytes(p, n);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = h & m->mask;
    for (;;) {
        const bt_bytesslot *s = &m->slots[i];
        if (s->id < 0) return -1;
        if (s->tag == tag && s->len == n && memcmp(s->ptr, p, n) == 0) return s->id;
        i = (i + 1) & m->mask;
    }
}

/* ------------------------------------------------------------ tiktoken rank files */

static inline int bt_b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decode standard base64 (with '=' padding) into out; returns bytes written or -1. */
static inline ptrdiff_t bt_b64_decode(const unsigned char *s, size_t n, unsigned char *out) {
    uint32_t acc = 0;
    int bits = 0;
    ptrdiff_t w = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        if (s[i] == '=') break;
        int v = bt_b64_value(s[i]);
        if (v < 0) return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[w++] = (unsigned char)((acc >> bits) & 0xFF);
        }
    }
    for (; i < n; i++)
        if (s[i] != '=') return -1;
    return w;
}

#endif
