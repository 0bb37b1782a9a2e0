/* precompiled_normalize.h: tokenizers' Precompiled normalizer over UTF-8, with the
 * alignment tokenizers derives from it.
 *
 * The rule (tokenizers 0.23, normalizers/precompiled.rs): per extended grapheme
 * cluster, a cluster under 6 bytes whose bytes start with a charsmap key becomes that
 * key's replacement (the shortest key; the rest of the cluster is dropped); otherwise
 * each of its characters that is a key becomes its replacement and the others stay.
 * So "\r\n" (one cluster) becomes one space, and "ª́" becomes "a".
 *
 * Alignment: tokenizers records each replacement as ``(char, change)`` entries
 * (``replace`` there: the new characters with change 0; when the replacement is longer
 * the last ``diff`` of them become insertions, change 1; when shorter, the entry BEFORE
 * the replacement, whatever it was, takes the missing characters as removals, and
 * nothing records them when there is no entry yet). ``NormalizedString::transform`` then
 * walks the input with a cursor: an insertion is aligned with the character before the
 * cursor (with nothing, (0, 0), at the start); any other entry with the character at
 * the cursor, which it consumes along with as many more as it removes. ``pc_spans``
 * replays exactly that walk, so quirks such as "™\x1e" (its "M" aligned with the
 * removed "\x1e") come out as tokenizers has them.
 *
 * The common case is cheap: a run of ASCII that is not a key (everything but control
 * characters in T5's charsmap) followed by ASCII is copied as a block: an ASCII
 * character never joins the cluster of the character before it (no ASCII character
 * extends a cluster), and one followed by ASCII is a cluster of its own (CR LF aside;
 * CR is a key, so never in such a run).
 */
#ifndef TOKSERVE_PRECOMPILED_NORMALIZE_H
#define TOKSERVE_PRECOMPILED_NORMALIZE_H

#include <cstdint>
#include <string>
#include <vector>

#include "precompiled_charsmap.h"
#include "precompiled_graphemes.h"

class PcNormalizer {
public:
    PcCharsmap map;

    int load(const unsigned char *blob, size_t size) {
        int rc = map.load(blob, size);
        for (int b = 0; b < 256; b++) {
            uint32_t len;
            plain_[b] = b < 0x80 && map.ascii((unsigned char)b, &len) < 0 && b != '\r';
        }
        return rc;
    }

    /* Appends the normalized s[0:n] to *out; true when anything changed. With
     * ``changes``, also appends tokenizers' change value per output character. */
    bool normalize(const unsigned char *s, size_t n, std::string *out,
                   std::vector<int32_t> *changes) const {
        bool modified = false;
        size_t i = 0;
        while (i < n) {
            size_t run = i;
            while (run < n && plain_[s[run]] && (run + 1 == n || s[run + 1] < 0x80)) run++;
            if (run > i) {
                out->append((const char *)s + i, run - i);
                if (changes) changes->insert(changes->end(), run - i, 0);
                i = run;
                continue;
            }
            size_t end = pc_cluster_end(s, n, i);
            const unsigned char *value;
            size_t len;
            bool whole = end - i < 6;
            if (whole && map.lookup(s + i, end - i, &value, &len)) {
                replace(s + i, end - i, value, len, out, changes);
                modified = true;
                i = end;
                continue;
            }
            if (whole) {  /* no key starts the cluster, so none is its first character */
                size_t clen;
                pc_decode(s, n, i, &clen);
                out->append((const char *)s + i, clen);
                if (changes) changes->push_back(0);
                i += clen;
            }
            while (i < end) {
                size_t clen;
                pc_decode(s, n, i, &clen);
                if (map.lookup(s + i, clen, &value, &len)) {
                    replace(s + i, clen, value, len, out, changes);
                    modified = true;
                } else {
                    out->append((const char *)s + i, clen);
                    if (changes) changes->push_back(0);
                }
                i += clen;
            }
        }
        return modified;
    }

private:
    bool plain_[256];

    static size_t count_chars(const unsigned char *p, size_t n) {
        size_t count = 0;
        for (size_t i = 0; i < n; i++) count += (p[i] & 0xC0) != 0x80;
        return count;
    }

    /* ``old`` (input bytes) became ``value``: tokenizers' ``replace``. */
    static void replace(const unsigned char *old, size_t old_len, const unsigned char *value,
                        size_t len, std::string *out, std::vector<int32_t> *changes) {
        out->append((const char *)value, len);
        if (!changes) return;
        int64_t old_count = (int64_t)count_chars(old, old_len);
        int64_t new_count = (int64_t)count_chars(value, len);
        int64_t diff = new_count - old_count;
        changes->insert(changes->end(), (size_t)new_count, 0);
        if (diff > 0) {
            for (int64_t k = 0; k < diff; k++) (*changes)[changes->size() - 1 - k] = 1;
        } else if (diff < 0 && !changes->empty()) {
            changes->back() += (int32_t)diff;
        }
    }
};

/* NormalizedString::transform's walk over a fresh string of ``input_chars`` characters:
 * per output character, the input character it is aligned with (its span is that one
 * character), or -1 for an insertion at the very start (tokenizers' (0, 0)). The cursor
 * never passes the input's end on tokenizers' own changes; it is clamped all the same. */
static inline void pc_sources(const std::vector<int32_t> &changes, size_t input_chars,
                              std::vector<int32_t> *sources) {
    size_t cursor = 0;
    sources->reserve(sources->size() + changes.size());
    for (int32_t change : changes) {
        if (change > 0) {
            sources->push_back(cursor ? (int32_t)(cursor - 1) : -1);
            continue;
        }
        size_t at = cursor < input_chars ? cursor : input_chars - 1;
        sources->push_back(input_chars ? (int32_t)at : -1);
        cursor += 1 + (size_t)(change < 0 ? -(int64_t)change : 0);
    }
}

#endif
