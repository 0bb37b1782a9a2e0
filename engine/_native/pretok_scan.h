/* Hand-written pre-tokenizer scanners for the known pattern families.
 *
 * Why: regex matching is most of tiktoken's time; these scanners give exactly the pieces
 * the reference regex engines give, in one forward pass, with no allocation and no
 * backtracking (every `\s+(?!\S)` is resolved by looking at the end of the whitespace run
 * once), so they are linear on any input (1 MB of spaces, of one letter, of base64).
 *
 * Contract: s[0..n) is valid UTF-8 and 0 <= pos < n. pt_next_piece returns the exclusive
 * end (> pos) of the piece starting at pos. Called from 0 with each previous end, the
 * pieces are consecutive and cover s exactly as the reference splits it:
 *   PT_CL100K  tiktoken 0.14 cl100k_base ('(?i:[sdmt]|ll|ve|re)|...|\s++$|\s*[\r\n]|\s+(?!\S)|\s)
 *   PT_O200K   tiktoken o200k_base
 *   PT_LLAMA3  Llama 3 (also the pre-0.14 cl100k pattern, which differs from PT_CL100K only
 *              for a whitespace run that reaches the end of the text and holds a newline)
 *   PT_QWEN    Qwen (as Llama 3, single digits)
 *   PT_TEKKEN  Mistral tekken (as o200k, no contractions, single digits)
 *   PT_DEEPSEEK_V4  tokenizers Sequence[Split(\p{N}{1,3}), Split([一-龥぀-ゟ゠-ヿ]+),
 *              Split(word pattern)] all Isolated, then ByteLevel(use_regex=false); every
 *              later split runs inside one piece of the previous split.
 * Unicode properties come from unicode_tables.h (generated to match each reference:
 * tiktoken's Rust regex tables, tokenizers' Oniguruma tables). Case-insensitive
 * contractions follow Rust regex simple case folding: `s` also matches U+017F (long s);
 * no other character folds to d, l, m, r, t, v or e.
 * Invalid UTF-8 never reads out of bounds (a bad byte is one unassigned character).
 */
#ifndef ENGINE_PRETOK_SCAN_H
#define ENGINE_PRETOK_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unicode_tables.h"

enum { PT_CL100K = 0, PT_O200K = 1, PT_LLAMA3 = 2, PT_QWEN = 3, PT_TEKKEN = 4, PT_DEEPSEEK_V4 = 5 };
#define PT_NUM_FAMILIES 6

#define PT_L (PT_LUT | PT_LL | PT_LMO)
#define PT_UPPERISH (PT_LUT | PT_LMO | PT_M) /* o200k [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
#define PT_LOWERISH (PT_LL | PT_LMO | PT_M)  /* o200k [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
#define PT_BOTHISH (PT_LMO | PT_M)           /* in both classes */
#define PT_OUT 0x100u                        /* DeepSeek: outside the current piece */
#define PT_BAD_CP 0x110000u                  /* invalid byte: no property */

/* Decode the character at i (s[i] >= 0x80); *len is its byte length. */
static inline uint32_t pt_decode_multi(const unsigned char *s, ptrdiff_t i, ptrdiff_t n, int *len) {
    unsigned b = s[i];
    if (b >= 0xC0 && b < 0xE0 && i + 1 < n) {
        *len = 2;
        return ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3F);
    }
    if (b >= 0xE0 && b < 0xF0 && i + 2 < n) {
        *len = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    if (b >= 0xF0 && i + 3 < n) {
        *len = 4;
        return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
               ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
    }
    *len = 1;
    return PT_BAD_CP;
}

/* Properties (tiktoken's tables) of the character at i. */
static inline unsigned pt_tt(const unsigned char *s, ptrdiff_t i, ptrdiff_t n, int *len, uint32_t *cp) {
    unsigned b = s[i];
    if (b < 0x80) {
        *len = 1;
        *cp = b;
        return pt_props_tiktoken(b);
    }
    *cp = pt_decode_multi(s, i, n, len);
    return pt_props_tiktoken(*cp);
}

