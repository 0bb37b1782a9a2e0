/* piece_bpe_pages.h: large tables in 2 MiB pages where the system gives them.
 *
 * Why: the merge loop's lookups land at random in the merge table (16 MiB for Gemma 3)
 * and loading writes at random into it and the vocabulary's table. In 4 KiB pages
 * nearly every such access also misses the TLB, and in a virtual machine a TLB miss is
 * a walk through two levels of page tables: loading Gemma 3 spent most of its time
 * there. engine/_native/large_pages.h does the same for the byte-level model's image
 * (a read-only copy); these tables are built in place, so this is an allocator.
 *
 * How: allocations of 2 MiB or more are anonymous private mappings aligned to 2 MiB and
 * marked MADV_HUGEPAGE (honoured by a kernel with transparent huge pages in "madvise"
 * or "always" mode, ignored otherwise); smaller ones, and systems without mmap, use
 * malloc. Zero-filled either way is not promised (std::vector initializes).
 */
#ifndef TOKSERVE_PIECE_BPE_PAGES_H
#define TOKSERVE_PIECE_BPE_PAGES_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define PIECE_BPE_MMAP 1
#endif

namespace piece_bpe {

static constexpr size_t HUGE_PAGE = (size_t)2 << 20;

/* n bytes, 2 MiB-aligned in a mapping when n is 2 MiB or more; nullptr if none. */
static inline void *pages_alloc(size_t n) {
#ifdef PIECE_BPE_MMAP
    if (n >= HUGE_PAGE) {
        size_t len = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *raw = mmap(nullptr, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return nullptr;
        uintptr_t first = (uintptr_t)raw;
        uintptr_t start = (first + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        if (start > first) munmap(raw, start - first);
        if (first + HUGE_PAGE > start) munmap((void *)(start + len), first + HUGE_PAGE - start);
#ifdef MADV_HUGEPAGE
        madvise((void *)start, len, MADV_HUGEPAGE);  /* advice: failure changes nothing */
#endif
        return (void *)start;
    }
#endif
    return malloc(n ? n : 1);
}

static inline void pages_free(void *p, size_t n) {
#ifdef PIECE_BPE_MMAP
    if (n >= HUGE_PAGE) {
        munmap(p, (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
        return;
    }
#endif
    free(p);
}

/* std::vector<T, PagesAllocator<T>>: a vector whose large buffers are in 2 MiB pages. */
template <class T>
struct PagesAllocator {
    typedef T value_type;
    PagesAllocator() = default;
    template <class U>
    PagesAllocator(const PagesAllocator<U> &) {}
    T *allocate(size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        void *p = pages_alloc(n * sizeof(T));
        if (!p) throw std::bad_alloc();
        return (T *)p;
    }
    void deallocate(T *p, size_t n) { pages_free(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const PagesAllocator<U> &) const { return true; }
    template <class U>
    bool operator!=(const PagesAllocator<U> &) const { return false; }
};

}  // namespace piece_bpe

#endif
