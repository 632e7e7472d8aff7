/* credit/_threads.h: a loop of a C extension split between worker threads (header-only; each
   extension that includes it gets its own static copy).

   The calling thread holds the GIL all along and runs the first part itself; the others run on
   pthreads started for the call and joined before it returns. No Python code can run meanwhile
   (the GIL is held), so the workers may read the Python objects the caller keeps alive (list
   items, str data, int digits) as plain memory. They must not touch reference counts, allocate
   Python objects, call PyMem_Malloc or anything that sets an exception (they have no thread
   state): malloc and plain reads only. Each part writes only its own outputs, and the caller
   joins them in a fixed order, so the result does not depend on the number of threads.

   The number of threads: the environment variable CREDIT_THREADS when it is set (1: none
   started), else the CPUs this process may run on, at most CREDIT_MAX_THREADS. A loop with less
   work than `min_work` (in the caller's units) per thread is not split. A thread that cannot be
   started leaves its part to the calling thread. */
#ifndef CREDIT_THREADS_H
#define CREDIT_THREADS_H

#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sched.h>
#endif
#include <unistd.h>

#define CREDIT_MAX_THREADS 4

/* The threads a loop may use (>= 1). */
static int credit_threads(void) {
    const char *env = getenv("CREDIT_THREADS");
    if (env != NULL && *env) {
        char *end;
        long n = strtol(env, &end, 10);
        if (*end == '\0' && n >= 1) return n > 64 ? 64 : (int)n;
    }
    long cpus = 1;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
    else cpus = sysconf(_SC_NPROCESSORS_ONLN);
#else
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    if (cpus < 1) cpus = 1;
    return cpus > CREDIT_MAX_THREADS ? CREDIT_MAX_THREADS : (int)cpus;
}

/* part(arg, k, n_parts): do part k of n_parts. */
typedef void (*credit_part_fn)(void *arg, int k, int n_parts);

typedef struct {
    credit_part_fn fn;
    void *arg;
    int k, n;
} credit_part_job;

static void *credit_part_run(void *p) {
    credit_part_job *job = (credit_part_job *)p;
    job->fn(job->arg, job->k, job->n);
    return NULL;
}

/* How many parts a loop of `work` units should be cut into: 1 when it is less than min_work per
   thread or one thread is allowed. */
static int credit_parts(int64_t work, int64_t min_work) {
    int n = credit_threads();
    if (min_work < 1) min_work = 1;
    while (n > 1 && work / n < min_work) n--;
    return n;
}

/* The parts of the module's last split loop (the tests read it through `last_parts()`, to see
   that their input was split). */
static int credit_last_parts = 0;

static PyObject *credit_last_parts_py(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(credit_last_parts);
}

#define CREDIT_LAST_PARTS_METHOD                                                                          \
    {"last_parts", credit_last_parts_py, METH_NOARGS,                                                     \
     "last_parts() -> int: how many parts the module's last threaded loop was cut into (CREDIT_THREADS)."}

/* Run fn's parts 0 .. n_parts - 1: part 0 in the calling thread, the others on threads; returns
   when all have ended. */
static void credit_run_parts(credit_part_fn fn, void *arg, int n_parts) {
    credit_last_parts = n_parts < 1 ? 1 : n_parts;
    if (n_parts <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (n_parts > 64) n_parts = 64;
    pthread_t threads[64];
    credit_part_job jobs[64];
    int started[64] = {0};
    for (int k = 1; k < n_parts; k++) {
        jobs[k].fn = fn;
        jobs[k].arg = arg;
        jobs[k].k = k;
        jobs[k].n = n_parts;
        started[k] = pthread_create(&threads[k], NULL, credit_part_run, &jobs[k]) == 0;
    }
    fn(arg, 0, n_parts);
    for (int k = 1; k < n_parts; k++) {
        if (started[k]) pthread_join(threads[k], NULL);
        else fn(arg, k, n_parts);
    }
}

/* The bounds of part k of n over items 0 .. n_items - 1 weighed by the non-decreasing prefix sums
   cum[0 .. n_items] (cum[i]: the work of the items before i; NULL: one unit each): the first
   item of part k, so that parts get about equal work. */
static int64_t credit_part_start(const int64_t *cum, int64_t n_items, int k, int n) {
    if (k <= 0) return 0;
    if (k >= n) return n_items;
    if (cum == NULL) return (int64_t)((__int128)n_items * k / n);
    int64_t target = (int64_t)((__int128)cum[n_items] * k / n), lo = 0, hi = n_items;
    while (lo < hi) { /* the first item whose prefix reaches the target */
        int64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] < target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Ask for transparent huge pages over the 2 MiB-aligned part of a large fresh buffer, before its
   first touch (as numpy does for its arrays): a first touch then faults 2 MiB at a time instead of
   4 KiB (a 4 KiB fault costs ~1.6 us on the benchmark's virtual machine: 80 MB of fresh output
   took 33 ms in faults alone). A hint only: nothing happens where THP is off or the call fails. */
#if defined(__linux__)
#include <sys/mman.h>
#endif
static void credit_huge_pages(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)1 << 21;
    if (p == NULL || n < 4 * huge) return;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

#endif
