/* bpe_chars.h: characters that may enter the merge loop as their own token.
 *
 * Why: in a word of Cyrillic, Greek or CJK the merge loop starts from bytes, and its
 * first merges only rebuild characters (two bytes into a Cyrillic letter, three into a
 * CJK ideograph): half the merges of the benchmark's other scripts and more of its CJK,
 * each a scan for the lowest rank and two pair lookups. Where it is exact, the loop
 * starts from the character's token instead.
 *
 * When it is exact (concatenated ranks, rank = id; B is the 2- or 3-byte sequence of one
 * character c, T its token, r the highest rank of the merges that build T from B's bytes
 * alone, a the byte before c in the piece and z the one after):
 *
 *   1. B's bytes alone merge into T (the table holds T only then);
 *   2. every token that begins or ends with B and is longer has a rank above r;
 *   3. no token ends with a followed by a proper prefix of B (a, or a + B[0:2]);
 *   4. no token begins with a proper suffix of B followed by z.
 *
 * Proof sketch: by 3 and 4 the pieces of B never merge with anything outside B until T
 * is whole, so until then the loop from bytes (O) makes the same merges outside B as the
 * loop from T (P), interleaved with B's own. P merges T with a neighbour only at a rank
 * above r (by 2), and while O still holds pieces of B it has a pair ranked at most r,
 * so O finishes T first; from then on both hold the same symbols. Each character's
 * conditions mention only bytes of the piece, so they hold for every character at once.
 * Ties cannot break it: equal ranks are equal bytes, and T's pairs are longer than B.
 *
 * 1 and 2 are facts of the vocabulary: a table by code point (2- and 3-byte sequences,
 * overlong forms refused, so each code point has one byte sequence). 3 and 4 depend on
 * the neighbours: 256-bit masks of the bytes a that some token puts before a lead byte
 * (or a lead byte and its first continuation byte) at its end, and of the bytes z that
 * some token puts after a continuation byte (or two) at its start. The masks say "maybe"
 * for nothing: every bit is a token that exists.
 */
#ifndef TOKSERVE_BPE_CHARS_H
#define TOKSERVE_BPE_CHARS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bpe_tables.h"

/* Sizes, in 64-bit words, of the parts of the table (one image table, in this order). */
static const size_t BPE_CHAR_IDS = 0x10000;          /* uint32 per code point below 0x10000 */
static const size_t BPE_CHAR_MASK_WORDS = 4;         /* 256 bits */
static const size_t BPE_CHAR_LEFT1 = 64;             /* by lead byte 0xC0..0xFF */
static const size_t BPE_CHAR_LEFT2 = 1024;           /* by 3-byte lead (low 4 bits), continuation */
static const size_t BPE_CHAR_RIGHT1 = 64;            /* by continuation byte */
static const size_t BPE_CHAR_RIGHT2 = 4096;          /* by two continuation bytes */
/* Where each part starts, in words from the table's start. */
static const size_t BPE_CHAR_AT_LEFT1 = BPE_CHAR_IDS / 2;
static const size_t BPE_CHAR_AT_LEFT2 = BPE_CHAR_AT_LEFT1 + BPE_CHAR_MASK_WORDS * BPE_CHAR_LEFT1;
static const size_t BPE_CHAR_AT_RIGHT1 = BPE_CHAR_AT_LEFT2 + BPE_CHAR_MASK_WORDS * BPE_CHAR_LEFT2;
static const size_t BPE_CHAR_AT_RIGHT2 = BPE_CHAR_AT_RIGHT1 + BPE_CHAR_MASK_WORDS * BPE_CHAR_RIGHT1;
static const size_t BPE_CHAR_WORDS = BPE_CHAR_AT_RIGHT2 + BPE_CHAR_MASK_WORDS * BPE_CHAR_RIGHT2;
static const uint32_t BPE_CHAR_NONE = 0xFFFFFFFFu;

/* The table as the merge loop reads it; ``ids`` NULL: none (a merges list). */
struct BpeChars {
    const uint32_t *ids;
    const uint64_t *left1, *left2, *right1, *right2;
};

static inline BpeChars bpe_chars_view(const uint64_t *table) {
    return {(const uint32_t *)table, table + BPE_CHAR_AT_LEFT1, table + BPE_CHAR_AT_LEFT2,
            table + BPE_CHAR_AT_RIGHT1, table + BPE_CHAR_AT_RIGHT2};
}

static inline bool bpe_char_cont(unsigned b) { return (b & 0xC0) == 0x80; }

/* The length (2 or 3) and code point of the character whose bytes start p[i:n], or 0
 * for anything else (ASCII, a 4-byte form, a broken or overlong sequence). */
static inline size_t bpe_char_code(const unsigned char *p, size_t i, size_t n, uint32_t *cp) {
    unsigned b = p[i];
    if (b >= 0xC2 && b < 0xE0) {
        if (i + 2 > n || !bpe_char_cont(p[i + 1])) return 0;
        *cp = ((uint32_t)(b & 0x1F) << 6) | (p[i + 1] & 0x3F);
        return 2;
    }
    if (b >= 0xE0 && b < 0xF0) {
        if (i + 3 > n || !bpe_char_cont(p[i + 1]) || !bpe_char_cont(p[i + 2])) return 0;
        *cp = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
        return *cp >= 0x800 ? 3 : 0;
    }
    return 0;
}

