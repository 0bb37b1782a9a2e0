/* precompiled_graphemes.h: extended grapheme clusters (UAX #29), as tokenizers cuts them.
 *
 * Why: tokenizers' Precompiled normalizer looks a whole cluster up when it is under 6
 * bytes (Rust's unicode-segmentation ``graphemes(true)``), so cluster boundaries decide
 * its output. The rules, in UAX #29's order (Unicode 17.0):
 *   GB3  CR x LF                    GB4  (Control|CR|LF) /     GB5  / (Control|CR|LF)
 *   GB6  L x (L|V|LV|LVT)           GB7  (LV|V) x (V|T)        GB8  (LVT|T) x T
 *   GB9  x (Extend|ZWJ)             GB9a x SpacingMark         GB9b Prepend x
 *   GB9c InCB=Consonant [InCB=Extend|Linker]* InCB=Linker [InCB=Extend|Linker]* x Consonant
 *   GB11 ExtPict Extend* ZWJ x ExtPict
 *   GB12/13 an odd run of Regional_Indicator x Regional_Indicator
 *   GB999 otherwise a break.
 * Every sequence a rule looks back over (the emoji, conjunct and flag runs) lies inside
 * the current cluster, so segmenting from a known boundary needs only three small
 * states. Properties come from precompiled_grapheme_tables.h (generated).
 *
 * Input is UTF-8 from a Python str (valid); decoding still never reads past the end.
 */
#ifndef TOKSERVE_PRECOMPILED_GRAPHEMES_H
#define TOKSERVE_PRECOMPILED_GRAPHEMES_H

#include <cstddef>
#include <cstdint>

#include "precompiled_grapheme_tables.h"

/* The code point at s[i] (i < n) and its byte length in *len. */
static inline uint32_t pc_decode(const unsigned char *s, size_t n, size_t i, size_t *len) {
    unsigned char b = s[i];
    if (b < 0x80) {
        *len = 1;
        return b;
    }
    size_t want = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (want > n - i) want = n - i;
    uint32_t cp = b & (want == 2 ? 0x1F : want == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < want; k++) cp = (cp << 6) | (s[i + k] & 0x3F);
    *len = want;
    return cp;
}

struct PcClusterState {
    unsigned prev;   /* break class of the last character */
    unsigned emoji;  /* 1: ExtPict Extend*, 2: ExtPict Extend* ZWJ, 0: neither */
    unsigned incb;   /* 1: Consonant [Extend|Linker]*, 2: ... with a Linker, 0: neither */
    unsigned ri;     /* Regional_Indicators in a row */

    void start(unsigned props) {
        prev = props & 15;
        emoji = 0;
        incb = 0;
        ri = 0;
        add(props);
    }

    /* Whether a character with ``props`` stays in the cluster (the rules above). */
    bool joins(unsigned props) const {
        unsigned cur = props & 15;
        if (prev == GCB_CR) return cur == GCB_LF;
        if (prev == GCB_LF || prev == GCB_CONTROL) return false;
        if (cur == GCB_CR || cur == GCB_LF || cur == GCB_CONTROL) return false;
        if (prev == GCB_L && (cur == GCB_L || cur == GCB_V || cur == GCB_LV || cur == GCB_LVT))
            return true;
        if ((prev == GCB_LV || prev == GCB_V) && (cur == GCB_V || cur == GCB_T)) return true;
        if ((prev == GCB_LVT || prev == GCB_T) && cur == GCB_T) return true;
        if (cur == GCB_EXTEND || cur == GCB_ZWJ || cur == GCB_SPACINGMARK) return true;
        if (prev == GCB_PREPEND) return true;
        if (incb == 2 && (props >> 5) == INCB_CONSONANT) return true;
        if (emoji == 2 && (props & 16)) return true;
        if (prev == GCB_REGIONAL_INDICATOR && cur == GCB_REGIONAL_INDICATOR && (ri & 1))
            return true;
        return false;
    }

    /* A character with ``props`` joined the cluster. */
    void add(unsigned props) {
        unsigned cur = props & 15, conj = props >> 5;
        if (props & 16) emoji = 1;
        else if (emoji == 1 && cur == GCB_EXTEND) emoji = 1;
        else if (emoji == 1 && cur == GCB_ZWJ) emoji = 2;
        else emoji = 0;
        if (conj == INCB_CONSONANT) incb = 1;
        else if (incb && conj == INCB_LINKER) incb = 2;
        else if (incb && conj == INCB_EXTEND) incb = incb;
        else incb = 0;
        ri = cur == GCB_REGIONAL_INDICATOR ? ri + 1 : 0;
        prev = cur;
    }
};

/* The end of the extended grapheme cluster that starts at s[i] (i < n, a boundary). */
static inline size_t pc_cluster_end(const unsigned char *s, size_t n, size_t i) {
    size_t len;
    PcClusterState state;
    state.start(gc_props(pc_decode(s, n, i, &len)));
    size_t j = i + len;
    while (j < n) {
        unsigned props = gc_props(pc_decode(s, n, j, &len));
        if (!state.joins(props)) break;
        state.add(props);
        j += len;
    }
    return j;
}

#endif
