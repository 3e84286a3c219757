// Are the host's slow episodes per vCPU or the whole machine's? (issue 9, docs/BENCHMARKS.md)
//
// One probe thread pinned to each CPU runs a fixed loop every 5 ms, as parley-bench's
// HostProbe does, and divides the thread CPU time the loop took by its full-speed time (the
// fastest of 30 calibration runs). A run 4x slower or more is *slowed*. Prints each CPU's share
// of slowed runs, how many of them had a slowed run on another CPU within 5 ms, and the
// episodes (slowed runs less than 200 ms apart) with their lengths.
//
//   cc -O2 -pthread scripts/vcpu-episodes.c -o /tmp/vcpu-episodes && /tmp/vcpu-episodes 20
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { maxCPUs = 64, maxRuns = 1 << 16, periodMs = 5, slowedFactor = 4, episodeGapMs = 200 };

typedef struct {
    int cpu;
    double fullSpeedMs;
    int count;
    double startMs[maxRuns];
    double slowdown[maxRuns];
} Probe;

static double origin;
static int seconds;
static volatile uint64_t sink;

static double nowMs(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/// About 45 µs of multiply-xor at full speed on these machines.
static void fixedWork(void) {
    uint64_t x = 1;
    for (long i = 0; i < 20000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    sink = x;
}

static double timedWork(void) {
    double start = nowMs(CLOCK_THREAD_CPUTIME_ID);
    fixedWork();
    return nowMs(CLOCK_THREAD_CPUTIME_ID) - start;
}

static void *runProbe(void *argument) {
    Probe *probe = argument;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(probe->cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "vcpu-episodes: could not pin a thread to CPU %d\n", probe->cpu);
        exit(1);
    }
    probe->fullSpeedMs = 1e9;
    for (int i = 0; i < 30; i++) {
        double took = timedWork();
        if (took < probe->fullSpeedMs) probe->fullSpeedMs = took;
    }
    double due = nowMs(CLOCK_MONOTONIC);
    while (nowMs(CLOCK_MONOTONIC) - origin < seconds * 1e3 && probe->count < maxRuns) {
        probe->startMs[probe->count] = nowMs(CLOCK_MONOTONIC) - origin;
        probe->slowdown[probe->count] = timedWork() / probe->fullSpeedMs;
        probe->count++;
        due += periodMs;
        double wait = due - nowMs(CLOCK_MONOTONIC);
        if (wait > 0) {
            struct timespec pause = {0, (long)(wait * 1e6)};
            nanosleep(&pause, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    seconds = argc > 1 ? atoi(argv[1]) : 20;
    if (seconds <= 0) {
        fprintf(stderr, "usage: vcpu-episodes [SECONDS]  (default 20)\n");
        return 2;
    }
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > maxCPUs) cpus = maxCPUs;
    static Probe probes[maxCPUs];
    pthread_t threads[maxCPUs];
    origin = nowMs(CLOCK_MONOTONIC);
    for (int c = 0; c < cpus; c++) {
        probes[c].cpu = c;
        pthread_create(&threads[c], NULL, runProbe, &probes[c]);
    }
    for (int c = 0; c < cpus; c++) pthread_join(threads[c], NULL);

    for (int c = 0; c < cpus; c++) {
        Probe *p = &probes[c];
        int slowed = 0, together = 0, episodes = 0;
        double episodeStart = -1, last = -1e9;
        printf("CPU %d: full speed %.3f ms; episodes (ms from start, length):", c, p->fullSpeedMs);
        for (int k = 0; k < p->count; k++) {
            if (p->slowdown[k] < slowedFactor) continue;
            slowed++;
            int elsewhere = 0;
            for (int o = 0; o < cpus && !elsewhere; o++) {
                if (o == c) continue;
                for (int j = 0; j < probes[o].count; j++) {
                    double gap = probes[o].startMs[j] - p->startMs[k];
                    if (probes[o].slowdown[j] >= slowedFactor && gap > -periodMs && gap < periodMs) {
                        elsewhere = 1;
                        break;
                    }
                }
            }
            together += elsewhere;
            if (p->startMs[k] - last >= episodeGapMs) {
                if (episodeStart >= 0) printf(" %.0f+%.0f", episodeStart, last - episodeStart + periodMs);
                episodeStart = p->startMs[k];
                episodes++;
            }
            last = p->startMs[k];
        }
        if (episodeStart >= 0) printf(" %.0f+%.0f", episodeStart, last - episodeStart + periodMs);
        printf("\nCPU %d: %d runs, %d slowed %dx or more (%.2f%%) in %d episodes; %d of them with another CPU slowed within %d ms\n",
               c, p->count, slowed, slowedFactor, p->count ? 100.0 * slowed / p->count : 0.0, episodes, together, periodMs);
    }
    return 0;
}
