#ifndef PARLEY_CEPOLL_SHIM_H
#define PARLEY_CEPOLL_SHIM_H
/* epoll(7) for the event loop (Transport/EventLoop.swift). The Glibc module of this toolchain
 * exports none of <sys/epoll.h>, and `struct epoll_event` is packed on x86-64, which Swift does
 * not lay out: these wrappers take and give plain values, never the struct. Part of glibc: no
 * library to link. */
#include <stdint.h>
#include <sys/epoll.h>

enum {
    PARLEY_EPOLLIN = EPOLLIN,
    PARLEY_EPOLLOUT = EPOLLOUT,
    PARLEY_EPOLLERR = EPOLLERR,
    PARLEY_EPOLLHUP = EPOLLHUP,
    PARLEY_EPOLL_CTL_ADD = EPOLL_CTL_ADD,
    PARLEY_EPOLL_CTL_MOD = EPOLL_CTL_MOD,
    PARLEY_EPOLL_CTL_DEL = EPOLL_CTL_DEL,
};

/* A new epoll instance, closed on exec; -1 and errno on failure. */
static inline int parley_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/* Adds, changes or removes `fd`, reported with `key` and waited on for `events`. */
static inline int parley_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t key) {
    struct epoll_event event = {.events = events, .data.u64 = key};
    return epoll_ctl(epfd, op, fd, &event);
}

/* Waits as epoll_wait(2) for at most 64 ready descriptors; fills `keys` and `events` with
 * `max` (at most 64) entries each and returns how many, or -1 and errno. */
static inline int parley_epoll_wait(int epfd, uint64_t *keys, uint32_t *events, int max, int timeout) {
    struct epoll_event ready[64];
    if (max > 64) max = 64;
    int count = epoll_wait(epfd, ready, max, timeout);
    for (int i = 0; i < count; i++) {
        keys[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}
#endif
