/* bpe_model.h: one vocabulary's tables and the per-piece pipeline of the BPE model stage.
 *
 * A segment is scanned and merged in ONE nogil loop (``encode_span``): the compiled
 * pre-tokenizer (pretok_scan.h) hands out piece boundaries, or the caller passes them,
 * and each piece is merged at once while its bytes are hot in cache. Per piece:
 *
 * 1. one byte: its id;
 * 2. tiktoken's rule (and tokenizer.json's ``ignore_merges``): a piece that is itself a
 *    token is that token, one hash lookup, skipped when the piece is longer than every
 *    token starting with its first two bytes (most CJK clauses);
 * 3. this thread's memo of short pieces (short_pieces.h), for pieces of 2 to 5 bytes;
 *    the piece cache (piece_cache.h), for pieces of 6 to 256 bytes on their second
 *    sighting;
 * 4. a piece with a non-ASCII byte is cut where no token can cross (piece_split.h) and
 *    each part goes through 3 and 5 on its own: CJK clauses are new, their words recur;
 * 5. merging: the flat loop up to 48 bytes, the backtracking encoder beyond
 *    (bpe_merge.h, backtrack.h); the flat loop starts from whole characters where that
 *    is exact (bpe_chars.h), and a .tiktoken vocabulary ranks a pair of symbols by
 *    their ids in one table (bpe_pairs.h).
 *
 * The tables are an image (bpe_image.h), built once or mapped from a file, and only
 * read, so any number of threads (and processes) use them at once; the caches are safe
 * for that by their own design.
 */
#ifndef TOKSERVE_BPE_MODEL_H
#define TOKSERVE_BPE_MODEL_H

#include <cstdint>
#include <vector>

#include "backtrack.h"
#include "bpe_image.h"
#include "bpe_merge.h"
#include "bpe_tables.h"
#include "piece_cache.h"
#include "piece_split.h"
#include "pretok_scan.h"

class BpeCore {
public:
    static const size_t CACHE_MIN_BYTES = 6;
    static const size_t CACHE_MAX_PIECE = 256;
    static const size_t SPLIT_MIN_BYTES = 7;
    static const unsigned SPLIT_PATIENCE = 6;

    /* Settings of this tokenizer, not of the vocabulary (set before ``attach``). */
    bool whole_piece_lookup = true;
    bool splitting = true;              /* off only to compare against (tests) */
    bool backtracking = true;           /* off only to compare against (tests) */
    bool char_symbols = true;           /* off only to compare against (tests) */
    bool pair_table = true;             /* off only to compare against (tests) */
    bool short_memo = true;             /* off only to compare against (tests) */
    int family = -1;                    /* compiled scanner, or -1: callers pass ends */

    PieceCache cache;

    BpeCore() = default;
    BpeCore(const BpeCore &) = delete;
    BpeCore &operator=(const BpeCore &) = delete;

    /* Read the tables of ``image`` (bpe_image.h) in place; the caller keeps the image
     * alive and unchanged while this model lives. IMG_DAMAGED when it does not check. */
    int attach(const unsigned char *image, size_t size) {
        const BpeImageHead *h = bpe_image_head(image, size);
        if (!h) return IMG_DAMAGED;
        auto at = [&](int table) { return image + h->offset[table]; };
        n_ids_ = h->n_ids;
        known_ = at(IMG_KNOWN);
        bt_bytes_place(&encoder_, (uint16_t *)at(IMG_ENC_TAGS), (bt_bytesslot *)at(IMG_ENC_SLOTS),
                       h->enc_cap, at(IMG_ARENA), 0);
        bt_u64_place(&merges_, (void *)at(IMG_MERGES), h->concat_ranks ? 16 : h->merges_cap,
                     h->merges_size, 0);
        v_.encoder = &encoder_;
        v_.merges = &merges_;
        v_.arena = at(IMG_ARENA);
        v_.tok_start = (const uint32_t *)at(IMG_TOK_START);
        v_.tok_len = (const uint32_t *)at(IMG_TOK_LEN);
        v_.byte_pairs = h->concat_ranks ? (const uint32_t *)at(IMG_BYTE_PAIRS) : nullptr;
        v_.longest_from = (const uint16_t *)at(IMG_LONGEST_FROM);
        v_.token_filter = (const uint64_t *)at(IMG_TOKENS);
        v_.chars = h->concat_ranks && char_symbols ? bpe_chars_view((const uint64_t *)at(IMG_CHARS))
                                                   : BpeChars{};
        v_.pairs = {h->pairs_cap && pair_table ? (const uint64_t *)at(IMG_PAIRS) : nullptr,
                    h->pairs_cap ? h->pairs_cap - 1 : 0};
        for (int b = 0; b < 256; b++) v_.byte_ids[b] = h->byte_ids[b];
        v_.concat_ranks = h->concat_ranks;
        v_.pair_owner = pc_new_owner(n_ids_);
        short_owner_ = short_memo ? sp_owner(v_.pair_owner, n_ids_) : 0;
        bt_u64map runs, tails;
        bt_u64_place(&runs, (void *)at(IMG_RUNS), h->runs_cap, h->runs_size, 0);
        bt_u64_place(&tails, (void *)at(IMG_TAILS), h->tails_cap, h->tails_size, 0);
        splitter_.attach({(const uint64_t *)at(IMG_BIGRAMS), (const uint64_t *)at(IMG_EDGES),
                          runs, tails});
        backtrack_.init((const uint64_t *)at(IMG_PREFIXES), (const uint64_t *)at(IMG_TOKENS),
                        n_ids_, h->max_len);
        return IMG_OK;
    }

