/* thread_counts.c - psrun -p in counting mode: besides the process total,
 * each thread's own counts, from its first instruction to its end, in a
 * report of its own (<exe>.<pid>.t<N>.<host>.xml, <thread>N</thread>, N
 * from 1 in the order the threads start, the main thread first; the process
 * total is thread 0).  The report's wall and CPU times cover the interval
 * its counters ran: from when they were opened to the thread's end, or to
 * the moment they were stopped with the process total for threads still
 * running then (not to when the report gets written, later).
 * Each thread opens its own perf_event counters (no inheritance) for the
 * events the process counts that perf_event has; the others are named in
 * the thread reports' <annotation>. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

typedef struct {
    int index, tid, live;
    int fd[PS_HWPC_MAX_EVENTS];
    long long wall_start, cpu_start;  /* when the counters were opened */
    long long wall_end, cpu_end;      /* when they were stopped at process end */
    int frozen;                       /* wall_end and cpu_end are set */
    int exec_pending;                 /* its report before an exec is out (taken back if the exec fails) */
} tcount_t;

static int nevents, domain;
static const char *names[PS_HWPC_MAX_EVENTS];
static int preset[PS_HWPC_MAX_EVENTS];
static unsigned types[PS_HWPC_MAX_EVENTS];
static unsigned long long configs[PS_HWPC_MAX_EVENTS];
static char note[512];
static tcount_t *threads[PS_MAX_THREADS];
static int nthreads;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* finish() against threads ending */

/* Before an exec the threads' reports are written under their final names
 * (the exec may succeed); if it fails they are taken back.  Their paths,
 * by thread index, in one mmap'd area sized for the threads there were
 * (paths[i][0] == '\0': none); kept after they are taken back, so the
 * final report under the same name is not announced a second time. */
typedef char path_t[PATH_MAX];
static path_t *paths;
static int npaths;
static int exec_held; /* the lock is held from the exec's reports to its failure */

