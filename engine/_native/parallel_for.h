/* parallel_for.h: run fn(ctx, i) for i in [0, n) on up to `threads` OS threads.
 *
 * Why not OpenMP: it needs -fopenmp and libgomp, which not every compiler the README
 * promises ships (Apple clang does not). std::thread is part of C++11.
 *
 * Why a persistent pool: starting a thread per call made a warm 2-thread batch of
 * short texts slower than one thread: thread creation, a fresh malloc arena, and the
 * thread-local pair cache (pair_cache.h) starting empty every time. The workers are started on first use and then wait for work; their
 * caches stay warm between calls.
 *
 * Items are handed out one at a time from an atomic counter, so a few long texts among
 * many short ones still keep every thread busy. The calling thread works too. One batch
 * uses the pool at a time: a second concurrent caller runs its items on its own thread
 * (it is another Python thread, so another core is already working). If the OS refuses
 * a thread, the threads that did start (at least the caller) finish the work: the
 * result never depends on how many threads ran. After fork() the child starts a new
 * pool (the parent's workers do not exist there). Call without the GIL; `fn` must not
 * touch Python objects.
 */
#ifndef TOKSERVE_PARALLEL_FOR_H
#define TOKSERVE_PARALLEL_FOR_H

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

typedef void (*pf_task)(void *ctx, size_t i);

namespace parallel_for {

struct Pool {
    std::mutex busy;  /* held by the one batch using the pool */
    std::mutex lock;  /* guards the fields below */
    std::condition_variable wake, done;
    size_t workers = 0;
    uint64_t generation = 0;
    size_t wanted = 0;    /* workers that take part in the current batch */
    size_t finished = 0;
    pf_task fn = nullptr;
    void *ctx = nullptr;
    size_t n = 0;
    std::atomic<size_t> next{0};

    void drain() {
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(ctx, i);
    }

    void worker(size_t index) {
        uint64_t seen = 0;
        for (;;) {
            std::unique_lock<std::mutex> guard(lock);
            wake.wait(guard, [&] { return generation != seen && index < wanted; });
            seen = generation;
            guard.unlock();
            drain();
            guard.lock();
            if (++finished == wanted) done.notify_one();
        }
    }

    /* Under `lock`: grow to `count` workers, as far as the OS allows. */
    void grow(size_t count) {
        while (workers < count) {
            try {
                std::thread(&Pool::worker, this, workers).detach();
            } catch (...) {
                return;
            }
            workers++;
        }
    }
};

/* The process's pool; a new one after fork (the old one is left as it is: its workers
 * and possibly its locks belong to the parent). Never destroyed: detached workers may
 * still wait on it at exit. */
inline Pool *pool() {
    static std::mutex guard;
    static Pool *current = nullptr;
    static pid_t owner = 0;
    std::lock_guard<std::mutex> g(guard);
    if (current == nullptr || owner != getpid()) {
        current = new Pool();
        owner = getpid();
    }
    return current;
}

}  // namespace parallel_for

static inline void pf_run(size_t n, int threads, pf_task fn, void *ctx) {
    using parallel_for::Pool;
    if (threads <= 1 || n <= 1) {
        for (size_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    Pool *p = parallel_for::pool();
    std::unique_lock<std::mutex> batch(p->busy, std::try_to_lock);
    if (!batch.owns_lock()) {
        for (size_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    size_t extra = (size_t)threads - 1 < n - 1 ? (size_t)threads - 1 : n - 1;
    {
        std::lock_guard<std::mutex> guard(p->lock);
        p->grow(extra);
        p->fn = fn;
        p->ctx = ctx;
        p->n = n;
        p->next.store(0);
        p->wanted = extra < p->workers ? extra : p->workers;
        p->finished = 0;
        p->generation++;
    }
    p->wake.notify_all();
    p->drain();
    std::unique_lock<std::mutex> guard(p->lock);
    p->done.wait(guard, [&] { return p->finished == p->wanted; });
    p->wanted = 0;
}

#endif
