/* Open-addressing hash tables for the BPE model (bpe_image.h places them).
 *
 * Why not std::unordered_map: it allocates a node per entry, so loading o200k_base
 * (200k tokens) was slower than tiktoken's whole load and every lookup chased a pointer.
 * These tables are flat arrays sized to a power of two, probed linearly; they are built
 * once and only read afterwards, so concurrent readers on several threads need no lock.
 * They hold no pointers: slots refer to token bytes by offset into the vocabulary's
 * byte arena, so a table is valid at any address (a file mapped by several processes).
 * The struct of each table is a view: where its arrays are; the caller owns the memory.
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

/* Slots for n keys at most half full (u64 -> u64 tables). */
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

/* A table of ``cap`` slots (a power of two) in ``memory``; ``clear``: make it empty
 * (building), else take what is there (a built image). */
static inline void bt_u64_place(bt_u64map *m, void *memory, size_t cap, size_t size, int clear) {
    m->slots = (bt_u64slot *)memory;
    m->mask = cap - 1;
    m->size = size;
    if (clear) memset(memory, 0xFF, cap * sizeof(bt_u64slot));
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
 * - a slot holds the first 16 key bytes, so keys of up to 16 bytes (nearly every pair
 *   the merge loop asks about, most whole words) are compared without reading the
 *   decoder arena, and is 32 bytes, so it never straddles two cache lines.
 *
 * (The tag array nearly doubled CJK throughput with the piece cache off; figures in
 * benchmarks/README.md.) */

typedef struct {
    uint64_t head;  /* key bytes 0..7, zero-padded */
    uint64_t next;  /* key bytes 8..15, zero-padded */
    uint32_t off;   /* key bytes at arena + off */
    uint32_t len;
    int32_t id;
    uint32_t unused;
} bt_bytesslot;

typedef struct {
    uint16_t *tags;
    bt_bytesslot *slots;
    size_t mask;
    const unsigned char *arena;
} bt_bytesmap;

/* Slots for n keys at most 80% full (bytes -> id tables). */
static inline size_t bt_bytes_capacity(size_t n) {
    size_t cap = 16;
    while (cap * 4 < n * 5) cap <<= 1;
    return cap;
}

/* The first min(n, 8) bytes of p as one little-endian word, zero above them. Shorter
 * keys are assembled in registers from fixed-size loads: a variable-length memcpy into a
 * stack word is done as byte and half-word stores that the following 8-byte load cannot
 * take from the store buffer, a stall of a dozen cycles on every short piece (perf put
 * a fifth of a warm count's time on the multiply after it). */
static inline uint64_t bt_head(const unsigned char *p, size_t n) {
    uint64_t w = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= 8) {
        memcpy(&w, p, 8);
    } else if (n >= 4) {  /* two overlapping 4-byte loads; the overlap ORs equal bytes */
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        w = (uint64_t)lo | ((uint64_t)hi << (8 * (n - 4)));
    } else if (n > 0) {
        w = (uint64_t)p[0] | ((uint64_t)p[n >> 1] << (8 * (n >> 1))) |
            ((uint64_t)p[n - 1] << (8 * (n - 1)));
    }
#else
    memcpy(&w, p, n < 8 ? n : 8);
#endif
    return w;
}

static inline uint64_t bt_key_hash(uint64_t head, const unsigned char *p, size_t n) {
    uint64_t h = (head * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)n;
    for (size_t i = 8; i < n; i += 8)
        h = bt_mix(h ^ bt_head(p + i, n - i));
    return bt_mix(h);
}

static inline uint16_t bt_tag16(uint64_t h) {
    uint16_t tag = (uint16_t)(h >> 48);
    return tag ? tag : 1;
}

/* A table of ``cap`` slots (bt_bytes_capacity) at ``tags`` and ``slots`` whose keys are
 * in ``arena``; ``clear``: make it empty (building), else take what is there. */
