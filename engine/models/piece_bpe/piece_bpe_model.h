/* piece_bpe_model.h: the piece BPE model: tables, chunking, cache, encode.
 *
 * A SentencePiece-style tokenizer with no pre-tokenizer hands the model the whole
 * normalized text as ONE sequence ("▁Hello▁world▁..."). tokenizers merges it as one
 * word; so do we, but in parts, and only where that cannot change a single id:
 *
 * Why a cut is exact. Merging only ever joins two adjacent symbols, and when every id
 * names one non-empty piece (Vocab::plain) a symbol's piece is the concatenation of the
 * first pieces it covers. So the symbol that ends just before a character y always has
 * a piece ending with the last character of the first piece before y (that character
 * itself, ">" of a byte piece "<0xNN>", or the unk_token's last character), and the one
 * that starts at y a piece starting with y (or "<" of its byte piece). If no merge
 * (a, b) has a ending with the one and b starting with the other (``pairs_``, built
 * from the merges list, answers that), no merge ever joins across: no heap entry spans
 * the cut, and the two sides' merges touch disjoint symbols in the same relative
 * (rank, position) order, so each side can be merged alone. The first symbols must not
 * change either: a pending unknown symbol is emitted before the next character that is
 * a piece, so when unknown symbols can occur a cut is made only before such a
 * character, and the symbol before it may be that unknown one; when a character can be
 * dropped (no byte piece, no unk_token) there are no cuts. Exactness first: the rule is
 * derived from the merges of the file, never assumed, and checked by ``finish``.
 *
 * Two levels. Chunks end before a "▁" whose preceding character passes the rule
 * (``split_after_``, a bitmap over the Basic Multilingual Plane): found with memchr, so
 * a chunk the cache holds ("▁the") costs a scan, a hash and a lookup. A chunk the cache
 * misses is cut further at every place the rule allows (first_symbols' cuts: words and
 * punctuation, CJK characters that no merge joins), each part looked up in the cache
 * and merged alone when missing: merging is superlinear in a part's length, and parts
 * recur in text never seen before. Chunks and parts of up to ChunkCache::MAX_KEY bytes
 * are cached (piece_bpe_cache.h).
 */
#ifndef TOKSERVE_PIECE_BPE_MODEL_H
#define TOKSERVE_PIECE_BPE_MODEL_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "piece_bpe_cache.h"
#include "piece_bpe_merges.h"
#include "piece_bpe_vocab.h"
#include "piece_bpe_word.h"

namespace piece_bpe {

enum { PB_MERGE_OK = 0, PB_MERGE_LEFT = 1, PB_MERGE_RIGHT = 2, PB_MERGE_RESULT = 3 };

static const int32_t SPACE_CP = 0x2581;  /* "▁" */

/* Per-call statistics, added to the cache's counters once per call. */
struct Stats {
    uint64_t hits = 0, misses = 0;
};

/* Where encode writes: room for one id (and, when lens is set, one length) per byte of
 * the input, which is the most tokens it can make (every token covers a byte or more). */
struct Out {
    int32_t *ids;
    uint32_t *lens;  /* nullptr: ids only */
    size_t count;
};

/* Per-call (per-thread) working memory. */
struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Cut> cuts;
    std::vector<uint64_t> keys;
    HeapScratch heap;
};

class Model {
public:
    Vocab vocab;
    Merges merges;
    mutable ChunkCache cache;      /* internally synchronized */
    size_t short_max = SHORT_MAX;  /* chunks of more symbols take merge_heap */
    bool chunking = false;         /* set by finish() */

    /* Before the merges (after vocab.finish()): room for ``count`` of them. */
    void begin_merges(size_t count) {
        merges.reserve(count);
        for (int b = 0; b < 256; b++) {
            static const char hex[] = "0123456789ABCDEF";
            const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            byte_ids_[b] = vocab.find((const unsigned char *)name, 6);
        }
        triples_.clear();
        triples_.reserve(3 * count);
    }