#define PT_BYTES(b) (0x0101010101010101ULL * (uint64_t)(b))

/* For the letter classes a word run takes (PT_L, PT_LOWERISH, PT_UPPERISH), whose ASCII
 * members are exactly A-Za-z, a-z and A-Z: the run from i over those ASCII letters,
 * eight bytes at a time. Returns where the run ends if an ASCII byte ends it, or the
 * first byte the caller must look at one character at a time (a non-ASCII byte, or
 * fewer than eight bytes left). Each byte is tested in its own lane of one word: with
 * the top bits cleared, adding a constant below 0x80 cannot carry into the next lane. */
static inline ptrdiff_t pt_ascii_letters(const unsigned char *s, ptrdiff_t i, ptrdiff_t n,
                                         unsigned mask, int *done) {
    const uint64_t lane_top = PT_BYTES(0x80);
    const unsigned first = mask == PT_UPPERISH ? 'A' : 'a';
    *done = 0;
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t x = (mask == PT_L ? (w | PT_BYTES(0x20)) : w) & PT_BYTES(0x7F);
        uint64_t at_least_first = x + PT_BYTES(0x80 - first);
        uint64_t past_last = x + PT_BYTES(0x80 - (first + 26));
        uint64_t in_class = at_least_first & ~past_last & ~w & lane_top;
        uint64_t stop = ~in_class & lane_top;
        if (!stop) {
            i += 8;
            continue;
        }
        i += __builtin_ctzll(stop) >> 3;
        *done = s[i] < 0x80;
        return i;
    }
    return i;
}

/* End of the run from i of characters whose properties intersect mask. */
static inline ptrdiff_t pt_run_tt(const unsigned char *s, ptrdiff_t i, ptrdiff_t n, unsigned mask) {
    if (mask == PT_L || mask == PT_LOWERISH || mask == PT_UPPERISH) {
        int done;
        i = pt_ascii_letters(s, i, n, mask, &done);
        if (done) return i;
    }
    while (i < n) {
        unsigned b = s[i];
        if (b < 0x80) {
            if (!(pt_props_tiktoken(b) & mask)) break;
            i++;
            continue;
        }
        int l;
        uint32_t c = pt_decode_multi(s, i, n, &l);
        if (!(pt_props_tiktoken(c) & mask)) break;
        i += l;
    }
    return i;
}

