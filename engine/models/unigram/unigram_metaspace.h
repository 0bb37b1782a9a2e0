/* unigram_metaspace.h: T5's pre-tokenizer and the Unigram model in one native pass.
 *
 * Why: T5 (and every tokenizer converted the same way) pre-tokenizes with
 * ``Sequence[WhitespaceSplit, Metaspace(split)]``; done in Python that is a string, a
 * bytes object and a list entry per word, which costs more than the word's Viterbi
 * pass (a hit in the word cache is one hash and one copy). Here the normalized text's
 * UTF-8 is walked once, each piece is formed in place (or, when it gets a replacement
 * in front, in a per-thread scratch buffer) and handed to ``UnigramCore::encode``,
 * whose cache and Viterbi are the model's own.
 *
 * The pieces, exactly those of tokenizers 0.23 (pre_tokenizers/whitespace.rs and
 * metaspace.rs) and of engine/pre_tokenizers/piece_pre_tokenizer.py:
 *
 * * WhitespaceSplit: the words are the maximal runs of characters that are not Unicode
 *   White_Space (Rust's ``char::is_whitespace``: U+0009..000D, U+0020, U+0085, U+00A0,
 *   U+1680, U+2000..200A, U+2028, U+2029, U+202F, U+205F, U+3000; NOT U+001C..001F,
 *   which Python's ``str.isspace`` counts). A word begins the input when ``first`` and
 *   it starts at byte 0.
 * * Metaspace on each word: its spaces become the replacement (a word has none: a space
 *   is White_Space); the replacement goes in front when the word does not start with
 *   it and the scheme says so ("always": every word; "first": the word that begins the
 *   input; "never": none); with ``split`` the word is then cut before every
 *   replacement but one at its start. Each piece is one Viterbi unit.
 *
 * Input must be valid UTF-8 (what ``str.encode`` gives): a multi-byte match of the
 * replacement or of a White_Space character then always sits on a character boundary.
 */
#ifndef TOKSERVE_UNIGRAM_METASPACE_H
#define TOKSERVE_UNIGRAM_METASPACE_H

#include <cstdint>
#include <cstring>
#include <vector>

#include "unigram_model.h"

enum { UG_PREPEND_ALWAYS = 0, UG_PREPEND_FIRST = 1, UG_PREPEND_NEVER = 2 };

/* The byte length of the White_Space character at s[i] (i < n), or 0. */
static inline size_t ug_white_space_at(const unsigned char *s, size_t i, size_t n) {
    const unsigned char c = s[i];
    if (c < 0x80) return (c == 0x20 || (c >= 0x09 && c <= 0x0D)) ? 1 : 0;
    if (c == 0xC2) return (i + 1 < n && (s[i + 1] == 0x85 || s[i + 1] == 0xA0)) ? 2 : 0;
    if (c < 0xE1 || c > 0xE3 || i + 2 >= n) return 0;
    const unsigned char b = s[i + 1], d = s[i + 2];
    if (c == 0xE1) return (b == 0x9A && d == 0x80) ? 3 : 0;  /* U+1680 */
    if (c == 0xE3) return (b == 0x80 && d == 0x80) ? 3 : 0;  /* U+3000 */
    if (b == 0x80)                                           /* U+2000..203F */
        return (d <= 0x8A || d == 0xA8 || d == 0xA9 || d == 0xAF) ? 3 : 0;
    return (b == 0x81 && d == 0x9F) ? 3 : 0;                 /* U+205F */
}

/* Whether byte c can begin a White_Space character: 0x09..0x0D, 0x20, 0xC2, 0xE1..0xE3. */
static inline bool ug_may_start_white_space(unsigned char c) {
    return c <= 0x20 ? (c == 0x20 || (c >= 0x09 && c <= 0x0D))
                     : (c == 0xC2 || (c >= 0xE1 && c <= 0xE3));
}

struct UgMetaspace {
    const unsigned char *rep;  /* the replacement character's UTF-8 */
    size_t rep_n;              /* 1..4 */
    int scheme;                /* UG_PREPEND_* */
    bool split;
};

/* The next occurrence of the replacement in s[from:n], or n. */
static inline size_t ug_find_rep(const UgMetaspace &m, const unsigned char *s, size_t from,
                                 size_t n) {
    while (from + m.rep_n <= n) {
        const void *hit = memchr(s + from, m.rep[0], n - from - m.rep_n + 1);
        if (hit == NULL) return n;
        size_t at = (size_t)((const unsigned char *)hit - s);
        if (memcmp(s + at, m.rep, m.rep_n) == 0) return at;
        from = at + 1;
    }
    return n;
}

/* One word w[0:n] (no White_Space in it): its pieces through core.encode. */
static inline int ug_metaspace_word(UnigramCore &core, const UgMetaspace &m,
                                    const unsigned char *w, size_t n, bool word_first,
                                    std::vector<int32_t> *ids, uint64_t *hits,
                                    uint64_t *misses) {
    const bool starts = n >= m.rep_n && memcmp(w, m.rep, m.rep_n) == 0;
    const bool prepend = !starts && (m.scheme == UG_PREPEND_ALWAYS ||
                                     (m.scheme == UG_PREPEND_FIRST && word_first));
    /* the first piece ends at the first replacement after position 0 */
    size_t end = m.split ? ug_find_rep(m, w, starts ? m.rep_n : 1, n) : n;
    int rc;
    if (prepend) {
        thread_local std::vector<unsigned char> scratch;  /* grown, never zeroed again */
        const size_t size = m.rep_n + end;
        if (scratch.size() < size) scratch.resize(size);
        memcpy(scratch.data(), m.rep, m.rep_n);
        memcpy(scratch.data() + m.rep_n, w, end);
        rc = core.encode(scratch.data(), size, ids, NULL, hits, misses);
        if (scratch.size() > 4096) std::vector<unsigned char>().swap(scratch);
    } else {
        rc = core.encode(w, end, ids, NULL, hits, misses);
    }
    while (rc == UG_OK && end < n) {  /* end sits on a replacement: a piece starts there */
        size_t next = ug_find_rep(m, w, end + m.rep_n, n);
        rc = core.encode(w + end, next - end, ids, NULL, hits, misses);
        end = next;
    }
    return rc;
}

/* Appends the ids of normalized text s[0:n] as WhitespaceSplit then Metaspace cut it
 * (``first``: the text begins the input). UG_OK, UG_MISSING_UNK or UG_TOO_LONG (then
 * ids holds a prefix of the text's ids; the caller drops them). Thread-safe. */
static inline int ug_encode_metaspace(UnigramCore &core, const UgMetaspace &m,
                                      const unsigned char *s, size_t n, bool first,
                                      std::vector<int32_t> *ids, uint64_t *hits,
                                      uint64_t *misses) {
    if (n > (size_t)INT32_MAX) return UG_TOO_LONG;
    size_t i = 0;
    while (i < n) {
        size_t ws;
        while (i < n && (ws = ug_white_space_at(s, i, n)) != 0) i += ws;
        if (i >= n) break;
        const size_t start = i;
        while (i < n && !(ug_may_start_white_space(s[i]) && ug_white_space_at(s, i, n))) i++;
        int rc = ug_metaspace_word(core, m, s + start, i - start, first && start == 0, ids,
                                   hits, misses);
        if (rc != UG_OK) return rc;
    }
    return UG_OK;
}

#endif