    /* Merges ``count`` pieces pairs, in rank order: pair i is a = buf[at:at + lens[2i]]
     * followed at once by b (lens[2i + 1] bytes), so a + b is contiguous too. Returns
     * ``count``, or the index of the first pair with a piece that is not in the
     * vocabulary and *code saying which (PB_MERGE_LEFT / RIGHT / RESULT).
     *
     * Batched: a batch's 3 x BATCH hashes are computed and their slots prefetched, then
     * their pieces, then they are looked up and the merge table's slots prefetched, then
     * the merges are put (Gemma 3 looks up 1.5 million pieces and puts half a million
     * pairs in tables far larger than the caches; one at a time, each waited for its
     * misses). */
    size_t add_merges(const unsigned char *buf, const uint32_t *lens, size_t count, int *code) {
        static const size_t BATCH = 16;
        const unsigned char *at[BATCH];
        uint64_t h[BATCH][3];
        int32_t id[BATCH][3];
        size_t done = 0;
        while (done < count) {
            size_t m = count - done < BATCH ? count - done : BATCH;
            for (size_t i = 0; i < m; i++) {
                size_t an = lens[2 * (done + i)], bn = lens[2 * (done + i) + 1];
                at[i] = buf;
                buf += an + bn;
                h[i][0] = hash_bytes(at[i], an);
                h[i][1] = hash_bytes(at[i] + an, bn);
                h[i][2] = hash_bytes(at[i], an + bn);
                for (int k = 0; k < 3; k++) vocab.prefetch(h[i][k]);
            }
            for (size_t i = 0; i < m; i++)
                for (int k = 0; k < 3; k++) vocab.prefetch_piece(h[i][k]);
            for (size_t i = 0; i < m; i++) {
                size_t an = lens[2 * (done + i)], bn = lens[2 * (done + i) + 1];
                id[i][0] = vocab.find_hashed(at[i], an, h[i][0]);
                id[i][1] = vocab.find_hashed(at[i] + an, bn, h[i][1]);
                id[i][2] = vocab.find_hashed(at[i], an + bn, h[i][2]);
                if (id[i][0] >= 0 && id[i][1] >= 0) merges.prefetch(id[i][0], id[i][1]);
            }
            for (size_t i = 0; i < m; i++) {
                size_t an = lens[2 * (done + i)], bn = lens[2 * (done + i) + 1];
                const unsigned char *a = at[i], *b = at[i] + an;
                int32_t left = id[i][0], right = id[i][1], made = id[i][2];
                *code = left < 0 ? PB_MERGE_LEFT : right < 0 ? PB_MERGE_RIGHT
                                                 : made < 0 ? PB_MERGE_RESULT : PB_MERGE_OK;
                if (*code != PB_MERGE_OK) return done + i;
                merges.put((uint32_t)left, (uint32_t)right, (uint32_t)made);
                if (an > 0 && bn > 0) {  /* an empty piece joins nothing by its ends */
                    int32_t last, first;
                    size_t start = utf8_char_start(a, an);
                    if (utf8_char(a + start, an - start, &last) != an - start) last = -1;
                    utf8_char(b, bn, &first);
                    pairs_.add(last, first);  /* pieces come from str: never malformed */
                }
                triples_.insert(triples_.end(), {(uint32_t)left, (uint32_t)right, (uint32_t)made});
            }
            done += m;
        }
        return count;
    }