/* End of the run from i of characters whose properties do NOT intersect mask. */
static inline ptrdiff_t pt_run_not_tt(const unsigned char *s, ptrdiff_t i, ptrdiff_t n, unsigned mask) {
    while (i < n) {
        int l;
        uint32_t c;
        if (pt_tt(s, i, n, &l, &c) & mask) break;
        i += l;
    }
    return i;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: end, or -1. */
static inline ptrdiff_t pt_contraction(const unsigned char *s, ptrdiff_t i, ptrdiff_t n) {
    if (i + 1 >= n || s[i] != '\'') return -1;
    switch (s[i + 1]) {
        case 's': case 'S': case 't': case 'T': case 'm': case 'M': case 'd': case 'D':
            return i + 2;
        case 'l': case 'L':
            return (i + 2 < n && (s[i + 2] | 0x20) == 'l') ? i + 3 : -1;
        case 'r': case 'R': case 'v': case 'V':
            return (i + 2 < n && (s[i + 2] | 0x20) == 'e') ? i + 3 : -1;
        case 0xC5: /* U+017F LATIN SMALL LETTER LONG S folds to s */
            return (i + 2 < n && s[i + 2] == 0xBF) ? i + 3 : -1;
        default:
            return -1;
    }
}

/* Whitespace run at pos (the character there is \s): the piece per
 * [\s++$ |] \s*[\r\n]+ | \s+(?!\S) | \s+ . `stop` marks characters that end the run
 * as the end of the text would (DeepSeek piece bounds); tail_first is cl100k's \s++$. */
static inline ptrdiff_t pt_space_tt(const unsigned char *s, ptrdiff_t pos, ptrdiff_t n, int tail_first) {
    ptrdiff_t i = pos, last_nl = -1, last_start = pos;
    while (i < n) {
        int l;
        uint32_t c;
        if (!(pt_tt(s, i, n, &l, &c) & PT_WS)) break;
        if (c == '\r' || c == '\n') last_nl = i;
        last_start = i;
        i += l;
    }
    if (tail_first && i == n) return n;     /* \s++$ ($ = end of text in Rust regex) */
    if (last_nl >= 0) return last_nl + 1;   /* \s*[\r\n]+ ends after the run's last CR/LF */
    if (i == n) return n;                   /* \s+(?!\S) at the end of the text */
    if (last_start > pos) return last_start; /* \s+(?!\S): leave the last one */
    return i;                               /* \s+ / \s: the single character */
}

/* cl100k / Llama 3 / Qwen. */
static inline ptrdiff_t pt_scan_words(const unsigned char *s, ptrdiff_t pos, ptrdiff_t n,
                                      int max_digits, int tail_first) {
    int l0;
    uint32_t c0;
    unsigned p0 = pt_tt(s, pos, n, &l0, &c0);
    ptrdiff_t i = pos + l0;
    if (c0 == '\'') {
        ptrdiff_t e = pt_contraction(s, pos, n);
        if (e >= 0) return e;
    }
    if (p0 & PT_L) return pt_run_tt(s, i, n, PT_L);
    if (!(p0 & PT_N) && c0 != '\r' && c0 != '\n' && i < n) { /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        int l1;
        uint32_t c1;
        if (pt_tt(s, i, n, &l1, &c1) & PT_L) return pt_run_tt(s, i + l1, n, PT_L);
    }
    if (p0 & PT_N) {
        for (int k = 1; k < max_digits && i < n; k++) {
            int l;
            uint32_t c;
            if (!(pt_tt(s, i, n, &l, &c) & PT_N)) break;
            i += l;
        }
        return i;
    }
    if (!(p0 & PT_WS) || (c0 == ' ' && i < n && !(pt_tt(s, i, n, &l0, &c0) & (PT_WS | PT_L | PT_N)))) {
        /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
        i = pt_run_not_tt(s, i, n, PT_WS | PT_L | PT_N);
        while (i < n && (s[i] == '\r' || s[i] == '\n')) i++;
        return i;
    }
    return pt_space_tt(s, pos, n, tail_first);
}

/* o200k / tekken, first word alternative from q:
 * [Upperish]*[Lowerish]+ (contraction)? with backtracking resolved: -1 if no match. */
static inline ptrdiff_t pt_word_lower(const unsigned char *s, ptrdiff_t q, ptrdiff_t n, int contractions) {
    ptrdiff_t i = q, both_end = -1, e;
    unsigned p = 0;
    int l = 0;
    uint32_t c;
    while (i < n) {
        p = pt_tt(s, i, n, &l, &c);
        if (!(p & PT_UPPERISH)) break;
        i += l;
        if (p & PT_BOTHISH) both_end = i;
    }
    if (i < n && (p & PT_LL)) {
        e = pt_run_tt(s, i + l, n, PT_LOWERISH);
    } else if (both_end >= 0) {
        e = both_end; /* the last Lm/Lo/M of the run is the one-character [..]+ */
    } else {
        return -1;
    }
    if (contractions) {
        ptrdiff_t k = pt_contraction(s, e, n);
        if (k >= 0) e = k;
    }
    return e;
}

/* o200k / tekken, second word alternative from q: [Upperish]+[Lowerish]* (contraction)?. */
static inline ptrdiff_t pt_word_upper(const unsigned char *s, ptrdiff_t q, ptrdiff_t n, int contractions) {
    ptrdiff_t i = pt_run_tt(s, q, n, PT_UPPERISH);
    if (i == q) return -1;
    i = pt_run_tt(s, i, n, PT_LOWERISH);
    if (contractions) {
        ptrdiff_t k = pt_contraction(s, i, n);
        if (k >= 0) i = k;
    }
    return i;
}

/* o200k / tekken. Alternatives are tried in the regex's own order: word1 with the
 * optional prefix taken, word1 without it (only possible when the prefix is a mark),
 * then the same for word2. */
static inline ptrdiff_t pt_scan_cased(const unsigned char *s, ptrdiff_t pos, ptrdiff_t n,
                                      int max_digits, int contractions) {
    int l0;
    uint32_t c0;
    unsigned p0 = pt_tt(s, pos, n, &l0, &c0);
    ptrdiff_t i = pos + l0, e;
    int prefix = !(p0 & (PT_L | PT_N)) && c0 != '\r' && c0 != '\n' && i < n;
    if (prefix && (e = pt_word_lower(s, i, n, contractions)) >= 0) return e;
    if ((p0 & (PT_UPPERISH | PT_LOWERISH)) && (e = pt_word_lower(s, pos, n, contractions)) >= 0) return e;
    if (prefix && (e = pt_word_upper(s, i, n, contractions)) >= 0) return e;
    if (p0 & PT_UPPERISH) return pt_word_upper(s, pos, n, contractions);
    if (p0 & PT_N) {
        for (int k = 1; k < max_digits && i < n; k++) {
            int l;
            uint32_t c;
            if (!(pt_tt(s, i, n, &l, &c) & PT_N)) break;
            i += l;
        }
        return i;
    }
    if (!(p0 & PT_WS) || (c0 == ' ' && i < n && !(pt_tt(s, i, n, &l0, &c0) & (PT_WS | PT_L | PT_N)))) {
        /* ' ?[^\s\p{L}\p{N}]+[\r\n/]*' */
        i = pt_run_not_tt(s, i, n, PT_WS | PT_L | PT_N);
        while (i < n && (s[i] == '\r' || s[i] == '\n' || s[i] == '/')) i++;
        return i;
    }
    return pt_space_tt(s, pos, n, 0);
}

/* ---- DeepSeek-V4 (tokenizers / Oniguruma tables) ---- */

/* [一-龥぀-ゟ゠-ヿ] of the second Split. */
static inline int pt_ds_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF);
}

