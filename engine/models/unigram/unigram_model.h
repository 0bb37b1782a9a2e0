/* unigram_model.h: Viterbi over a word's pieces, exactly as tokenizers' Unigram model.
 *
 * The rules (tokenizers 0.23, models/unigram/model.rs, ``encode_optimized`` then
 * ``tokenize``), each of which decides ids somewhere:
 *
 * * Positions are visited in order, character by character. From each, every piece
 *   that starts there (shortest first) offers its score plus the best score of the
 *   position; a position takes an offer only if it has none yet or the offer is
 *   strictly greater (ties keep the earlier offer). Scores are doubles added in that
 *   order, as there.
 * * When no piece is exactly the character at a position, an <unk> offer of
 *   ``min_score - 10`` covers the character (after the pieces' offers). With no unk id
 *   the encode fails only if that offer would be taken (tokenizers errs there too).
 * * Back from the end, consecutive nodes whose id is the unk id are fused into one
 *   string (fuse_unk; a literal "<unk>" piece in the text is fused as well, since the
 *   test is on the id). Every resulting string is then looked up again as a piece (the
 *   token -> id map, whose duplicates keep the last id): a fused string that is a piece
 *   becomes that piece; one that is not becomes its UTF-8 bytes as <0xNN> pieces when
 *   byte_fallback is set and all of them exist, else the unk id.
 * * Spans: each token covers its string's bytes; the <0xNN> tokens of one string all
 *   cover the whole string (tokenizers' offsets there).
 *
 * Input is one pre-tokenized, normalized word's UTF-8. Everything here is read-only
 * after ``finish`` except the cache (internally synchronized) and per-thread scratch,
 * so ``encode`` may run on many threads at once without the GIL.
 */
#ifndef TOKSERVE_UNIGRAM_MODEL_H
#define TOKSERVE_UNIGRAM_MODEL_H

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "unigram_cache.h"
#include "unigram_trie.h"

enum { UG_OK = 0, UG_MISSING_UNK = 1, UG_TOO_LONG = 2, UG_BAD_ENDS = 3 };

class UnigramCore {
public:
    UnigramTrie trie;
    std::vector<double> scores;
    int32_t unk_id = -1;
    bool fuse_unk = true;
    bool byte_fallback = false;
    double unk_score = 0.0;
    int32_t byte_ids[256];
    UnigramCache cache;

    UnigramCore() {
        for (int i = 0; i < 256; i++) byte_ids[i] = -1;
    }

    /* Before finish(): one call per vocabulary entry, in id order. */
    void add_piece(const unsigned char *p, size_t n, double score) {
        pending_.emplace_back(std::string((const char *)p, n), (int32_t)scores.size());
        scores.push_back(score);
    }

    /* Builds the trie; false when it cannot (too large). */
    bool finish() {
        double min_score = INFINITY;
        for (double s : scores)
            if (s < min_score) min_score = s;
        unk_score = min_score - 10.0;
        size_t longest = 0;
        for (const auto &piece : pending_) longest = std::max(longest, piece.first.size());
        while (ring_ < longest + 2) ring_ <<= 1;
        if (!trie.build(std::move(pending_))) return false;
        pending_.clear();
        static const char HEX[] = "0123456789ABCDEF";
        for (int b = 0; b < 256; b++) {
            unsigned char name[6] = {'<', '0', 'x', (unsigned char)HEX[b >> 4],
                                     (unsigned char)HEX[b & 15], '>'};
            byte_ids[b] = trie.find(name, 6);
        }
        return true;
    }

    size_t size() const { return scores.size(); }