    /* After the merges: the options, then the derived tables and the chunking check.
     * unk_id: -1 no unk_token, -2 one that is not a piece. */
    void finish(int32_t unk_id, bool byte_fallback, bool fuse_unk, bool ignore_merges,
                bool allow_chunking) {
        rules_.vocab = &vocab;
        rules_.byte_fallback = byte_fallback;
        rules_.fuse_unk = fuse_unk;
        rules_.unk_id = unk_id;
        ignore_merges_ = ignore_merges;
        bool all_bytes = true;
        for (int b = 0; b < 256; b++) {
            rules_.byte_ids[b] = byte_ids_[b];
            if (byte_ids_[b] < 0) all_bytes = false;
        }
        /* chunking (see the top of this file) */
        bool fallback_total = byte_fallback && all_bytes;
        unk_last_ = -1;
        if (unk_id >= 0) {
            const unsigned char *p;
            size_t n;
            if (vocab.piece((uint32_t)unk_id, &p, &n) && n > 0) {
                size_t start = utf8_char_start(p, n);
                if (utf8_char(p + start, n - start, &unk_last_) != n - start) unk_last_ = -1;
            }
        }
        const unsigned char space[3] = {0xE2, 0x96, 0x81};
        bool can_drop = unk_id == -1 && !fallback_total;
        bool cuts = allow_chunking && vocab.plain() && !can_drop;
        rules_.pairs = cuts ? &pairs_ : nullptr;
        rules_.unk_possible = !fallback_total && unk_id != -1;
        rules_.unk_last = unk_last_;
        cover_lengths(byte_fallback);
        chunking = cuts && vocab.find(space, 3) >= 0 && (fallback_total || unk_id >= 0);
        if (chunking && !fallback_total && (unk_last_ < 0 || crosses(unk_last_))) chunking = false;
        split_after_.assign(0x10000 / 64, 0);
        if (chunking) {
            for (int32_t cp = 0; cp < 0x10000; cp++) {
                if (cp >= 0xD800 && cp <= 0xDFFF) continue;
                unsigned char buf[4];
                size_t n = encode_utf8(cp, buf);
                if (boundary_after(buf, n, cp)) split_after_[cp >> 6] |= 1ULL << (cp & 63);
            }
        }
    }

    /* Ids (and lengths) of data[0:n], after the out->count already there. */
    int encode(const unsigned char *p, size_t n, Out *out, Scratch *w, Stats *st) const {
        if (n == 0) return PB_OK;
        if (ignore_merges_) {
            int32_t id = vocab.find(p, n);
            if (id >= 0) {
                if (out->lens) out->lens[out->count] = (uint32_t)n;
                out->ids[out->count++] = id;
                return PB_OK;
            }
        }
        if (!chunking) return encode_chunk(p, n, key_of(p, n), out, w, st);
        /* One chunk behind the scan: a chunk's cache slot is requested when its end is
         * found, and read when the next chunk's end is, so that its memory latency
         * overlaps the work on the chunk before it. */
        size_t start = 0, pos = 1, held = 0, held_len = 0;
        uint64_t held_key = 0;
        bool holding = false;
        while (pos + 3 <= n) {
            const void *hit = memchr(p + pos, 0xE2, n - pos - 2);
            if (!hit) break;
            size_t k = (size_t)((const unsigned char *)hit - p);
            if (p[k + 1] == 0x96 && p[k + 2] == 0x81) {
                if (k > start && splits_before(p, k)) {
                    uint64_t key = key_of(p + start, k - start);
                    if (holding) {
                        int rc = encode_chunk(p + held, held_len, held_key, out, w, st);
                        if (rc != PB_OK) return rc;
                    }
                    held = start, held_len = k - start, held_key = key, holding = true;
                    start = k;
                }
                pos = k + 3;
            } else {
                pos = k + 1;
            }
        }
        uint64_t key = key_of(p + start, n - start);
        if (holding) {
            int rc = encode_chunk(p + held, held_len, held_key, out, w, st);
            if (rc != PB_OK) return rc;
        }
        return encode_chunk(p + start, n - start, key, out, w, st);
    }

    const SymbolRules &rules() const { return rules_; }

private:
    SymbolRules rules_;
    bool ignore_merges_ = false;
    bool spans_cached_ = false;
    int32_t unk_last_ = -1;
    CharPairs pairs_;                  /* (last of a, first of b) of every merge (a, b) */
    int32_t byte_ids_[256];            /* building: the ids of "<0x00>".."<0xFF>" or -1 */
    std::vector<uint32_t> triples_;    /* building: left, right, made of every merge */
    std::vector<uint32_t> tok_len_;    /* id -> bytes of text it covers; 0: not one number */
    std::vector<uint64_t> split_after_;  /* BMP bitset: a "▁" after this character starts a chunk */

