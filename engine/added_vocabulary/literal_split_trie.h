/* literal_split_trie.h: leftmost-longest search for a set of byte literals, in one pass.
 *
 * Why bytes give the matches the str search gives. The literals and the text are valid
 * UTF-8. A literal begins with a lead byte, which in valid UTF-8 only ever begins a
 * character, so a byte position where a literal matches is a character position where it
 * matches; the leftmost such byte is the leftmost such character. Two literals matching
 * at one position are one a prefix of the other, so the longer in bytes is the longer in
 * characters. Hence the byte matches here are, converted, exactly the character matches
 * of added_tokens.py's LiteralTrie and of its literal alternation (sorted longest first).
 *
 * The trie: a 256-entry table for the first byte (most bytes of a text begin no literal:
 * one load each), then an open-addressing table of (node, byte) -> child. Each node holds
 * the id of the literal ending there (-1: none) and whether that literal is refused.
 * Immutable after finish(): find() is safe from many threads at once.
 */
#ifndef TOKSERVE_LITERAL_SPLIT_TRIE_H
#define TOKSERVE_LITERAL_SPLIT_TRIE_H

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace literal_split {

class Trie {
public:
    Trie() {
        for (int b = 0; b < 256; ++b) root_[b] = -1;
        term_.push_back(-1);  // node 0: the root
        refused_.push_back(0);
    }

    /* One literal (n > 0); a literal added again takes the later id, as a dict would. */
    void add(const unsigned char *p, size_t n, int32_t id, bool refused) {
        int32_t node = 0;
        for (size_t i = 0; i < n; ++i) {
            int32_t next = child_building(node, p[i]);
            if (next < 0) {
                next = (int32_t)term_.size();
                term_.push_back(-1);
                refused_.push_back(0);
                if (node == 0) root_[p[i]] = next;
                else building_[key(node, p[i])] = next;
            }
            node = next;
        }
        term_[node] = id;
        refused_[node] = refused ? 1 : 0;
    }

    /* Moves the edges into the probe table; add() must not be called after. */
    void finish() {
        size_t size = 16;
        shift_ = 60;
        while (size < 2 * building_.size() + 2) size <<= 1, --shift_;
        keys_.assign(size, EMPTY);
        vals_.assign(size, -1);
        mask_ = size - 1;
        for (const auto &kv : building_) {
            size_t h = slot(kv.first);
            while (keys_[h] != EMPTY) h = (h + 1) & mask_;
            keys_[h] = kv.first;
            vals_[h] = kv.second;
        }
        building_.clear();
    }

    /* Appends (start, end, id) byte triples of the leftmost-longest matches in p[0:n] to
     * out. With stop_on_refused, returns false as soon as a refused literal matches
     * (out is then incomplete); true otherwise. */
    bool find(const unsigned char *p, size_t n, std::vector<int64_t> &out,
              bool stop_on_refused) const {
        size_t pos = 0;
        while (pos < n) {
            while (pos < n && root_[p[pos]] < 0) ++pos;
            if (pos >= n) break;
            int32_t node = root_[p[pos]];
            size_t i = pos + 1, end = 0;
            int32_t best = -1;
            if (term_[node] >= 0) end = i, best = node;
            while (i < n) {
                node = child(node, p[i]);
                if (node < 0) break;
                ++i;
                if (term_[node] >= 0) end = i, best = node;
            }
            if (best < 0) {
                ++pos;
                continue;
            }
            if (stop_on_refused && refused_[best]) return false;
            out.push_back((int64_t)pos);
            out.push_back((int64_t)end);
            out.push_back((int64_t)term_[best]);
            pos = end;
        }
        return true;
    }

private:
    static constexpr uint64_t EMPTY = ~(uint64_t)0;

    static uint64_t key(int32_t node, unsigned char b) {
        return ((uint64_t)(uint32_t)node << 8) | b;
    }
    size_t slot(uint64_t k) const {
        return (size_t)((k * 0x9E3779B97F4A7C15ULL) >> shift_);
    }
    int32_t child(int32_t node, unsigned char b) const {
        uint64_t k = key(node, b);
        size_t h = slot(k);
        while (true) {
            uint64_t at = keys_[h];
            if (at == k) return vals_[h];
            if (at == EMPTY) return -1;
            h = (h + 1) & mask_;
        }
    }
    int32_t child_building(int32_t node, unsigned char b) const {
        if (node == 0) return root_[b];
        auto it = building_.find(key(node, b));
        return it == building_.end() ? -1 : it->second;
    }

    int32_t root_[256];
    std::vector<int32_t> term_;
    std::vector<unsigned char> refused_;
    std::unordered_map<uint64_t, int32_t> building_;
    std::vector<uint64_t> keys_;
    std::vector<int32_t> vals_;
    size_t mask_ = 0;
    int shift_ = 60;
};

}  // namespace literal_split

#endif
