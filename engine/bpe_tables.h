/* Open-addressing hash tables for the BPE model (engine/_bpe.pyx).
 *
 * Why not std::unordered_map: it allocates a node per entry, so loading o200k_base
 * (200k tokens) was slower than tiktoken's whole load and every lookup chased a pointer.
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

/* ------------------------------------------------------------ bytes -> id
 *
 * The merge loop's lookups are mostly misses (two adjacent symbols seldom concatenate
 * to a token) and mostly short keys, and the slots of a 200k vocabulary do not fit in
 * L2. So, as in hashbrown:
 *
 * - a probe first reads a separate array of 16-bit tags (0 = empty), one per slot:
 *   256 KiB - 512 KiB, probed linearly, so a miss usually ends in one cache line and a
 *   non-matching slot is touched 1 time in 65,535;
 * - with the slots out of the probe's way the table can be 80% full;
 * - a slot holds the first 8 key bytes, so keys of up to 8 bytes (nearly every pair
 *   the merge loop asks about) are compared without reading the decoder arena.
 *
 * (The tag array nearly doubled CJK throughput with the piece cache off; figures in
 * benchmarks/README.md.) */

typedef struct {
    uint64_t head;  /* key bytes 0..7, zero-padded */
    const unsigned char *ptr;
    uint32_t len;
    int32_t id;
} bt_bytesslot;

typedef struct {
    uint16_t *tags;
    bt_bytesslot *slots;
    size_t mask;
} bt_bytesmap;

static inline uint64_t bt_head(const unsigned char *p, size_t n) {
    uint64_t w = 0;
    memcpy(&w, p, n < 8 ? n : 8);
    return w;
}

static inline uint64_t bt_key_hash(uint64_t head, const unsigned char *p, size_t n) {
    uint64_t h = (head * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)n;
    for (size_t i = 8; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i < 8 ? n - i : 8);
        h = bt_mix(h ^ w);
    }
    return bt_mix(h);
}

static inline uint16_t bt_tag16(uint64_t h) {
    uint16_t tag = (uint16_t)(h >> 48);
    return tag ? tag : 1;
}

static inline int bt_bytes_init(bt_bytesmap *m, size_t expected) {
    size_t cap = 16;
    while (cap * 4 < expected * 5) cap <<= 1;  /* at most 80% full */
    m->tags = (uint16_t *)calloc(cap, sizeof(uint16_t));
    m->slots = (bt_bytesslot *)malloc(cap * sizeof(bt_bytesslot));
    if (!m->tags || !m->slots) {
        free(m->tags);
        free(m->slots);
        m->tags = NULL;
        m->slots = NULL;
        return -1;
    }
    m->mask = cap - 1;
    return 0;
}

static inline void bt_bytes_free(bt_bytesmap *m) {
    free(m->tags);
    free(m->slots);
    m->tags = NULL;
    m->slots = NULL;
    m->mask = 0;
}

/* Equal bytes, compared inline: the keys past 8 bytes the merge loop compares are a few
 * bytes long, and a call to memcmp for each showed in profiles of Cyrillic text. */
static inline int bt_same_bytes(const unsigned char *a, const unsigned char *b, size_t n) {
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
    }
    for (; n; a++, b++, n--)
        if (*a != *b) return 0;
    return 1;
}

static inline int bt_slot_is(const bt_bytesslot *s, uint64_t head, const unsigned char *p,
                             size_t n) {
    return s->head == head && s->len == n && (n <= 8 || bt_same_bytes(s->ptr + 8, p + 8, n - 8));
}

/* Keys are borrowed: ``p`` must outlive the table (it points into the decoder arena).
 * The caller sizes the table (``expected``) for every key it will put. */
static inline void bt_bytes_put(bt_bytesmap *m, const unsigned char *p, size_t n, int32_t id) {
    uint64_t head = bt_head(p, n);
    uint64_t h = bt_key_hash(head, p, n);
    uint16_t tag = bt_tag16(h);
    size_t i = h & m->mask;
    while (m->tags[i]) {
        bt_bytesslot *s = &m->slots[i];
        if (m->tags[i] == tag && bt_slot_is(s, head, p, n)) {
            s->id = id;
            return;
        }
        i = (i + 1) & m->mask;
    }
    m->tags[i] = tag;
    m->slots[i].head = head;
    m->slots[i].ptr = p;
    m->slots[i].len = (uint32_t)n;
    m->slots[i].id = id;
}

static inline int32_t bt_bytes_get(const bt_bytesmap *m, const unsigned char *p, size_t n) {
    uint64_t head = bt_head(p, n);
    uint64_t h = bt_key_hash(head, p, n);
    uint16_t tag = bt_tag16(h);
    size_t i = h & m->mask;
    for (;;) {
        uint16_t t = m->tags[i];
        if (t == tag && bt_slot_is(&m->slots[i], head, p, n)) return m->slots[i].id;
        if (t == 0) return -1;
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