    const BpeVocab &vocab() const { return v_; }
    size_t size() const { return n_ids_; }
    bool known(int64_t id) const { return id >= 0 && (uint64_t)id < n_ids_ && known_[id]; }
    const unsigned char *token(int32_t id) const { return v_.arena + v_.tok_start[id]; }
    size_t token_len(int32_t id) const { return v_.tok_len[id]; }

    /* Ids of one segment s[0:n]; ``ends`` are the pieces' exclusive ends, or NULL for
     * the compiled scanner (family >= 0). */
    void encode_span(const unsigned char *s, size_t n, const std::vector<int64_t> *ends,
                     std::vector<int32_t> *out) {
        PieceCtx ctx;
        bpe_ctx_init(&ctx);
        size_t pos = 0;
        if (ends == nullptr) {
            /* One piece ahead: the next piece is found, hashed and its lookup's lines
             * requested before this one is encoded (bt_bytes_prefetch). */
            if (n == 0) return;
            size_t end = (size_t)pt_next_piece(family, s, 0, (ptrdiff_t)n);
            bt_key key = ahead(s, end, nullptr, 0);
            while (pos < n) {
                size_t next = end < n ? (size_t)pt_next_piece(family, s, (ptrdiff_t)end,
                                                              (ptrdiff_t)n) : n;
                bt_key next_key = ahead(s + end, next - end, s + pos, end - pos);
                encode_piece(&ctx, s + pos, end - pos, out, key);
                pos = end;
                end = next;
                key = next_key;
            }
        } else {
            for (int64_t e : *ends) {
                size_t end = (size_t)e;
                if (end > pos) {
                    encode_piece(&ctx, s + pos, end - pos, out);
                    pos = end;
                }
            }
        }
        cache.add_stats(ctx.hits, ctx.misses, ctx.marks);
    }

    /* When merging token t's own bytes gives t (it is reachable), the two ids its last
     * merge joined: the one pair that can ever merge into t (export.py says why). */
    bool split_of(int32_t t, int32_t *a, int32_t *b) {
        if (!known(t) || token_len(t) < 2) return false;
        const unsigned char *p = token(t);
        size_t n = token_len(t);
        if (bt_bytes_get(&encoder_, p, n) != t) return false;  /* not a mergeable token */
        PieceCtx ctx;
        bpe_ctx_init(&ctx);
        int32_t last[2] = {-1, -1};
        std::vector<int32_t> ids;
        if (n <= BPE_SMALL_PIECE) {
            int32_t small[BPE_SMALL_PIECE];
            ids.assign(small, small + bpe_merge_small_into(v_, &ctx, p, n, small, nullptr, last));
        } else {
            bpe_merge_heap(v_, &ctx, p, n, &ids, last);
        }
        if (ids.size() != 1 || ids[0] != t) return false;
        *a = last[0];
        *b = last[1];
        return true;
    }

    /* One piece as given, no pre-tokenization (tests, the trainer, tiktoken's
     * ``_encode_single_piece``). */
    void encode_one(const unsigned char *p, size_t n, std::vector<int32_t> *out) {
        if (!n) return;
        PieceCtx ctx;
        bpe_ctx_init(&ctx);
        encode_piece(&ctx, p, n, out);
        cache.add_stats(ctx.hits, ctx.misses, ctx.marks);
    }

private:
    /* Whether the whole-piece lookup applies to p[0:n]: a token of that length can start
     * with its first two bytes (most CJK clauses cannot be one token: no hash, no probe). */
    bool lookup_whole(const unsigned char *p, size_t n) const {
        if (!whole_piece_lookup || n < 2) return false;
        size_t longest = v_.longest_from[((size_t)p[0] << 8) | p[1]];
        return n <= longest || longest == 0xFFFF;
    }

    /* The key of the piece p[0:n] when its whole-piece lookup applies, its lines
     * requested; else a zero key (never used). Not for a piece that repeats the one
     * before it (prev[0:prev_n]): the repeat memo answers that one. */
    bt_key ahead(const unsigned char *p, size_t n, const unsigned char *prev,
                 size_t prev_n) const {
        bt_key k = {0, 0};
        if (n == prev_n && n <= BPE_REPEAT_MAX && memcmp(p, prev, n) == 0) return k;
        if (lookup_whole(p, n)) {
            k = bt_key_of(p, n);
            bt_bytes_prefetch(&encoder_, k);
        }
        return k;
    }

    void encode_piece(PieceCtx *ctx, const unsigned char *p, size_t n, std::vector<int32_t> *out) {
        encode_piece(ctx, p, n, out, lookup_whole(p, n) ? bt_key_of(p, n) : bt_key{0, 0});
    }

