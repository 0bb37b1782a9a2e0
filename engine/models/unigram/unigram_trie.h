/* unigram_trie.h: the Unigram model's pieces as a double-array byte trie.
 *
 * Why a double array: Viterbi asks, at every character of a word, "which pieces start
 * here?" — a common-prefix search that walks one trie edge per byte. In a double array
 * an edge is one load and one compare (cell base[s] + byte, owned by s when its check
 * is s), with no hashing and no per-node child lists, and every cell of a walk is in a
 * flat array (tokenizers' trie is a hash map per node: a hash and a pointer chase per
 * byte).
 *
 * Layout: one 12-byte cell per state {base, check, id}; state 0 is the root. The array
 * is padded so that base + 255 is always inside it: a walk needs no bounds check.
 * ``id`` is the piece that ends at the state (-1: none). Duplicate pieces keep the last
 * id, as tokenizers' token -> id map does (a later insert overwrites); empty pieces are
 * not in the trie (a prefix search never yields the empty string there either).
 *
 * Building: keys sorted, states placed depth-first; a state's children are placed at
 * the first base whose cells are all free, found through a list of free cells. A cell
 * that keeps failing as the first child's position leaves the candidate list (it can
 * still take a later child), so the search does not rescan a dense prefix of the array
 * for every state: linear-ish in the total key length in practice.
 */
#ifndef TOKSERVE_UNIGRAM_TRIE_H
#define TOKSERVE_UNIGRAM_TRIE_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

struct UgCell {
    int32_t base;   /* children at base + byte; 0 for a leaf */
    int32_t check;  /* parent state; -1 = free cell */
    int32_t id;     /* piece ending here, or -1 */
};

class UnigramTrie {
public:
    /* Next state from s on byte c, or -1. */
    inline int32_t next(int32_t s, unsigned char c) const {
        int32_t t = cells_[s].base + c;
        return cells_[t].check == s ? t : -1;
    }

    inline int32_t id_at(int32_t s) const { return cells_[s].id; }

    /* Id of exactly p[0:n], or -1. */
    int32_t find(const unsigned char *p, size_t n) const {
        if (n == 0 || cells_.empty()) return -1;
        int32_t s = 0;
        for (size_t i = 0; i < n && s >= 0; i++) s = next(s, p[i]);
        return s >= 0 ? cells_[s].id : -1;
    }

    size_t cells() const { return cells_.size(); }

