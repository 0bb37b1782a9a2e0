/* large_pages.h: memory for a built image, in 2 MiB pages where the system gives them.
 *
 * Why: the BPE model's hot lookups land at random in its largest tables (the byte
 * table's slots and the pair table: 4 MiB each for cl100k_base). In 4 KiB pages nearly
 * every one of them also misses the TLB, and in a virtual machine a TLB miss is a walk
 * through two levels of page tables. In 2 MiB pages the whole image needs a few TLB
 * entries (benchmarks/README.md has what it changed). An image built in this process
 * (the library's ``load``, the first load of a service's artifact version) is private
 * memory either way; a tables file that processes map (tables.py) is in the page
 * cache, which the kernel maps in 2 MiB pages by itself when its folios are that large.
 *
 * How: an anonymous private mapping cut to start on a 2 MiB boundary and to end on a
 * 4 KiB one (a partial last 2 MiB stays in small pages: no page is paid for beyond
 * the image), marked MADV_HUGEPAGE, which a kernel with transparent huge pages in
 * "madvise" or "always" mode honours and any other ignores. After the image is
 * copied in, the pages are made read-only: the model only ever reads them, and a stray
 * write now faults instead of corrupting every later encode.
 */
#ifndef TOKSERVE_LARGE_PAGES_H
#define TOKSERVE_LARGE_PAGES_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define LP_MMAP 1
#endif

static const size_t LP_LARGE = (size_t)2 << 20;

typedef struct {
    unsigned char *data;  /* NULL: out of memory */
    size_t mapped;        /* length of the mapping; 0: from malloc */
} lp_block;

/* A read-only copy of data[0:n] at a 2 MiB boundary; where the system cannot map one,
 * a malloc'd copy (the same bytes, in whatever pages malloc gives). */
static inline lp_block lp_copy(const unsigned char *data, size_t n) {
    lp_block b = {NULL, 0};
#ifdef LP_MMAP
    long page = sysconf(_SC_PAGESIZE);
    if (n > 0 && page > 0 && n <= SIZE_MAX / 2) {
        size_t len = (n + (size_t)page - 1) / (size_t)page * (size_t)page;
        void *raw = mmap(NULL, len + LP_LARGE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw != MAP_FAILED) {
            uintptr_t first = (uintptr_t)raw;
            uintptr_t start = (first + LP_LARGE - 1) & ~(uintptr_t)(LP_LARGE - 1);
            if (start > first) munmap(raw, start - first);
            if (first + LP_LARGE > start) munmap((void *)(start + len), first + LP_LARGE - start);
#ifdef MADV_HUGEPAGE
            madvise((void *)start, len, MADV_HUGEPAGE);  /* advice: failure changes nothing */
#endif
            memcpy((void *)start, data, n);
            mprotect((void *)start, len, PROT_READ);
            b.data = (unsigned char *)start;
            b.mapped = len;
            return b;
        }
    }
#endif
    b.data = (unsigned char *)malloc(n ? n : 1);
    if (b.data) memcpy(b.data, data, n);
    return b;
}

static inline void lp_free(lp_block b) {
#ifdef LP_MMAP
    if (b.mapped) {
        munmap(b.data, b.mapped);
        return;
    }
#endif
    free(b.data);
}

#endif
