/* precompiled_charsmap.h: SentencePiece's compiled normalization charsmap, read in place.
 *
 * The blob (SentencePiece normalizer.cc, EncodePrecompiledCharsMap): a little-endian
 * uint32 trie size in bytes, that many bytes of darts-clone double-array units (uint32
 * each), then the replacement strings, each ended by NUL. A key's leaf value is the
 * byte offset of its replacement.
 *
 * The lookup is tokenizers' (its spm_precompiled crate, established against tokenizers
 * 0.23 because that crate's source is not at hand; tests/engine/normalizers check it):
 * ``transform(chunk)`` walks the trie over the chunk's bytes and answers the FIRST key
 * it meets, i.e. the SHORTEST key that is a prefix of the chunk, whose replacement then
 * stands for the whole chunk (SentencePiece itself takes the longest match and consumes
 * only its bytes). The unit layout is darts-clone's: has_leaf = bit 8, value = bits
 * 0-30, label = bits 0-7 plus bit 31, offset = (unit >> 10) << ((unit & (1 << 9)) >> 6).
 *
 * Every unit index and replacement offset is checked against the blob's size, so a
 * damaged charsmap answers "no key" where tokenizers would index out of bounds (it
 * panics there); nothing here reads outside the blob.
 */
#ifndef TOKSERVE_PRECOMPILED_CHARSMAP_H
#define TOKSERVE_PRECOMPILED_CHARSMAP_H

#include <cstdint>
#include <cstring>
#include <vector>

enum { PC_OK = 0, PC_TOO_SHORT = 1, PC_BAD_TRIE_SIZE = 2 };

class PcCharsmap {
public:
    /* Reads (copies) the blob. PC_OK, or why the blob cannot be a charsmap. */
    int load(const unsigned char *blob, size_t size) {
        units_.clear();
        normalized_.clear();
        if (size < 4) return PC_TOO_SHORT;
        uint32_t trie_size = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 |
                             (uint32_t)blob[2] << 16 | (uint32_t)blob[3] << 24;
        if (trie_size == 0 || trie_size % 4 != 0 || trie_size > size - 4) return PC_BAD_TRIE_SIZE;
        units_.resize(trie_size / 4);
        for (size_t i = 0; i < units_.size(); i++) {
            const unsigned char *p = blob + 4 + 4 * i;
            units_[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24;
        }
        normalized_.assign(blob + 4 + trie_size, blob + size);
        for (int c = 0; c < 128; c++) {
            unsigned char byte = (unsigned char)c;
            const unsigned char *out;
            size_t len;
            ascii_[c] = lookup(&byte, 1, &out, &len) ? (int32_t)(out - normalized_.data()) : -1;
            ascii_len_[c] = ascii_[c] >= 0 ? (uint32_t)len : 0;
        }
        return PC_OK;
    }

    /* The replacement of the shortest key that is a prefix of s[0:n], or false. */
    bool lookup(const unsigned char *s, size_t n, const unsigned char **out, size_t *len) const {
        const size_t size = units_.size();
        const uint32_t *units = units_.data();
        uint64_t pos = offset(units[0]);
        for (size_t i = 0; i < n; i++) {
            pos ^= s[i];
            if (pos >= size) return false;
            uint32_t unit = units[pos];
            if ((unit & 0x800000FFu) != s[i]) return false;
            pos ^= offset(unit);
            if (unit & (1u << 8)) {  /* a key ends here: the first (shortest) one wins */
                if (pos >= size) return false;
                return value_at(units[pos] & 0x7FFFFFFFu, out, len);
            }
        }
        return false;
    }

    /* A one-byte (ASCII) chunk's replacement offset in replacements(), or -1. */
    inline int32_t ascii(unsigned char c, uint32_t *len) const {
        *len = ascii_len_[c];
        return ascii_[c];
    }

    const unsigned char *replacements() const { return normalized_.data(); }
    size_t replacements_size() const { return normalized_.size(); }

private:
    static inline uint64_t offset(uint32_t unit) {
        return (uint64_t)(unit >> 10) << ((unit & (1u << 9)) >> 6);
    }

    bool value_at(uint32_t value, const unsigned char **out, size_t *len) const {
        const size_t size = normalized_.size();
        if (value > size) return false;
        const unsigned char *start = normalized_.data() + value;
        const void *nul = value < size ? memchr(start, 0, size - value) : nullptr;
        *out = start;
        *len = nul ? (size_t)((const unsigned char *)nul - start) : size - value;
        return true;
    }

    std::vector<uint32_t> units_;
    std::vector<unsigned char> normalized_;
    int32_t ascii_[128];
    uint32_t ascii_len_[128];
};

#endif