static void *thread_begin(void)
{
    int idx = __atomic_fetch_add(&nthreads, 1, __ATOMIC_ACQ_REL);
    if (idx >= PS_MAX_THREADS)
        return NULL;
    tcount_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->index = idx;
    t->tid = (int)syscall(SYS_gettid);
    t->cpu_start = ps_thread_cputime_ns();
    t->wall_start = ps_wallclock_ns();
    for (int k = 0; k < nevents; k++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = types[k];
        a.config = configs[k];
        a.exclude_kernel = !(domain & PS_DOM_KERNEL);
        a.exclude_user = !(domain & PS_DOM_USER);
        a.exclude_hv = 1;
        t->fd[k] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    t->live = 1;
    __atomic_store_n(&threads[idx], t, __ATOMIC_RELEASE);
    return t;
}

/* The path slot of thread index, growing the area to cover n threads
 * (mmap: the exec may come from a signal handler).  NULL when it cannot. */
static char *path_slot(int index, int n)
{
    if (index < npaths)
        return paths[index];
    if (n <= index)
        n = index + 1;
    void *area = mmap(NULL, sizeof(path_t) * (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return NULL;
    if (paths) {
        memcpy(area, paths, sizeof(path_t) * (size_t)npaths);
        munmap(paths, sizeof(path_t) * (size_t)npaths);
    }
    paths = area;
    npaths = n;
    return paths[index];
}

/* Read and write the thread's report (the caller holds the lock); `why`
 * added to its annotation.  Returns the save's result, the name in path. */
static int write_report(tcount_t *t, const char *why, char *path, size_t path_len)
{
    long long values[PS_HWPC_MAX_EVENTS];
    for (int k = 0; k < nevents; k++) {
        values[k] = 0;
        if (t->fd[k] >= 0) {
            long long v;
            if (read(t->fd[k], &v, sizeof v) == (ssize_t)sizeof v)
                values[k] = v;
        }
    }
    int frozen = __atomic_load_n(&t->frozen, __ATOMIC_ACQUIRE);
    long long cpu_end = frozen ? t->cpu_end : ps_tid_cpu_ns(t->tid);
    long long wall_end = frozen ? t->wall_end : ps_wallclock_ns();
    long long cpu = cpu_end > t->cpu_start && t->cpu_start >= 0 ? cpu_end - t->cpu_start : 0, user = 0, sys = 0;
    ps_tid_times(t->tid, cpu, &user, &sys);
    ps_measurement_t m = {wall_end - t->wall_start, user / 1e9, sys / 1e9, values};
    ps_counts_t c = {"perfmon", "perf_event", domain, 0, nevents, names, preset};
    char annotation[sizeof note + 128];
    snprintf(annotation, sizeof annotation, "%s%s%s", note, *note && why ? "; " : "", why ? why : "");
    /* a report taken back after a failed exec was announced already */
    if (t->index < npaths && paths[t->index][0])
        ps_report_announced(paths[t->index]);
    return ps_report_write_counts(&c, t->index + 1, annotation, &m, NULL, path, path_len);
}

/* Read, write the thread's report, close: from the thread itself at its
 * end, or from the exiting thread for those still running. */
static void thread_report(tcount_t *t)
{
    pthread_mutex_lock(&lock);
    if (!t->live) {
        pthread_mutex_unlock(&lock);
        return;
    }
    t->live = 0;
    char path[4096];
    int rc = write_report(t, NULL, path, sizeof path);
    if (t->index < npaths)
        paths[t->index][0] = '\0';
    for (int k = 0; k < nevents; k++)
        if (t->fd[k] >= 0)
            close(t->fd[k]);
    pthread_mutex_unlock(&lock);
    if (rc != PS_HWPC_OK && rc != PS_HWPC_EEXIST)
        ps_message("could not save the thread report %s", path);
}

static void thread_end(void *state) { thread_report(state); }

int ps_thread_counts_init(void)
{
    const char *const *counted;
    int n;
    if (ps_hwpc_numevents(&n) || ps_hwpc_eventnames(&counted))
        return -1;
    domain = ps_hwpc_domain(); /* as the process total counts: the configuration's or PSUITE_DOMAIN */
    size_t used = 0;
    for (int k = 0; k < n; k++) {
        char why[192];
        if (ps_perf_lookup(counted[k], &types[nevents], &configs[nevents], why, sizeof why) != PS_EVENT_COUNTED) {
            used += (size_t)snprintf(note + used, used < sizeof note ? sizeof note - used : 0, "%s%s", used ?
                                     ", " : "not counted per thread (no perf_event equivalent): ", counted[k]);
            continue;
        }
        names[nevents] = counted[k];
        preset[nevents] = strncmp(counted[k], "PAPI_", 5) == 0;
        nevents++;
    }
    ps_threads_hook(thread_begin, thread_end);
    ps_threads_adopt(thread_begin()); /* the main thread is the first: <thread>1</thread> */
    return 0;
}

/* At process end: stop the running threads' counters together with the
 * process total, before any report is written, so that they add up; their
 * CPU and wall times are taken at the same moment, since the threads go on
 * running while the reports are written. */
static void freeze(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < PS_MAX_THREADS; i++) {
        tcount_t *t = __atomic_load_n(&threads[i], __ATOMIC_ACQUIRE);
        if (!t || !t->live)
            continue;
        for (int k = 0; k < nevents; k++)
            if (t->fd[k] >= 0)
                ioctl(t->fd[k], PERF_EVENT_IOC_DISABLE, 0);
        t->cpu_end = ps_tid_cpu_ns(t->tid);
        t->wall_end = ps_wallclock_ns();
        if (t->cpu_end >= 0) /* else the thread has just ended: its report reads its own end */
            __atomic_store_n(&t->frozen, 1, __ATOMIC_RELEASE);
    }
}

void ps_thread_counts_finish(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < PS_MAX_THREADS; i++) {
        tcount_t *t = __atomic_load_n(&threads[i], __ATOMIC_ACQUIRE);
        if (t)
            thread_report(t);
    }
}

void ps_thread_counts_freeze(void) { freeze(); }

/* Before an exec: the running threads' counters stopped with the process
 * total (as at process end), the lock taken so that no thread writes its
 * own report until the exec has failed (if it succeeds, the threads go with
 * the image).  Then ps_thread_counts_exec_write, and
 * ps_thread_counts_exec_failed if the program goes on. */
void ps_thread_counts_exec_freeze(void)
{
    pthread_mutex_lock(&lock);
    exec_held = 1;
    freeze();
}

/* The running threads' reports, under their final names, `why` in their
 * annotations; the counters stay open and the threads running. */
void ps_thread_counts_exec_write(const char *why)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    if (n > PS_MAX_THREADS)
        n = PS_MAX_THREADS;
    for (int i = 0; i < n; i++) {
        tcount_t *t = __atomic_load_n(&threads[i], __ATOMIC_ACQUIRE);
        if (!t || !t->live)
            continue;
        char path[PATH_MAX];
        path[0] = '\0';
        int rc = write_report(t, why, path, sizeof path);
        char *slot = path_slot(i, n);
        if (rc != PS_HWPC_OK && rc != PS_HWPC_EEXIST) {
            ps_message("could not save the thread report %s", path);
            path[0] = '\0';
        }
        if (slot && path[0]) {
            ps_strlcpy(slot, path, sizeof(path_t));
            t->exec_pending = 1;
        } else if (path[0]) /* nowhere to remember it: do not leave it behind */
            unlink(path);
    }
}

/* The exec failed: the reports written before it are taken back, the
 * threads' counters run again and their end is no longer fixed; their
 * reports come at their end or the process's, as if no exec was tried. */
void ps_thread_counts_exec_failed(void)
{
    int saved = errno;
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < PS_MAX_THREADS; i++) {
        tcount_t *t = __atomic_load_n(&threads[i], __ATOMIC_ACQUIRE);
        if (!t)
            continue;
        if (t->exec_pending && i < npaths) /* its path stays, not to be announced again */
            unlink(paths[i]);
        t->exec_pending = 0;
        if (!t->live)
            continue;
        __atomic_store_n(&t->frozen, 0, __ATOMIC_RELEASE);
        for (int k = 0; k < nevents; k++)
            if (t->fd[k] >= 0)
                ioctl(t->fd[k], PERF_EVENT_IOC_ENABLE, 0);
    }
    if (exec_held) {
        exec_held = 0;
        pthread_mutex_unlock(&lock);
    }
    errno = saved;
}