static inline void bt_bytes_place(bt_bytesmap *m, uint16_t *tags, bt_bytesslot *slots,
                                  size_t cap, const unsigned char *arena, int clear) {
    m->tags = tags;
    m->slots = slots;
    m->mask = cap - 1;
    m->arena = arena;
    if (clear) memset(tags, 0, cap * sizeof(uint16_t));
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

static inline uint64_t bt_next(const unsigned char *p, size_t n) {
    return n > 8 ? bt_head(p + 8, n - 8) : 0;
}

static inline int bt_slot_is(const bt_bytesmap *m, const bt_bytesslot *s, uint64_t head,
                             const unsigned char *p, size_t n) {
    return s->head == head && s->len == n &&
           (n <= 8 || (s->next == bt_next(p, n) &&
                       (n <= 16 || bt_same_bytes(m->arena + s->off + 16, p + 16, n - 16))));
}

/* The key is arena[off:off + n]; the caller sizes the table for every key it will put. */
static inline void bt_bytes_put(bt_bytesmap *m, uint32_t off, size_t n, int32_t id) {
    const unsigned char *p = m->arena + off;
    uint64_t head = bt_head(p, n);
    uint64_t h = bt_key_hash(head, p, n);
    uint16_t tag = bt_tag16(h);
    size_t i = h & m->mask;
    while (m->tags[i]) {
        bt_bytesslot *s = &m->slots[i];
        if (m->tags[i] == tag && bt_slot_is(m, s, head, p, n)) {
            s->id = id;
            return;
        }
        i = (i + 1) & m->mask;
    }
    m->tags[i] = tag;
    m->slots[i].head = head;
    m->slots[i].next = bt_next(p, n);
    m->slots[i].off = off;
    m->slots[i].len = (uint32_t)n;
    m->slots[i].id = id;
    m->slots[i].unused = 0;
}

/* A key's hash and head, computed once: to prefetch its lines (bt_bytes_prefetch), then
 * to look it up (bt_bytes_get_hashed). */
typedef struct {
    uint64_t head, hash;
} bt_key;

static inline bt_key bt_key_of(const unsigned char *p, size_t n) {
    bt_key k;
    k.head = bt_head(p, n);
    k.hash = bt_key_hash(k.head, p, n);
    return k;
}

/* Start loading the lines a lookup of ``k`` reads first (its tag and its slot), so that
 * they arrive while other work is done: the lookups of consecutive pieces then overlap
 * their memory latency instead of paying it one after another. */
static inline void bt_bytes_prefetch(const bt_bytesmap *m, bt_key k) {
    size_t i = k.hash & m->mask;
    __builtin_prefetch(&m->tags[i]);
    __builtin_prefetch(&m->slots[i]);
}

static inline int32_t bt_bytes_get_hashed(const bt_bytesmap *m, const unsigned char *p, size_t n,
                                          bt_key k) {
    uint64_t head = k.head, h = k.hash;
    uint16_t tag = bt_tag16(h);
    size_t i = h & m->mask;
    for (;;) {
        uint16_t t = m->tags[i];
        if (t == tag && bt_slot_is(m, &m->slots[i], head, p, n)) return m->slots[i].id;
        if (t == 0) return -1;
        i = (i + 1) & m->mask;
    }
}

static inline int32_t bt_bytes_get(const bt_bytesmap *m, const unsigned char *p, size_t n) {
    return bt_bytes_get_hashed(m, p, n, bt_key_of(p, n));
}

/* ------------------------------------------------------------ the byte-pair table
 *
 * Concatenated ranks only: a dense table of 65,536 ids, the id of the two-byte token
 * a b at a << 8 | b, or BPE_NO_TOKEN (the image is filled with 0xFF bytes first). */

static const uint32_t BPE_NO_TOKEN = 0xFFFFFFFFu;

static inline uint32_t bt_two_byte_token(const uint32_t *byte_pairs, const unsigned char *q) {
    return byte_pairs[((uint32_t)q[0] << 8) | q[1]];
}

/* ------------------------------------------------------------ token filters
 *
 * One bit per hash of a byte string (FNV-1a, then a multiply for the bit index): a set
 * of every mergeable token of 3 bytes or more (and one of all their prefixes, for the
 * backtracking encoder) small enough to stay in L2. A clear bit proves absence; a set
 * one only says "look in the table". */

#define BT_FILTER_SEED 0xcbf29ce484222325ULL
#define BT_TOKEN_BITS 21   /* 256 KiB */
#define BT_PREFIX_BITS 22  /* 512 KiB */

static inline uint64_t bt_filter_step(uint64_t h, unsigned char b) {
    return (h ^ b) * 0x100000001b3ULL;
}

static inline uint64_t bt_filter_bit(uint64_t h, unsigned bits) {
    return (h * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
}

/* The token filter's bit for a key whose running hash (bt_filter_step from
 * BT_FILTER_SEED over all its bytes) is h. */
static inline int bt_filter_has_hash(const uint64_t *filter, uint64_t h) {
    uint64_t bit = bt_filter_bit(h, BT_TOKEN_BITS);
    return (int)(filter[bit >> 6] >> (bit & 63) & 1);
}

static inline int bt_filter_has(const uint64_t *filter, const unsigned char *p, size_t n) {
    uint64_t h = BT_FILTER_SEED;
    for (size_t k = 0; k < n; k++) h = bt_filter_step(h, p[k]);
    return bt_filter_has_hash(filter, h);
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