    /* keys: (piece bytes, id). False when the array would pass 2^31 cells. */
    bool build(std::vector<std::pair<std::string, int32_t>> keys) {
        /* sort by bytes, keeping the later of equal pieces (stable, then last of a run) */
        typedef std::pair<std::string, int32_t> Key;
        std::stable_sort(keys.begin(), keys.end(),
                         [](const Key &a, const Key &b) { return a.first < b.first; });
        std::vector<std::pair<std::string, int32_t>> unique;
        unique.reserve(keys.size());
        for (size_t i = 0; i < keys.size(); i++) {
            if (keys[i].first.empty()) continue;
            if (i + 1 < keys.size() && keys[i + 1].first == keys[i].first) continue;
            unique.push_back(std::move(keys[i]));
        }
        cells_.clear();
        nxt_.clear();
        prv_.clear();
        fails_.clear();
        head_ = tail_ = -1;
        if (!grow(512)) return false;
        take(0);
        cells_[0].check = 0;
        struct Job { int32_t state; size_t lo, hi, depth; };
        std::vector<Job> stack;
        stack.push_back({0, 0, unique.size(), 0});
        std::vector<unsigned char> labels;
        std::vector<size_t> starts;
        while (!stack.empty()) {
            Job job = stack.back();
            stack.pop_back();
            size_t lo = job.lo;
            if (lo < job.hi && unique[lo].first.size() == job.depth) {
                cells_[job.state].id = unique[lo].second;
                lo++;
            }
            if (lo == job.hi) continue;
            labels.clear();
            starts.clear();
            for (size_t i = lo; i < job.hi; i++) {
                unsigned char c = (unsigned char)unique[i].first[job.depth];
                if (labels.empty() || labels.back() != c) {
                    labels.push_back(c);
                    starts.push_back(i);
                }
            }
            starts.push_back(job.hi);
            int64_t base = place(labels);
            if (base < 0) return false;
            cells_[job.state].base = (int32_t)base;
            for (size_t k = 0; k < labels.size(); k++) {
                int32_t child = (int32_t)(base + labels[k]);
                take(child);
                cells_[child].check = job.state;
                stack.push_back({child, starts[k], starts[k + 1], job.depth + 1});
            }
        }
        /* pad: every base + 255 inside the array, so next() needs no bounds check */
        int64_t top = 0;
        for (const UgCell &c : cells_) top = std::max<int64_t>(top, c.base);
        if (!grow((size_t)top + 256)) return false;
        while (!cells_.empty() && cells_.back().check < 0 && cells_.size() > (size_t)top + 256)
            cells_.pop_back();
        cells_.shrink_to_fit();
        std::vector<int32_t>().swap(nxt_);
        std::vector<int32_t>().swap(prv_);
        std::vector<uint8_t>().swap(fails_);
        return true;
    }

private:
    static const int32_t MAX_CELLS = 0x7FFFFF00;
    static const uint8_t RETIRE_AFTER = 16;  /* failed placements before a cell retires */

    /* Extend the array to n cells, the new ones free and on the candidate list. */
    bool grow(size_t n) {
        if (n > (size_t)MAX_CELLS) return false;
        size_t old = cells_.size();
        if (n <= old) return true;
        cells_.resize(n, UgCell{0, -1, -1});
        nxt_.resize(n, -1);
        prv_.resize(n, -1);
        fails_.resize(n, 0);
        for (size_t i = old; i < n; i++) link((int32_t)i);
        return true;
    }

    void link(int32_t i) {
        prv_[i] = tail_;
        nxt_[i] = -1;
        if (tail_ >= 0) nxt_[tail_] = i; else head_ = i;
        tail_ = i;
    }

    void unlink(int32_t i) {
        if (prv_[i] == -2) return;  /* not on the list */
        if (prv_[i] >= 0) nxt_[prv_[i]] = nxt_[i]; else head_ = nxt_[i];
        if (nxt_[i] >= 0) prv_[nxt_[i]] = prv_[i]; else tail_ = prv_[i];
        prv_[i] = nxt_[i] = -2;
    }

    void take(int32_t i) {
        unlink(i);
        cells_[i].check = -3;  /* owned; the caller sets the real parent */
    }

    /* A base >= 1 where every base + label is a free cell (labels ascending). */
    int64_t place(const std::vector<unsigned char> &labels) {
        const int64_t first = labels[0];
        int32_t cell = head_;
        for (;;) {
            if (cell < 0) {  /* no candidate left: add cells at the end */
                size_t old = cells_.size();
                if (!grow(old + 1024)) return -1;
                cell = (int32_t)old;
                continue;
            }
            int64_t base = (int64_t)cell - first;
            if (base < 1) {
                cell = nxt_[cell];
                continue;
            }
            if (!grow((size_t)base + 256)) return -1;
            bool fits = true;
            for (size_t k = 1; k < labels.size() && fits; k++)
                fits = cells_[base + labels[k]].check == -1;
            if (fits) return base;
            int32_t following = nxt_[cell];
            if (++fails_[cell] >= RETIRE_AFTER) unlink(cell);
            cell = following;
        }
    }

    std::vector<UgCell> cells_;
    std::vector<int32_t> nxt_, prv_;  /* candidate list of free cells (builder only) */
    std::vector<uint8_t> fails_;
    int32_t head_ = -1, tail_ = -1;
};

#endif