/* Properties of the character at i, with PT_OUT if it is past the end or outside the
 * current piece of the first two splits (a digit, or a change of CJK-ness). */
static inline unsigned pt_ds(const unsigned char *s, ptrdiff_t i, ptrdiff_t n, int *len, uint32_t *cp, int cjk) {
    if (i >= n) {
        *len = 0;
        *cp = 0;
        return PT_OUT;
    }
    unsigned b = s[i], p;
    if (b < 0x80) {
        *len = 1;
        *cp = b;
        p = pt_props_tokenizers(b);
        return (cjk || (p & PT_N)) ? (p | PT_OUT) : p;
    }
    *cp = pt_decode_multi(s, i, n, len);
    p = pt_props_tokenizers(*cp);
    if (cjk ? !pt_ds_cjk(*cp) : (pt_ds_cjk(*cp) || (p & PT_N))) p |= PT_OUT;
    return p;
}

static inline ptrdiff_t pt_ds_run(const unsigned char *s, ptrdiff_t i, ptrdiff_t n, unsigned mask, int cjk) {
    for (;;) {
        int l;
        uint32_t c;
        unsigned p = pt_ds(s, i, n, &l, &c, cjk);
        if ((p & PT_OUT) || !(p & mask)) return i;
        i += l;
    }
}

static inline int pt_ds_ascii_letter(unsigned b) { return (unsigned)((b | 0x20) - 'a') < 26u; }