    /* tok_len_: how many bytes of text a token covers, for the spans of a cached chunk
     * (whose symbols are not kept). A one-character piece covers its bytes, a byte piece
     * (with byte_fallback) one byte, an unknown symbol any number (0: not known), and a
     * merged token what its two parts cover, which must be one number whichever merge
     * makes it (a byte piece also made by merging "<", "0", ... covers 1 or 6 bytes: 0).
     * Solved by passes over the merges until nothing changes (each entry changes at
     * most twice: unset, a number, 0). */
    void cover_lengths(bool byte_fallback) {
        static constexpr uint32_t UNSET = 0xFFFFFFFFu, MANY = 0;
        tok_len_.assign(vocab.size(), UNSET);
        for (size_t id = 0; id < vocab.size(); id++) {
            const unsigned char *p;
            size_t n;
            int32_t cp;
            if (vocab.piece((uint32_t)id, &p, &n) && n > 0 && utf8_char(p, n, &cp) == n)
                tok_len_[id] = (uint32_t)n;
        }
        if (byte_fallback)
            for (int b = 0; b < 256; b++)
                if (byte_ids_[b] >= 0) tok_len_[(size_t)byte_ids_[b]] = 1;
        if (rules_.unk_possible && rules_.unk_id >= 0) tok_len_[(size_t)rules_.unk_id] = MANY;
        bool changed = true;
        for (int pass = 0; changed && pass < 64; pass++) {
            changed = false;
            for (size_t i = 0; i + 2 < triples_.size(); i += 3) {
                uint32_t l = tok_len_[triples_[i]], r = tok_len_[triples_[i + 1]];
                uint32_t &m = tok_len_[triples_[i + 2]];
                if (l == UNSET || r == UNSET || m == MANY) continue;
                uint32_t c = l == MANY || r == MANY ? MANY : l + r;
                if (m != c) {
                    m = m == UNSET ? c : MANY;
                    changed = true;
                }
            }
        }
        spans_cached_ = vocab.plain() && !changed;
        for (uint32_t &len : tok_len_)
            if (len == UNSET) len = MANY;
        triples_.clear();
        triples_.shrink_to_fit();
    }

    /* May a merge join a symbol ending with cp to one starting with "▁"? */
    bool crosses(int32_t cp) const { return pairs_.joins(cp, SPACE_CP); }

    static size_t encode_utf8(int32_t cp, unsigned char *out) {
        if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
        if (cp < 0x800) {
            out[0] = (unsigned char)(0xC0 | (cp >> 6));
            out[1] = (unsigned char)(0x80 | (cp & 0x3F));
            return 2;
        }
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }

    /* May a chunk end after the character c = q[0:n] (code point cp) when "▁" follows? */
    bool boundary_after(const unsigned char *q, size_t n, int32_t cp) const {
        if (cp < 0) return false;
        if (vocab.find_char(q, n, cp) >= 0) return !crosses(cp);
        bool bytes = rules_.byte_fallback;
        for (size_t j = 0; bytes && j < n; j++) bytes = rules_.byte_ids[q[j]] >= 0;
        if (bytes) return !crosses('>');  /* "<0xNN>" ends with ">" */
        if (rules_.unk_id >= 0) return unk_last_ >= 0 && !crosses(unk_last_);
        return false;  /* dropped: the symbol before is some other character's */
    }

    /* Does a chunk end before the "▁" at p + k (k > 0)? */
    inline bool splits_before(const unsigned char *p, size_t k) const {
        unsigned c = p[k - 1];
        if (c < 0x80) return (split_after_[c >> 6] >> (c & 63)) & 1;
        size_t j = utf8_char_start(p, k);
        int32_t cp;
        if (utf8_char(p + j, k - j, &cp) != k - j || cp < 0) return false;
        if (cp < 0x10000) return (split_after_[cp >> 6] >> (cp & 63)) & 1;
        return boundary_after(p + j, k - j, cp);
    }

