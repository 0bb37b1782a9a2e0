/* piece_bpe_gaps.h: a whole text through the model, its literals already found.
 *
 * A SentencePiece tokenizer whose pre-tokenizer never cuts (Gemma 3) encodes a text as:
 * the added-token literals' ids, and between them each gap normalized ON ITS OWN and
 * handed to the model whole (piece_added.py: tokenizers' extract_and_normalize). Done
 * gap by gap from Python, the per-gap work (slicing, str.replace, a model call) costs
 * more than the merging on text with many literals (a newline run is one). Here it is
 * one loop in C++ over the text's UTF-8 and the literal triples.
 *
 * The normalizer is PieceNormalizer's fused case, on bytes: a non-empty gap becomes
 * ``prefix + gap.replace(pattern, content)`` (a non-empty pattern); an empty result is
 * skipped, as there. Replacing UTF-8 bytes replaces the same characters str.replace
 * does: a pattern's bytes can only match at a character boundary of valid UTF-8, and
 * the left-to-right, non-overlapping scan is the same on both.
 */
#ifndef TOKSERVE_PIECE_BPE_GAPS_H
#define TOKSERVE_PIECE_BPE_GAPS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "piece_bpe_model.h"

namespace piece_bpe {

enum { PB_GAP_TOO_LONG = 100 };

/* The fused normalizer's three strings (UTF-8). */
struct GapNormalizer {
    const unsigned char *pattern;
    size_t pattern_len;  /* > 0 */
    const unsigned char *content;
    size_t content_len;
    const unsigned char *prefix;
    size_t prefix_len;
};

/* prefix + p[0:n].replace(pattern, content), into buf (n > 0). */
inline void normalize_gap(const unsigned char *p, size_t n, const GapNormalizer &g,
                          std::vector<unsigned char> &buf) {
    buf.clear();
    buf.insert(buf.end(), g.prefix, g.prefix + g.prefix_len);
    size_t pos = 0;
    const unsigned char first = g.pattern[0];
    while (pos + g.pattern_len <= n) {
        const void *hit = memchr(p + pos, first, n - pos - g.pattern_len + 1);
        if (!hit) break;
        size_t k = (size_t)((const unsigned char *)hit - p);
        if (memcmp(p + k, g.pattern, g.pattern_len) == 0) {
            buf.insert(buf.end(), p + pos, p + k);
            buf.insert(buf.end(), g.content, g.content + g.content_len);
            pos = k + g.pattern_len;
        } else {
            buf.insert(buf.end(), p + pos, p + k + 1);
            pos = k + 1;
        }
    }
    buf.insert(buf.end(), p + pos, p + n);
}

/* Appends to ids the ids of p[0:n] whose literals are the (start, end, id) triples
 * cuts[0:3 * count] (byte offsets, in order, not overlapping: checked by the caller).
 * Returns PB_OK, or the model's error, or PB_GAP_TOO_LONG (a normalized gap the model
 * cannot take: max_bytes or more). */
inline int encode_gaps(const Model &m, const unsigned char *p, size_t n, const int64_t *cuts,
                       size_t count, const GapNormalizer &g, size_t max_bytes,
                       std::vector<int32_t> &ids, Stats *st) {
    Scratch w;
    std::vector<unsigned char> buf;
    size_t pos = 0;
    for (size_t k = 0; k <= count; ++k) {
        size_t stop = k < count ? (size_t)cuts[3 * k] : n;
        if (stop > pos) {
            normalize_gap(p + pos, stop - pos, g, buf);
            if (!buf.empty()) {
                if (buf.size() >= max_bytes) return PB_GAP_TOO_LONG;
                Out out;
                size_t before = ids.size();
                ids.resize(before + buf.size());
                out.ids = ids.data();
                out.lens = nullptr;
                out.count = before;
                int rc = m.encode(buf.data(), buf.size(), &out, &w, st);
                ids.resize(out.count);
                if (rc != PB_OK) return rc;
            }
        }
        if (k < count) {
            ids.push_back((int32_t)cuts[3 * k + 2]);
            pos = (size_t)cuts[3 * k + 1];
        }
    }
    return PB_OK;
}

}  // namespace piece_bpe

#endif