static inline ptrdiff_t pt_scan_deepseek_v4(const unsigned char *s, ptrdiff_t pos, ptrdiff_t n) {
    int l0, l1;
    uint32_t c0, c1;
    if (s[pos] < 0x80) {
        c0 = s[pos];
        l0 = 1;
    } else {
        c0 = pt_decode_multi(s, pos, n, &l0);
    }
    unsigned p0 = pt_props_tokenizers(c0);
    ptrdiff_t i = pos + l0;
    if (p0 & PT_N) { /* Split 1: \p{N}{1,3}; a digit group is never split further */
        for (int k = 1; k < 3 && i < n; k++) {
            c1 = s[i] < 0x80 ? (l1 = 1, s[i]) : pt_decode_multi(s, i, n, &l1);
            if (!(pt_props_tokenizers(c1) & PT_N)) break;
            i += l1;
        }
        return i;
    }
    int cjk = pt_ds_cjk(c0); /* Split 2 decides which piece pos is in */
    /* Split 3, within the piece: */
    if (c0 < 0x80 && (p0 & (PT_P | PT_S)) && i < n && pt_ds_ascii_letter(s[i])) {
        /* [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ */
        i++;
        while (i < n && pt_ds_ascii_letter(s[i])) i++;
        return i;
    }
    int prefix = !(p0 & (PT_L | PT_P | PT_S)) && c0 != '\r' && c0 != '\n';
    unsigned p1 = pt_ds(s, i, n, &l1, &c1, cjk);
    if (prefix && !(p1 & PT_OUT) && (p1 & (PT_L | PT_M))) /* [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ */
        return pt_ds_run(s, i + l1, n, PT_L | PT_M, cjk);
    if (p0 & (PT_L | PT_M)) return pt_ds_run(s, i, n, PT_L | PT_M, cjk);
    if ((p0 & (PT_P | PT_S)) || (c0 == ' ' && !(p1 & PT_OUT) && (p1 & (PT_P | PT_S)))) {
        /* ' ?[\p{P}\p{S}]+[\r\n]*' */
        i = pt_ds_run(s, (p0 & (PT_P | PT_S)) ? i : i + l1, n, PT_P | PT_S, cjk);
        for (;;) {
            unsigned p = pt_ds(s, i, n, &l1, &c1, cjk);
            if ((p & PT_OUT) || (c1 != '\r' && c1 != '\n')) return i;
            i += l1;
        }
    }
    if (p0 & PT_WS) { /* \s*[\r\n]+ | \s+(?!\S) | \s+ ; the piece end is an end of text */
        ptrdiff_t last_nl = (c0 == '\r' || c0 == '\n') ? pos : -1, last_start = pos;
        unsigned p;
        for (;;) {
            p = pt_ds(s, i, n, &l1, &c1, cjk);
            if ((p & PT_OUT) || !(p & PT_WS)) break;
            if (c1 == '\r' || c1 == '\n') last_nl = i;
            last_start = i;
            i += l1;
        }
        if (last_nl >= 0) return last_nl + 1;
        if (p & PT_OUT) return i;
        return last_start > pos ? last_start : i;
    }
    /* No alternative matches at pos: the gap up to the next match start is a piece. */
    for (;;) {
        unsigned p = pt_ds(s, i, n, &l1, &c1, cjk);
        if ((p & PT_OUT) || (p & (PT_L | PT_M | PT_P | PT_S | PT_WS))) return i;
        int l2;
        uint32_t c2;
        unsigned q = pt_ds(s, i + l1, n, &l2, &c2, cjk);
        if (!(q & PT_OUT) && (q & (PT_L | PT_M))) return i; /* prefix + letters starts here */
        i += l1;
    }
}

static inline ptrdiff_t pt_next_piece(int family, const unsigned char *s, ptrdiff_t pos, ptrdiff_t n) {
    switch (family) {
        case PT_CL100K: return pt_scan_words(s, pos, n, 3, 1);
        case PT_LLAMA3: return pt_scan_words(s, pos, n, 3, 0);
        case PT_QWEN: return pt_scan_words(s, pos, n, 1, 0);
        case PT_O200K: return pt_scan_cased(s, pos, n, 3, 1);
        case PT_TEKKEN: return pt_scan_cased(s, pos, n, 1, 0);
        case PT_DEEPSEEK_V4: return pt_scan_deepseek_v4(s, pos, n);
        default: return n; /* unknown family: the whole segment is one piece */
    }
}

#endif