    void encode_piece(PieceCtx *ctx, const unsigned char *p, size_t n, std::vector<int32_t> *out,
                      bt_key key) {
        if (n == 1) {
            out->push_back(v_.byte_ids[p[0]]);
            return;
        }
        if (n <= BPE_REPEAT_MAX && bpe_repeat(ctx->piece, p, n, out)) return;
        size_t before = out->size();
        int32_t whole = -1;
        bool looked = lookup_whole(p, n);
        if (looked)
            whole = bt_bytes_get_hashed(&encoder_, p, n, key);
        if (whole >= 0)
            out->push_back(whole);
        else  /* the piece cache hashes keys as the vocabulary table does */
            cached(ctx, p, n, out, true, looked ? PieceCache::nonzero(key.hash) : 0);
        if (n <= BPE_REPEAT_MAX) ctx->piece = {p, n, before, out->size() - before};
    }

    /* Merge p[0:n] through the short-piece memo or the piece cache: a whole piece (cut
     * into parts where exact) or one of its parts. Both kinds share each of them, keyed
     * by bytes alone, and that is exact: with whole_piece_lookup a piece whose bytes are
     * a token never gets here, so an entry for such bytes can only come from a part, and
     * for any other bytes a piece and a part merge the same. */
    void cached(PieceCtx *ctx, const unsigned char *p, size_t n, std::vector<int32_t> *out,
                bool whole_piece, uint64_t h = 0) {
        if (n <= short_pieces::MAX_BYTES && n >= short_pieces::MIN_BYTES && short_owner_) {
            if (sp_get(ctx->shorts, short_owner_, p, n, out)) return;
            size_t before = out->size();
            merge_parts(ctx, p, n, out, whole_piece);
            sp_put(ctx->shorts, short_owner_, p, n, out->data() + before, out->size() - before);
            return;
        }
        if (n < CACHE_MIN_BYTES || n > CACHE_MAX_PIECE || !cache.enabled()) {
            merge_parts(ctx, p, n, out, whole_piece);
            return;
        }
        if (!h) h = PieceCache::hash_of(p, n);  /* 0: not computed yet */
        if (!cache.seen_before(h)) {  /* cached on its second sighting */
            ctx->misses++;
            ctx->marks++;
            merge_parts(ctx, p, n, out, whole_piece);
            return;
        }
        if (cache.get(h, p, n, out)) {
            ctx->hits++;
            return;
        }
        ctx->misses++;
        size_t before = out->size();
        merge_parts(ctx, p, n, out, whole_piece);
        cache.put(h, p, n, out->data() + before, out->size() - before);
    }

    /* A whole piece with a non-ASCII byte is cut where no token can cross and each part
     * goes through the cache on its own; anything else is merged as it is. */
    void merge_parts(PieceCtx *ctx, const unsigned char *p, size_t n, std::vector<int32_t> *out,
                     bool whole_piece) {
        if (!whole_piece || n < SPLIT_MIN_BYTES || !splitting || !has_high_byte(p, n)) {
            merge(ctx, p, n, out);
            return;
        }
        if (bpe_bytes_stay(v_, p, n)) {  /* nothing merges: no cuts, no merge loop */
            for (size_t i = 0; i < n; i++) out->push_back(v_.byte_ids[p[i]]);
            return;
        }
        size_t cut = splitter_.next_cut(p, 0, n, SPLIT_PATIENCE);
        if (cut >= n) {
            merge(ctx, p, n, out);
            return;
        }
        size_t pos = 0;
        while (pos < n) {
            size_t len = cut - pos;
            if (len > BPE_REPEAT_MAX || !bpe_repeat(ctx->part, p + pos, len, out)) {
                size_t before = out->size();
                cached(ctx, p + pos, len, out, false);
                if (len <= BPE_REPEAT_MAX) ctx->part = {p + pos, len, before, out->size() - before};
            }
            pos = cut;
            if (pos < n) cut = splitter_.next_cut(p, pos, n, SPLIT_PATIENCE);
        }
    }

    void merge(PieceCtx *ctx, const unsigned char *p, size_t n, std::vector<int32_t> *out) {
        if (n <= BPE_SMALL_PIECE)
            bpe_merge_small(v_, ctx, p, n, out);
        else if (backtracking && backtrack_.ready())
            backtrack_.encode(v_, ctx, p, n, out);
        else
            bpe_merge_heap(v_, ctx, p, n, out);
    }

    static bool has_high_byte(const unsigned char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
            if (p[i] >= 0x80) return true;
        return false;
    }

    size_t n_ids_ = 0;
    uint64_t short_owner_ = 0;  /* this model's key in the short-piece memo, 0: none */
    const uint8_t *known_ = nullptr;
    bt_bytesmap encoder_ = {nullptr, nullptr, 0, nullptr};
    bt_u64map merges_ = {nullptr, 0, 0};
    PieceSplitter splitter_;
    BacktrackMemo backtrack_;
    BpeVocab v_{};
};

#endif
