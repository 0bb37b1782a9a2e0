/* piece_split.h: where a piece can be cut into parts that merge independently.
 *
 * Why: CJK and many other scripts come as long pieces (a whole clause between two
 * punctuation marks is one pre-tokenizer piece), nearly every one of them new, so the
 * piece cache does not help and the merge loop pays two to three vocabulary lookups
 * per byte. But most of those clauses are made of short words that recur all the
 * time. If the piece can be cut exactly at word-like points, the parts are short, they
 * repeat, and the cache serves them even on text it has never seen whole.
 *
 * When a cut is exact. A merge only ever creates a symbol whose bytes are a token
 * occurring in the piece. If no token of the vocabulary occurs in the piece across
 * byte position k (starting before k and ending after it), no symbol ever spans k: the
 * pair across k never merges, the merges on each side never see the other side, and
 * the ids of the piece are the ids of piece[:k] followed by those of piece[k:]. (This
 * holds for rank-ordered merging by concatenated-bytes rank, tiktoken's rule, and for
 * merges lists, whose results are vocabulary tokens; leftmost-first ties stay within
 * a side.)
 *
 * Checking it at a boundary between two characters X and Y (valid UTF-8): a token that
 * crosses it contains X's last byte and Y's first byte, and either
 *   (a) contains the whole of X and the whole of Y: the character pair XY occurs in
 *       the token ("bigrams", every adjacent pair of complete characters in every
 *       token);
 *   (b) starts inside X: it begins with a proper suffix of X (continuation bytes only)
 *       followed by Y's first byte ("lead runs": every token's leading run of 1-3
 *       continuation bytes with the byte after it);
 *   (c) ends inside Y: it ends with a proper prefix of Y (a lead byte and fewer
 *       continuation bytes than it announces) preceded by X's last byte ("tails").
 * A boundary is cut only when none of the three is in the tables, built once from
 * every mergeable token at load. Characters are decoded by shape (lead byte plus the
 * continuation bytes it announces) on both sides, so a token's odd sequences can only
 * add entries, i.e. forbid cuts, never allow a wrong one. Text that is not valid UTF-8
 * is never cut, and neither is a boundary between two ASCII characters (so their
 * pairs, 80% of all, need no entries).
 *
 * The bigram table is a one-bit-per-hash filter (2^20 bits, 128 KiB), not a set: a
 * false "present" only forgoes a cut, which costs speed, never ids, and a boundary
 * check is one multiply and one load that stays in L2. o200k_base sets 21k bits (2%
 * of boundaries lose their cut); a hash set of the same pairs cost load time and
 * encode time on texts where few boundaries can be cut.
 *
 * Measured on the benchmark corpus: 44% of the character boundaries of CJK text can be
 * cut for o200k_base (parts of 1.9 characters on average), 57% for cl100k_base; 2%
 * and 36% in the other non-Latin scripts; none in English, whose letter pairs all
 * occur inside tokens (so pieces without a non-ASCII byte are not examined).
 */
#ifndef TOKSERVE_PIECE_SPLIT_H
#define TOKSERVE_PIECE_SPLIT_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "bpe_tables.h"

/* The splitter's tables, as they lie in the model's image (bpe_image.h). */
struct SplitTables {
    const uint64_t *bigrams;  /* 2^BIGRAM_BITS bits */
    const uint64_t *edges;    /* 65,536 bits */
    bt_u64map runs, tails;
};

class PieceSplitter {
public:
    static const unsigned BIGRAM_BITS = 20;
    static const size_t BIGRAM_WORDS = (1u << BIGRAM_BITS) / 64;
    static const size_t EDGE_WORDS = 65536 / 64;

    /* Build side: every token the merge loop can produce goes through ``collect``; the
     * image then holds ``bigrams``/``edges`` as they are and tables of ``runs``/``tails``. */
    struct Build {
        std::vector<uint64_t> bigrams = std::vector<uint64_t>(BIGRAM_WORDS, 0);
        std::vector<uint64_t> edges = std::vector<uint64_t>(EDGE_WORDS, 0);
        std::vector<uint64_t> runs, tails;

        void collect(const unsigned char *t, size_t n) {
            /* (b) leading run of continuation bytes, then one more byte */
            size_t run = 0;
            while (run < n && is_cont(t[run])) run++;
            if (run >= 1 && run <= 3 && n > run) {
                runs.push_back(edge_key(t, run, t[run]));
                mark(&edges, edge_bit(t[run - 1], t[run]));
            }
            /* (c) trailing incomplete character, preceded by one more byte */
            size_t back = 0;
            while (back < 3 && back < n && is_cont(t[n - 1 - back])) back++;
            if (back < n) {
                int want = tail_count(t[n - 1 - back]);
                size_t plen = back + 1;
                if (want > 0 && (size_t)want > back && n > plen) {
                    tails.push_back(edge_key(t + n - plen, plen, t[n - plen - 1]));
                    mark(&edges, edge_bit(t[n - plen - 1], t[n - plen]));
                }
            }
            /* (a) adjacent complete characters */
            bool have_prev = false;
            uint32_t prev = 0;
            size_t i = 0;
            while (i < n) {
                uint32_t cp;
                size_t len = char_at(t, i, n, &cp);
                if (!len) {
                    have_prev = false;
                    i++;
                    continue;
                }
                if (have_prev && (prev >= 0x80 || cp >= 0x80)) mark(&bigrams, bigram_bit(prev, cp));
                prev = cp;
                have_prev = true;
                i += len;
            }
        }