    /* Appends the ids of word s[0:n] to *ids and, unless spans is NULL, their byte
     * spans in the word to *spans (start, end per id). UG_MISSING_UNK: the word needs
     * the unk id and the model has none; UG_TOO_LONG: 2 GiB or more. On an error
     * nothing of this word is appended. */
    int encode(const unsigned char *s, size_t n, std::vector<int32_t> *ids,
               std::vector<uint32_t> *spans, uint64_t *hits, uint64_t *misses) {
        if (n == 0) return UG_OK;
        if (n > (size_t)INT32_MAX) return UG_TOO_LONG;
        const size_t ids_before = ids->size(), spans_before = spans ? spans->size() : 0;
        if (!cache.enabled() || n > UnigramCache::MAX_KEY) {
            int rc = viterbi(s, n, ids, spans);
            if (rc != UG_OK) {
                ids->resize(ids_before);
                if (spans) spans->resize(spans_before);
            }
            return rc;
        }
        uint64_t h = ug_hash(s, n);
        if (cache.get(h, s, n, ids, spans)) {
            ++*hits;
            return UG_OK;
        }
        ++*misses;
        /* a cached word keeps its spans: computed here even when not asked for */
        thread_local std::vector<uint32_t> own;
        std::vector<uint32_t> *word_spans = spans ? spans : &own;
        const size_t word_before = spans ? spans_before : 0;
        own.clear();
        int rc = viterbi(s, n, ids, word_spans);
        if (rc != UG_OK) {
            ids->resize(ids_before);
            word_spans->resize(word_before);
            return rc;
        }
        cache.put(h, s, n, ids->data() + ids_before, word_spans->data() + word_before,
                  ids->size() - ids_before);
        return UG_OK;
    }

    /* encode() for each word of s[0:n]: word i is s[ends[i-1]:ends[i]] (ends ascending,
     * the last n); spans are offsets in s. */
    int encode_words(const unsigned char *s, size_t n, const int64_t *ends, size_t count,
                     std::vector<int32_t> *ids, std::vector<uint32_t> *spans,
                     uint64_t *hits, uint64_t *misses) {
        if (n > (size_t)INT32_MAX) return UG_TOO_LONG;
        size_t start = 0;
        for (size_t w = 0; w < count; w++) {
            size_t end = (size_t)ends[w];
            if (end < start || end > n) return UG_BAD_ENDS;
            size_t first = spans ? spans->size() : 0;
            int rc = encode(s + start, end - start, ids, spans, hits, misses);
            if (rc != UG_OK) return rc;
            if (spans && start)
                for (size_t i = first; i < spans->size(); i++) (*spans)[i] += (uint32_t)start;
            start = end;
        }
        return start == n ? UG_OK : UG_BAD_ENDS;
    }

private:
    /* Per-thread scratch characters kept between words (a longer word's is given back). */
    static const size_t KEEP_SCRATCH = 1 << 16;

    size_t ring_ = 2;  /* score ring slots: a power of two >= longest piece + 2 */
    std::vector<std::pair<std::string, int32_t>> pending_;

    static inline bool continues(unsigned char c) { return (c & 0xC0) == 0x80; }

    /* The number of characters (a lead byte and the continuation bytes after it) in
     * s[a:b]; a is a character's start. */
    static inline size_t chars_in(const unsigned char *s, size_t a, size_t b) {
        size_t count = 0;
        for (size_t i = a; i < b; i++) count += i == a || !continues(s[i]);
        return count;
    }

