/* parallel_for.h: run fn(ctx, i) for i in [0, n) on up to `threads` OS threads.
 *
 * Why not OpenMP: it needs -fopenmp and libgomp, which not every compiler the README
 * promises ships (Apple clang does not). std::thread is part of C++11.
 *
 * Items are handed out one at a time from an atomic counter, so a few long texts among
 * many short ones still keep every thread busy. The calling thread works too. If the
 * OS refuses a thread, the threads that did start (at least the caller) finish the
 * work: the result never depends on how many threads ran. Call without the GIL; `fn`
 * must not touch Python objects.
 */
#ifndef TOKSERVE_PARALLEL_FOR_H
#define TOKSERVE_PARALLEL_FOR_H

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

typedef void (*pf_task)(void *ctx, size_t i);

static inline void pf_run(size_t n, int threads, pf_task fn, void *ctx) {
    if (threads <= 1 || n <= 1) {
        for (size_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    std::atomic<size_t> next(0);
    auto work = [&]() {
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(ctx, i);
    };
    std::vector<std::thread> pool;
    size_t extra = (size_t)threads - 1 < n - 1 ? (size_t)threads - 1 : n - 1;
    for (size_t t = 0; t < extra; t++) {
        try {
            pool.emplace_back(work);
        } catch (...) {
            break;
        }
    }
    work();
    for (auto &th : pool) th.join();
}

#endif
