/* bpe_image.h: one vocabulary's read-only tables as ONE block of memory, the "image".
 *
 * Why: every worker process of the service used to build and hold its own copy of every
 * tokenizer's tables. An image holds no pointer (tables refer to token bytes by offset,
 * bpe_tables.h), so it is valid at any address: the engine can write it to a file once
 * and every process maps that file read-only, sharing its pages (tables.py does the
 * file: its header, hash check and name). Nothing in an image changes after it is
 * built; everything a process changes (the piece cache, the backtracking encoder's
 * records, the per-thread pair caches) lives outside it.
 *
 * Layout: a ``BpeImageHead`` (magic, layout version, sizes, the offset of each table),
 * then the tables, each at a multiple of 64 bytes from the image's start. ``attach``
 * checks the head and that every table lies inside the image before anything reads it,
 * so a damaged image is refused, never followed.
 */
#ifndef TOKSERVE_BPE_IMAGE_H
#define TOKSERVE_BPE_IMAGE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backtrack.h"
#include "bpe_chars.h"
#include "bpe_pairs.h"
#include "bpe_tables.h"
#include "piece_split.h"

static const char BPE_IMAGE_MAGIC[8] = {'T', 'O', 'K', 'B', 'P', 'E', '\0', '\0'};
static const uint32_t BPE_IMAGE_LAYOUT = 4;  /* bump on any change to what is below */

enum BpeImageTable {
    IMG_ARENA, IMG_TOK_START, IMG_TOK_LEN, IMG_KNOWN, IMG_ENC_TAGS, IMG_ENC_SLOTS,
    IMG_LONGEST_FROM, IMG_BYTE_PAIRS, IMG_MERGES, IMG_BIGRAMS, IMG_EDGES, IMG_RUNS,
    IMG_TAILS, IMG_PREFIXES, IMG_TOKENS, IMG_CHARS, IMG_PAIRS, IMG_TABLES
};

struct BpeImageHead {
    char magic[8];
    uint32_t layout;
    uint32_t concat_ranks;      /* 1: .tiktoken rule; 0: a merges list */
    uint64_t size;              /* bytes of the whole image */
    uint64_t n_ids;             /* one past the largest id */
    uint64_t max_len;           /* longest mergeable token */
    uint64_t enc_cap, merges_cap, merges_size, runs_cap, runs_size, tails_cap, tails_size;
    uint64_t pairs_cap;         /* concat ranks: slots of the pair table (bpe_pairs.h), or 0 */
    int32_t byte_ids[256];
    uint64_t offset[IMG_TABLES];
    uint64_t bytes[IMG_TABLES];
};

/* Errors of building or attaching (the Cython glue turns them into ArtifactError). */
enum BpeImageError {
    IMG_OK = 0,
    IMG_NO_BYTE = 1,        /* ``detail``: the byte with no token */
    IMG_BAD_MERGE = 2,      /* ``detail``: the index of a merge using an unknown token */
    IMG_BAD_ID = 3,         /* ``detail``: an id outside 0..2^31-2 */
    IMG_DAMAGED = 4,        /* an image whose head or table bounds do not hold */
};

class BpeImageBuilder {
public:
    /* Token bytes are borrowed until ``build`` returns. */
    void add_token(const unsigned char *p, size_t n, int64_t id, bool mergeable) {
        tokens_.push_back({p, n, id, mergeable});
    }
    void add_merge(const unsigned char *a, size_t na, const unsigned char *b, size_t nb) {
        merges_.push_back({a, na, b, nb});
    }

    int64_t detail = 0;  /* 64 bits: a refused id is reported as given, never truncated */