    /* The cache key of a chunk or part (0: not cached), its slot requested already. */
    inline uint64_t key_of(const unsigned char *p, size_t n) const {
        if (!cache.enabled() || n > ChunkCache::MAX_KEY) return 0;
        uint64_t h = hash_bytes(p, n);
        cache.prefetch(h);
        return h;
    }

    int encode_chunk(const unsigned char *p, size_t n, uint64_t h, Out *out, Scratch *w,
                     Stats *st) const {
        int32_t *ids = out->ids + out->count;
        bool cacheable = h != 0;
        if (cacheable) {
            size_t got = cache.get(h, p, n, ids);
            if (got != ChunkCache::MISS && (!out->lens || lens_of(ids, got, out->lens + out->count))) {
                out->count += got;
                st->hits++;
                return PB_OK;
            }
            st->misses++;
        }
        if (w->symbols.size() < n) {  /* grow only: no per-chunk initialization */
            w->symbols.resize(n);
            w->cuts.resize(n + 1);
        }
        Symbol *s = w->symbols.data();
        size_t count, n_cuts;
        int rc = first_symbols(rules_, p, n, s, &count, w->cuts.data(), &n_cuts);
        if (rc != PB_OK) return rc;
        size_t start = out->count;
        if (n_cuts == 0) {
            emit(p, n, 0, s, count, out, w, st);
        } else {  /* parts no merge can join: each from the cache or merged alone */
            Cut *cut = w->cuts.data();
            cut[n_cuts] = Cut{(uint32_t)count, (uint32_t)n};
            w->keys.resize(n_cuts + 1);
            for (size_t j = 0, at = 0; j <= n_cuts; at = cut[j++].at)  /* requested at once */
                w->keys[j] = cut[j].sym - (j ? cut[j - 1].sym : 0) > 1
                                 ? key_of(p + at, cut[j].at - at) : 0;
            for (size_t j = 0; j <= n_cuts; j++) {
                size_t from = j ? cut[j - 1].sym : 0, at = j ? cut[j - 1].at : 0;
                emit(p + at, cut[j].at - at, w->keys[j], s + from, cut[j].sym - from, out, w,
                     st);
            }
        }
        if (cacheable) cache.put(h, p, n, out->ids + start, out->count - start);
        return PB_OK;
    }

    /* Merges the symbols s[0:count] of the text q[0:n] and appends their ids (and
     * lengths) to out; with a cache key h (a part of two symbols or more) the part is
     * looked up in the cache first, and put in it after. */
    void emit(const unsigned char *q, size_t n, uint64_t h, Symbol *s, size_t count, Out *out,
              Scratch *w, Stats *st) const {
        int32_t *ids = out->ids + out->count;
        bool cacheable = h != 0;
        if (cacheable) {
            size_t got = cache.get(h, q, n, ids);
            if (got != ChunkCache::MISS && (!out->lens || lens_of(ids, got, out->lens + out->count))) {
                out->count += got;
                st->hits++;
                return;
            }
            st->misses++;
        }
        if (count <= short_max && count <= SHORT_MAX && vocab.plain())
            merge_short(merges, s, &count);
        else
            merge_heap(merges, vocab.plain(), s, &count, &w->heap);
        for (size_t i = 0; i < count; i++) ids[i] = s[i].id;
        if (out->lens)
            for (size_t i = 0; i < count; i++) out->lens[out->count + i] = s[i].len;
        out->count += count;
        if (cacheable) cache.put(h, q, n, ids, count);
    }

    /* The lengths of a cached chunk's tokens (tok_len_), when each is one number. */
    bool lens_of(const int32_t *ids, size_t count, uint32_t *lens) const {
        if (!spans_cached_) return false;
        for (size_t i = 0; i < count; i++)
            if ((lens[i] = tok_len_[ids[i]]) == 0) return false;
        return true;
    }
};

}  // namespace piece_bpe

#endif
