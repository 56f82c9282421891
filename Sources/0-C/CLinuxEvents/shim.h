// epoll and eventfd, which Swift's Glibc module does not bring in, and the few steps every event loop
// here takes with them (the HTTP edge's stream loops, the cluster's relay). Headers only; nothing to link.
#ifndef CLINUXEVENTS_SHIM_H
#define CLINUXEVENTS_SHIM_H

#include <malloc.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/// A close-on-exec epoll set with a new non-blocking eventfd (`*wake`) registered for reads under tag 0
/// (`data.u64`: every other registration carries its loop's tag, never a descriptor), so that another
/// thread can wake the loop sleeping in `epoll_wait`; -1 (and `*wake` -1) when either fails.
static inline int CLinuxEvents_create_loop(int *wake)
{
    *wake = -1;
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) return -1;
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event event = { .events = EPOLLIN, .data.u64 = 0 };
    if (fd < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
        if (fd >= 0) close(fd);
        close(epoll);
        return -1;
    }
    *wake = fd;
    return epoll;
}

/// Wakes the loop whose eventfd `wake` is (from any thread).
static inline void CLinuxEvents_wake(int wake)
{
    uint64_t one = 1;
    (void) !write(wake, &one, sizeof one);
}

/// Gives the allocator's free pages back to the system (glibc's malloc_trim): memory freed by dropping
/// a large structure otherwise stays resident. Returns whether any was given back.
static inline int CLinuxEvents_trim_heap(void)
{
    return malloc_trim(0);
}

/// How much free memory the top of a heap may hold before a free gives it back (`M_TRIM_THRESHOLD`).
/// Setting it also ends glibc's sliding thresholds: the mmap threshold stays at 128 KiB (big blocks are
/// mapped on their own and unmapped when freed, instead of the threshold rising to the largest block
/// freed so far), and this one is no longer raised from its 128 KiB start, which equals the top pad: every free that merged into a heap's top then gave its pages back
/// (`madvise`) and the next allocations faulted them in again, ~0.4 page faults per forwarded read
/// on the relay's thread (`bench/scale_out.py --hop-only`, `perf stat -e page-faults`). Above the pad,
/// it gives the top room to breathe. Returns whether it was set.
static inline int CLinuxEvents_set_trim_threshold(int bytes)
{
    return mallopt(M_TRIM_THRESHOLD, bytes);
}

/// While a large structure is freed (idle profiles leaving memory), makes the allocator give freed
/// memory back at once: no free memory kept at the top of each thread's heap (`M_TOP_PAD` 0, 128 KiB
/// by default: each arena a dropped profile touched would keep that much resident) and no "fast bins"
/// (`M_MXFAST` 0: small blocks parked there are merged only by a later trim, which then leaves the
/// merged top of a thread's arena resident) and every free that reaches a heap's top trims it
/// (`M_TRIM_THRESHOLD` 0), the fast bins merged first. `on` 0 restores glibc's defaults and the
/// server's `trim_threshold`: kept on, they cost every allocation-heavy request (a mutation of a
/// 1,000-window profile took 35% more CPU, `bench/flat_cost.py`).
static inline void CLinuxEvents_return_freed_memory_eagerly(int on, int trim_threshold)
{
    if (on) {
        (void) mallopt(M_TOP_PAD, 0);
        (void) mallopt(M_TRIM_THRESHOLD, 0);
        (void) mallopt(M_MXFAST, 0);
        (void) malloc_trim(0);
    } else {
        (void) mallopt(M_MXFAST, 64 * sizeof(size_t) / 4);
        (void) mallopt(M_TOP_PAD, 128 * 1024);
        (void) mallopt(M_TRIM_THRESHOLD, trim_threshold);
    }
}

/// Takes the wake-ups counted on `wake` (on the loop's thread, once `epoll_wait` reported it).
static inline void CLinuxEvents_drain(int wake)
{
    uint64_t count;
    (void) !read(wake, &count, sizeof count);
}

#endif