        static void mark(std::vector<uint64_t> *bits, unsigned i) {
            (*bits)[i >> 6] |= 1ULL << (i & 63);
        }
    };

    void attach(const SplitTables &tables) {
        t_ = tables;
        ready_ = true;
    }

    bool ready() const { return ready_; }

    /* The first exact cut after character boundary ``pos`` of p[0:n] among the next
     * ``patience`` boundaries, or n (none there, or the text is not valid UTF-8). */
    size_t next_cut(const unsigned char *p, size_t pos, size_t n, unsigned patience) const {
        uint32_t x_cp;
        size_t x_len = char_at(p, pos, n, &x_cp);
        if (!x_len) return n;
        size_t k = pos + x_len;
        for (unsigned tried = 0; k < n && tried < patience; tried++) {
            uint32_t y_cp;
            size_t y_len = char_at(p, k, n, &y_cp);
            if (!y_len) return n;
            if (cuttable(p + k - x_len, x_len, x_cp, p + k, y_len, y_cp)) return k;
            x_cp = y_cp;
            x_len = y_len;
            k += y_len;
        }
        return n;
    }

    /* Up to 3 bytes, their count and one more byte, packed (never all ones). */
    static uint64_t edge_key(const unsigned char *bytes, size_t count, unsigned char other) {
        uint64_t key = 0;
        for (size_t i = 0; i < count; i++) key |= (uint64_t)bytes[i] << (8 * i);
        return key | (uint64_t)count << 24 | (uint64_t)other << 32;
    }

private:
    static bool is_cont(unsigned char b) { return (b & 0xC0) == 0x80; }

    /* Continuation bytes a lead byte announces (-1: not a lead byte). */
    static int tail_count(unsigned char b) {
        if (b < 0x80) return 0;
        if (b < 0xC0) return -1;
        if (b < 0xE0) return 1;
        if (b < 0xF0) return 2;
        if (b < 0xF8) return 3;
        return -1;
    }

    /* Length of the character at p[i] by shape, and its code point; 0 if malformed. */
    static size_t char_at(const unsigned char *p, size_t i, size_t n, uint32_t *cp) {
        int t = tail_count(p[i]);
        if (t < 0 || i + (size_t)t >= n) return 0;
        uint32_t c = t == 0 ? p[i] : p[i] & (0x3F >> t);
        for (int j = 1; j <= t; j++) {
            if (!is_cont(p[i + j])) return 0;
            c = (c << 6) | (p[i + j] & 0x3F);
        }
        *cp = c;
        return (size_t)t + 1;
    }

    static unsigned bigram_bit(uint32_t x, uint32_t y) {
        uint64_t key = (uint64_t)x << 21 | y;
        return (unsigned)((key * 0x9E3779B97F4A7C15ULL) >> (64 - BIGRAM_BITS));
    }

    /* Cases (b) and (c) both involve X's last byte and Y's first byte; this 64k-bit
     * filter over that pair rules nearly every boundary out of both with one load. */
    static unsigned edge_bit(unsigned char last, unsigned char first) {
        return (unsigned)last << 8 | first;
    }

    static bool has(const uint64_t *bits, unsigned i) { return bits[i >> 6] >> (i & 63) & 1; }

    bool cuttable(const unsigned char *x, size_t x_len, uint32_t x_cp, const unsigned char *y,
                  size_t y_len, uint32_t y_cp) const {
        if ((x_cp < 0x80 && y_cp < 0x80) || has(t_.bigrams, bigram_bit(x_cp, y_cp))) return false;
        if (!has(t_.edges, edge_bit(x[x_len - 1], y[0]))) return true;
        for (size_t s = 1; s < x_len; s++)  /* (b): X's proper suffixes, then Y[0] */
            if (bt_u64_get(&t_.runs, edge_key(x + s, x_len - s, y[0])) != BT_EMPTY) return false;
        for (size_t s = 1; s < y_len; s++)  /* (c): X's last byte, then Y's proper prefixes */
            if (bt_u64_get(&t_.tails, edge_key(y, s, x[x_len - 1])) != BT_EMPTY) return false;
        return true;
    }

    SplitTables t_ = {nullptr, nullptr, {nullptr, 0, 0}, {nullptr, 0, 0}};
    bool ready_ = false;
};

#endif