    /* The image into *out; ``concat_ranks``: the .tiktoken rule (merges are ignored). */
    int build(bool concat_ranks, std::vector<uint64_t> *out) {
        size_t n_ids = 0, arena = 0, n_mergeable = 0;
        for (const Token &t : tokens_) {
            if (t.id < 0 || t.id >= 0x7FFFFFFF) return fail(IMG_BAD_ID, t.id);
            n_ids = (size_t)t.id + 1 > n_ids ? (size_t)t.id + 1 : n_ids;
            arena += t.n;
            n_mergeable += t.mergeable;
        }
        /* splitter keys first: their tables' sizes are part of the layout */
        PieceSplitter::Build split;
        for (const Token &t : tokens_)
            if (t.mergeable) split.collect(t.p, t.n);
        size_t enc_cap = bt_bytes_capacity(n_mergeable);
        size_t merges_cap = concat_ranks ? 0 : bt_capacity_for(merges_.size());
        size_t runs_cap = bt_capacity_for(split.runs.size());
        size_t tails_cap = bt_capacity_for(split.tails.size());
        uint64_t bytes[IMG_TABLES] = {
            arena + 1, 4 * n_ids, 4 * n_ids, n_ids, 2 * enc_cap, sizeof(bt_bytesslot) * enc_cap,
            2 * 65536, concat_ranks ? 4 * 65536 : 0, sizeof(bt_u64slot) * merges_cap,
            8 * PieceSplitter::BIGRAM_WORDS, 8 * PieceSplitter::EDGE_WORDS,
            sizeof(bt_u64slot) * runs_cap, sizeof(bt_u64slot) * tails_cap,
            8 * BacktrackMemo::FILTER_WORDS, 8 * BacktrackMemo::TOKEN_WORDS,
            concat_ranks ? 8 * BPE_CHAR_WORDS : 0, 0};  /* the pair table is sized last */
        uint64_t offset[IMG_TABLES], pos = align(sizeof(BpeImageHead));
        for (int k = 0; k < IMG_TABLES; k++) {
            offset[k] = pos;
            pos = align(pos + bytes[k]);
        }
        out->assign(pos / 8, 0);
        unsigned char *base = (unsigned char *)out->data();
        BpeImageHead *head = (BpeImageHead *)base;
        memcpy(head->magic, BPE_IMAGE_MAGIC, 8);
        head->layout = BPE_IMAGE_LAYOUT;
        head->concat_ranks = concat_ranks;
        head->size = pos;
        head->n_ids = n_ids;
        head->enc_cap = enc_cap;
        head->merges_cap = merges_cap;
        head->runs_cap = runs_cap;
        head->tails_cap = tails_cap;
        memcpy(head->offset, offset, sizeof offset);
        memcpy(head->bytes, bytes, sizeof bytes);

        unsigned char *text = base + offset[IMG_ARENA];
        uint32_t *start = (uint32_t *)(base + offset[IMG_TOK_START]);
        uint32_t *len = (uint32_t *)(base + offset[IMG_TOK_LEN]);
        uint8_t *known = base + offset[IMG_KNOWN];
        std::vector<uint8_t> mergeable(n_ids, 0);
        bt_bytesmap enc;
        bt_bytes_place(&enc, (uint16_t *)(base + offset[IMG_ENC_TAGS]),
                       (bt_bytesslot *)(base + offset[IMG_ENC_SLOTS]), enc_cap, text, 1);
        uint16_t *longest = (uint16_t *)(base + offset[IMG_LONGEST_FROM]);
        size_t at = 0;
        for (const Token &t : tokens_) {
            memcpy(text + at, t.p, t.n);
            start[t.id] = (uint32_t)at;
            len[t.id] = (uint32_t)t.n;
            known[t.id] = 1;
            at += t.n;
        }
        for (const Token &t : tokens_) {  /* a second pass: the last of equal ids wins */
            if (!t.mergeable) continue;
            bt_bytes_put(&enc, start[t.id], t.n, (int32_t)t.id);
            mergeable[t.id] = 1;
            head->max_len = t.n > head->max_len ? t.n : head->max_len;
            if (t.n >= 2) {
                uint16_t &l = longest[(size_t)t.p[0] << 8 | t.p[1]];
                l = t.n > l ? (uint16_t)(t.n < 0xFFFF ? t.n : 0xFFFF) : l;
            }
        }
        for (int b = 0; b < 256; b++) {
            unsigned char byte = (unsigned char)b;
            head->byte_ids[b] = bt_bytes_get(&enc, &byte, 1);
            if (head->byte_ids[b] < 0) return fail(IMG_NO_BYTE, b);
        }
        if (concat_ranks) {
            /* every merge loop starts by ranking adjacent bytes: one load each */
            uint32_t *pairs = (uint32_t *)(base + offset[IMG_BYTE_PAIRS]);
            memset(pairs, 0xFF, bytes[IMG_BYTE_PAIRS]);
            for (size_t id = 0; id < n_ids; id++)
                if (mergeable[id] && len[id] == 2) {
                    const unsigned char *p = text + start[id];
                    pairs[(uint32_t)p[0] << 8 | p[1]] = (uint32_t)bt_bytes_get(&enc, p, 2);
                }
            bpe_chars_fill((uint64_t *)(base + offset[IMG_CHARS]), text, start, len,
                           mergeable.data(), n_ids, pairs);
        } else {
            bt_u64map m;
            bt_u64_place(&m, base + offset[IMG_MERGES], merges_cap, 0, 1);
            for (size_t k = 0; k < merges_.size(); k++) {
                const Merge &g = merges_[k];
                std::vector<unsigned char> ab(g.a, g.a + g.na);
                ab.insert(ab.end(), g.b, g.b + g.nb);
                int32_t ia = bt_bytes_get(&enc, g.a, g.na), ib = bt_bytes_get(&enc, g.b, g.nb);
                int32_t im = bt_bytes_get(&enc, ab.data(), ab.size());
                if (ia < 0 || ib < 0 || im < 0) return fail(IMG_BAD_MERGE, (int)k);
                bt_u64_put_new(&m, bpe_pair_key(ia, ib), (uint64_t)k << 32 | (uint32_t)im);
            }
            head->merges_size = m.size;
        }
        memcpy(base + offset[IMG_BIGRAMS], split.bigrams.data(), bytes[IMG_BIGRAMS]);
        memcpy(base + offset[IMG_EDGES], split.edges.data(), bytes[IMG_EDGES]);
        head->runs_size = place_keys(base + offset[IMG_RUNS], runs_cap, split.runs);
        head->tails_size = place_keys(base + offset[IMG_TAILS], tails_cap, split.tails);
        BacktrackMemo::fill_filters(text, start, len, mergeable.data(), n_ids,
                                    (uint64_t *)(base + offset[IMG_PREFIXES]),
                                    (uint64_t *)(base + offset[IMG_TOKENS]));
        if (concat_ranks) {  /* last: it is sized by what the byte table finds */
            BpePairsFind find = {&enc, head->byte_ids,
                                 (const uint32_t *)(base + offset[IMG_BYTE_PAIRS]),
                                 (const uint64_t *)(base + offset[IMG_TOKENS])};
            std::vector<uint64_t> pairs =
                bpe_pairs_collect(find, text, start, len, mergeable.data(), n_ids);
            size_t cap = pairs.empty() ? 0 : bt_capacity_for(pairs.size());
            out->resize(out->size() + cap);  /* IMG_PAIRS starts at the old end */
            base = (unsigned char *)out->data();
            head = (BpeImageHead *)base;
            head->pairs_cap = cap;
            head->bytes[IMG_PAIRS] = 8 * cap;
            head->size += 8 * cap;
            bpe_pairs_place((uint64_t *)(base + head->offset[IMG_PAIRS]), cap, pairs);
        }
        return IMG_OK;
    }

private:
    struct Token {
        const unsigned char *p;
        size_t n;
        int64_t id;
        bool mergeable;
    };
    struct Merge {
        const unsigned char *a;
        size_t na;
        const unsigned char *b;
        size_t nb;
    };