    /* Viterbi in 4 bytes per character: ``from[k]``, the start (byte offset) of the
     * best path's last node ending at character boundary k (-1: none yet), is the only
     * per-character array. A position's best score is read only while positions at
     * most one piece length behind are processed, so scores live in a ring of
     * ``ring_`` slots; a slot holds position k's score exactly when from[k] >= 0. A
     * node's id is not kept: the trie gives it again from the node's bytes (one id per
     * string; none: a character without a piece, the <unk> node). The path is then
     * reversed in place in ``from`` (each boundary on it links to the next one) and
     * emitted front to back. Characters are counted as a lead byte plus the
     * continuation bytes after it, so indexing stays in bounds on any bytes. */
    int viterbi(const unsigned char *s, size_t n, std::vector<int32_t> *ids,
                std::vector<uint32_t> *spans) const {
        thread_local std::vector<int32_t> from_at;
        thread_local std::vector<double> ring;
        if (ring.size() < ring_) ring.resize(ring_);
        double *score = ring.data();
        const size_t mask = ring_ - 1;
        const size_t chars = chars_in(s, 0, n);
        from_at.assign(chars + 1, -1);
        int32_t *from = from_at.data();
        for (size_t pos = 0, k = 0; pos < n; k++) {
            size_t mblen = 1;
            while (pos + mblen < n && continues(s[pos + mblen])) mblen++;
            const double here = from[k] < 0 ? 0.0 : score[k & mask];
            bool single = false;
            int32_t state = 0;
            size_t end_k = k;
            for (size_t i = pos; i < n; i++) {
                state = trie.next(state, s[i]);
                if (state < 0) break;
                if (i + 1 < n && continues(s[i + 1])) continue;  /* inside a character */
                end_k++;
                int32_t id = trie.id_at(state);
                if (id < 0) continue;
                double offer = scores[id] + here;
                if (from[end_k] < 0 || offer > score[end_k & mask]) {
                    score[end_k & mask] = offer;
                    from[end_k] = (int32_t)pos;
                }
                if (i + 1 - pos == mblen) single = true;
            }
            if (!single) {
                double offer = unk_score + here;
                if (from[k + 1] < 0 || offer > score[(k + 1) & mask]) {
                    if (unk_id < 0) return UG_MISSING_UNK;
                    score[(k + 1) & mask] = offer;
                    from[k + 1] = (int32_t)pos;
                }
            }
            pos += mblen;
        }
        /* reverse the path: from[k] of a boundary on it becomes the next boundary's
         * byte offset (n's: -1) */
        int32_t next = -1;
        for (size_t end = n, k = chars; end > 0;) {
            size_t start = (size_t)from[k];
            from[k] = next;
            next = (int32_t)end;
            k -= chars_in(s, start, end);
            end = start;
        }
        from[0] = next;
        /* front to back; a run of unk nodes is one string (fuse_unk) */
        int rc = UG_OK;
        size_t run_start = 0;
        bool in_run = false;
        for (size_t start = 0, k = 0; start < n && rc == UG_OK;) {
            size_t end = (size_t)from[k];
            k += chars_in(s, start, end);
            int32_t id = trie.find(s + start, end - start);
            if (id < 0) id = unk_id;
            if (id == unk_id) {  /* looked up again as a string */
                if (!in_run) run_start = start;
                in_run = true;
                if (!fuse_unk) {
                    rc = emit_unknown(s, run_start, end, ids, spans);
                    in_run = false;
                }
            } else {
                if (in_run) rc = emit_unknown(s, run_start, start, ids, spans);
                in_run = false;
                emit(id, start, end, ids, spans);
            }
            start = end;
        }
        if (in_run && rc == UG_OK) rc = emit_unknown(s, run_start, n, ids, spans);
        if (from_at.capacity() > KEEP_SCRATCH) std::vector<int32_t>().swap(from_at);
        return rc;
    }

    static inline void emit(int32_t id, size_t a, size_t b, std::vector<int32_t> *ids,
                            std::vector<uint32_t> *spans) {
        ids->push_back(id);
        if (spans) {
            spans->push_back((uint32_t)a);
            spans->push_back((uint32_t)b);
        }
    }

    /* An unknown run s[a:b]: the piece it spells, else its bytes' <0xNN> pieces (each
     * spanning the whole run), else the unk id. */
    int emit_unknown(const unsigned char *s, size_t a, size_t b, std::vector<int32_t> *ids,
                     std::vector<uint32_t> *spans) const {
        int32_t id = trie.find(s + a, b - a);
        if (id >= 0) {
            emit(id, a, b, ids, spans);
            return UG_OK;
        }
        if (byte_fallback) {
            bool all = true;
            for (size_t i = a; i < b && all; i++) all = byte_ids[s[i]] >= 0;
            if (all) {
                for (size_t i = a; i < b; i++) emit(byte_ids[s[i]], a, b, ids, spans);
                return UG_OK;
            }
        }
        if (unk_id < 0) return UG_MISSING_UNK;
        emit(unk_id, a, b, ids, spans);
        return UG_OK;
    }
};

#endif