static inline size_t bpe_char_left2_at(unsigned lead, unsigned cont) {
    return ((lead & 0x0F) << 6) | (cont & 0x3F);
}

static inline size_t bpe_char_right2_at(unsigned c1, unsigned c2) {
    return ((c1 & 0x3F) << 6) | (c2 & 0x3F);
}

static inline bool bpe_char_bit(const uint64_t *masks, size_t at, unsigned byte) {
    return masks[at * BPE_CHAR_MASK_WORDS + (byte >> 6)] >> (byte & 63) & 1;
}

/* 2 or 3 (and *id) when the character at p[i] may enter the merge of p[0:n] as its
 * token (conditions 1-4 above), else 0. */
static inline size_t bpe_char_at(const BpeChars &c, const unsigned char *p, size_t i, size_t n,
                                 int32_t *id) {
    uint32_t cp = 0;
    size_t k = bpe_char_code(p, i, n, &cp);
    if (!k) return 0;
    uint32_t t = c.ids[cp];
    if (t == BPE_CHAR_NONE) return 0;
    if (i > 0) {
        unsigned a = p[i - 1];
        if (bpe_char_bit(c.left1, p[i] - 0xC0, a)) return 0;
        if (k == 3 && bpe_char_bit(c.left2, bpe_char_left2_at(p[i], p[i + 1]), a)) return 0;
    }
    if (i + k < n) {
        unsigned z = p[i + k];
        if (bpe_char_bit(c.right1, p[i + k - 1] & 0x3F, z)) return 0;
        if (k == 3 && bpe_char_bit(c.right2, bpe_char_right2_at(p[i + 1], p[i + 2]), z)) return 0;
    }
    *id = (int32_t)t;
    return k;
}

/* Fill ``table`` (BPE_CHAR_WORDS, zeroed) from a concatenated-ranks vocabulary: token
 * ``id`` is text[start[id]:start[id] + len[id]] where mergeable[id], and ``pairs`` is
 * the dense byte-pair table (bpe_tables.h). */
static inline void bpe_chars_fill(uint64_t *table, const unsigned char *text,
                                  const uint32_t *start, const uint32_t *len,
                                  const uint8_t *mergeable, size_t n_ids, const uint32_t *pairs) {
    uint32_t *ids = (uint32_t *)table;
    uint64_t *left1 = table + BPE_CHAR_AT_LEFT1, *left2 = table + BPE_CHAR_AT_LEFT2;
    uint64_t *right1 = table + BPE_CHAR_AT_RIGHT1, *right2 = table + BPE_CHAR_AT_RIGHT2;
    auto set = [](uint64_t *masks, size_t at, unsigned byte) {
        masks[at * BPE_CHAR_MASK_WORDS + (byte >> 6)] |= 1ULL << (byte & 63);
    };
    std::vector<uint32_t> edge(BPE_CHAR_IDS, BPE_CHAR_NONE);  /* condition 2's lowest rank */
    for (size_t id = 0; id < n_ids; id++) {
        if (!mergeable[id]) continue;
        const unsigned char *q = text + start[id];
        size_t n = len[id];
        uint32_t cp = 0;
        if (n >= 2 && q[n - 1] >= 0xC0) set(left1, q[n - 1] - 0xC0, q[n - 2]);
        if (n >= 3 && q[n - 2] >= 0xE0 && q[n - 2] < 0xF0 && bpe_char_cont(q[n - 1]))
            set(left2, bpe_char_left2_at(q[n - 2], q[n - 1]), q[n - 3]);
        if (n >= 2 && bpe_char_cont(q[0])) set(right1, q[0] & 0x3F, q[1]);
        if (n >= 3 && bpe_char_cont(q[0]) && bpe_char_cont(q[1]))
            set(right2, bpe_char_right2_at(q[0], q[1]), q[2]);
        size_t k = bpe_char_code(q, 0, n, &cp);
        if (k && n > k && id < edge[cp]) edge[cp] = (uint32_t)id;
        for (size_t m = 2; m <= 3; m++)
            if (n > m && bpe_char_code(q, n - m, n, &cp) == m && id < edge[cp])
                edge[cp] = (uint32_t)id;
    }
    for (size_t i = 0; i < BPE_CHAR_IDS; i++) ids[i] = BPE_CHAR_NONE;
    for (size_t id = 0; id < n_ids; id++) {
        if (!mergeable[id]) continue;
        const unsigned char *q = text + start[id];
        size_t n = len[id];
        uint32_t cp = 0;
        if (bpe_char_code(q, 0, n, &cp) != n) continue;  /* not exactly one character */
        uint32_t highest = (uint32_t)id;  /* the last merge makes the token itself */
        if (n == 3) {  /* the first merge joins the lower-ranked of the two byte pairs */
            uint32_t a = bt_two_byte_token(pairs, q), b = bt_two_byte_token(pairs, q + 1);
            uint32_t first = a < b ? a : b;  /* BPE_NO_TOKEN is above every id */
            if (first == BPE_NO_TOKEN) continue;  /* the bytes never merge: condition 1 */
            highest = first > highest ? first : highest;
        }
        if (edge[cp] == BPE_CHAR_NONE || edge[cp] > highest) ids[cp] = (uint32_t)id;
    }
}

#endif