    static uint64_t align(uint64_t n) { return (n + 63) & ~(uint64_t)63; }

    static size_t place_keys(unsigned char *memory, size_t cap, const std::vector<uint64_t> &keys) {
        bt_u64map m;
        bt_u64_place(&m, memory, cap, 0, 1);
        for (uint64_t key : keys) bt_u64_put_new(&m, key, 1);
        return m.size;
    }

    int fail(int code, int64_t value) {
        detail = value;
        return code;
    }

    std::vector<Token> tokens_;
    std::vector<Merge> merges_;
};

/* The head of an image, or nullptr when the image is damaged: wrong magic or layout, a
 * size that is not the image's, or a table outside it or too small for its contents. */
static inline const BpeImageHead *bpe_image_head(const unsigned char *image, size_t size) {
    if (size < sizeof(BpeImageHead) || ((uintptr_t)image & 7)) return nullptr;
    const BpeImageHead *h = (const BpeImageHead *)image;
    if (memcmp(h->magic, BPE_IMAGE_MAGIC, 8) || h->layout != BPE_IMAGE_LAYOUT || h->size != size)
        return nullptr;
    const uint64_t n = h->n_ids;
    const uint64_t need[IMG_TABLES] = {
        1, 4 * n, 4 * n, n, 2 * h->enc_cap, sizeof(bt_bytesslot) * h->enc_cap, 2 * 65536,
        h->concat_ranks ? 4 * 65536 : 0, sizeof(bt_u64slot) * h->merges_cap,
        8 * PieceSplitter::BIGRAM_WORDS, 8 * PieceSplitter::EDGE_WORDS,
        sizeof(bt_u64slot) * h->runs_cap, sizeof(bt_u64slot) * h->tails_cap,
        8 * BacktrackMemo::FILTER_WORDS, 8 * BacktrackMemo::TOKEN_WORDS,
        h->concat_ranks ? 8 * BPE_CHAR_WORDS : 0, 8 * h->pairs_cap};
    for (int k = 0; k < IMG_TABLES; k++)
        if (h->offset[k] % 64 || h->bytes[k] < need[k] || h->offset[k] > size ||
            h->bytes[k] > size - h->offset[k])
            return nullptr;
    for (uint64_t cap : {h->enc_cap, h->runs_cap, h->tails_cap})
        if (cap < 16 || (cap & (cap - 1))) return nullptr;
    if ((h->pairs_cap & (h->pairs_cap - 1)) || (h->pairs_cap && !h->concat_ranks)) return nullptr;
    if (!h->concat_ranks && (h->merges_cap < 16 || (h->merges_cap & (h->merges_cap - 1))))
        return nullptr;
    /* every id a table hands out indexes the id tables, every key lies in the arena */
    const uint64_t arena = h->bytes[IMG_ARENA];
    const uint32_t *start = (const uint32_t *)(image + h->offset[IMG_TOK_START]);
    const uint32_t *len = (const uint32_t *)(image + h->offset[IMG_TOK_LEN]);
    const uint8_t *known = image + h->offset[IMG_KNOWN];
    for (uint64_t id = 0; id < n; id++)
        if (known[id] && (uint64_t)start[id] + len[id] > arena) return nullptr;
    for (int b = 0; b < 256; b++)
        if (h->byte_ids[b] < 0 || (uint64_t)h->byte_ids[b] >= n) return nullptr;
    const uint16_t *tags = (const uint16_t *)(image + h->offset[IMG_ENC_TAGS]);
    const bt_bytesslot *slots = (const bt_bytesslot *)(image + h->offset[IMG_ENC_SLOTS]);
    for (uint64_t i = 0; i < h->enc_cap; i++)
        if (tags[i] && (slots[i].id < 0 || (uint64_t)slots[i].id >= n || !known[slots[i].id] ||
                        (uint64_t)slots[i].off + slots[i].len > arena))
            return nullptr;
    if (h->concat_ranks) {
        const uint32_t *byte_pairs = (const uint32_t *)(image + h->offset[IMG_BYTE_PAIRS]);
        for (size_t i = 0; i < 65536; i++)
            if (byte_pairs[i] != BPE_NO_TOKEN && byte_pairs[i] >= n) return nullptr;
        const uint32_t *chars = (const uint32_t *)(image + h->offset[IMG_CHARS]);
        for (size_t i = 0; i < BPE_CHAR_IDS; i++)
            if (chars[i] != BPE_CHAR_NONE && (chars[i] >= n || !known[chars[i]])) return nullptr;
        const uint64_t *pairs = (const uint64_t *)(image + h->offset[IMG_PAIRS]);
        bool empty_slot = h->pairs_cap == 0;  /* a probe must end: some slot is empty */
        for (uint64_t i = 0; i < h->pairs_cap; i++) {
            uint64_t e = pairs[i];
            if (e == BPE_PAIR_EMPTY) {
                empty_slot = true;
                continue;
            }
            uint64_t a, b, t;
            bpe_pairs_split(e, &a, &b, &t);
            if (a >= n || b >= n || t >= n || !known[t]) return nullptr;
        }
        if (!empty_slot) return nullptr;
    } else {
        const bt_u64slot *m = (const bt_u64slot *)(image + h->offset[IMG_MERGES]);
        for (uint64_t i = 0; i < h->merges_cap; i++)
            if (m[i].key != BT_EMPTY &&
                ((m[i].key >> 32) >= n || (m[i].key & 0xFFFFFFFF) >= n ||
                 (m[i].val & 0xFFFFFFFF) >= n || !known[m[i].val & 0xFFFFFFFF]))
                return nullptr;
    }
    return h;
}

#endif
