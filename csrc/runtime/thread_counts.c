/* thread_counts.c - psrun -p in counting mode: besides the process total,
 * each thread's own counts, from its first instruction to its end, in a
 * report of its own (<exe>.<pid>.t<N>.<host>.xml, <thread>N</thread>, N
 * from 1 in the order the threads start, the main thread first, then the
 * threads that were already running when measurement started (started by
 * shared libraries' constructors), then the program's; the process total is
 * thread 0).  The report's wall and CPU times cover the interval its
 * counters ran: from when they were opened to the thread's end, or to the
 * moment they were stopped with the process total for threads still running
 * then (not to when the report gets written, later).
 * Each thread opens its own perf_event counters (no inheritance) for the
 * events the process counts that perf_event has; the others are named in
 * the thread reports' <annotation>.
 *
 * A thread's end only reads its counters into its record (in memory shared
 * with the collector, mapped by chunks as threads come) and closes them; all
 * thread reports are written at the process end, in one pass, so that no
 * report is written under the still-running counters of the others.
 *
 * Descriptors: the counters' descriptors are moved high (near the top of
 * the descriptor limit) and checked to still be perf_event descriptors
 * before every read, switch and close (the program may close and reuse the
 * numbers).  They are held within a budget (a quarter of the descriptors
 * the program had free when measurement started): a thread beyond it gets
 * no counters of its own (it is in the process total), and its report says
 * so.
 *
 * No room above a hard descriptor limit (ps_fd_limit_tight: `ulimit -n 16`
 * sets soft and hard): every descriptor psuite held in the program would be
 * one the program could not have, so the collector process (collector.c)
 * holds the counters instead.  The counters opened before it starts (the
 * main thread's, the threads running then) it inherits at its fork, and the
 * program closes its copies (ps_thread_counts_hand_over); from then on a
 * thread's start asks the collector to open its counters on its tid, its
 * end to read and close them (ps_collector_call: one round trip each, only
 * in this mode), and the process end stops the total and every running
 * thread's counters in one call, one pass in one process, so that they
 * still add up.  The records keep the collector's descriptor numbers,
 * marked as its (held): the program never reads or closes them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* A record's state (atomic).  The thread's own end takes LIVE to ENDING
 * then ENDED; the process end (or an exec) takes LIVE to FROZEN; a thread
 * ending while FROZEN (an exec in progress) makes it FROZEN_GONE. */
enum { T_FREE = 0, T_LIVE, T_ENDING, T_ENDED, T_FROZEN, T_FROZEN_GONE, T_WRITTEN };

typedef struct {
    int index, tid;
    int state;
    int own;                          /* 1: hooked at its start; 0: running before measurement started */
    int nfd;                          /* descriptors it holds against the budget */
    int fd[PS_HWPC_MAX_EVENTS];
    long long values[PS_HWPC_MAX_EVENTS];
    long long wall_start, cpu_start;  /* when the counters were opened */
    long long wall_end, cpu_end;      /* at its end, or when stopped with the process total */
    long long user_ns, sys_ns;        /* the split of cpu_end - cpu_start (-1: CPU time unknown) */
    long long run_ns;                 /* the longest its counters ran (on its CPU): its CPU time when the
                                       * thread's clock is gone */
    int exec_pending;                 /* its report before an exec is out (taken back if the exec fails) */
    int held;                         /* its descriptors are the collector's (no room above the limit) */
    int lost;                         /* its counts went with a collector that ended first */
    char why[256];                    /* why it has no counts, or not all ("": it has them) */
} tcount_t;

static int nevents, domain;
static const char *names[PS_HWPC_MAX_EVENTS];
static int preset[PS_HWPC_MAX_EVENTS];
static unsigned types[PS_HWPC_MAX_EVENTS];
static unsigned long long configs[PS_HWPC_MAX_EVENTS];
static char note[512];
/* The records, in chunks of REC_CHUNK mapped from the shared arena as
 * threads come (a run with a few threads reserves no room for 16,384 of
 * them: under an RLIMIT_AS that room is the program's). */
#define REC_CHUNK_LOG2 8
#define REC_CHUNK (1 << REC_CHUNK_LOG2)
static tcount_t *rec_chunks[PS_MAX_THREADS / REC_CHUNK];
static int recording; /* ps_thread_counts_init ran */

/* Record i, or NULL when its chunk is not mapped (or, in the collector,
 * not shared with it).  Async-signal-safe. */
static tcount_t *rec_at(int i)
{
    if (i < 0 || i >= PS_MAX_THREADS)
        return NULL;
    tcount_t *chunk = __atomic_load_n(&rec_chunks[i >> REC_CHUNK_LOG2], __ATOMIC_ACQUIRE);
    if (chunk && ps_in_collector() && !ps_shared_contains(chunk))
        return NULL;
    return chunk ? &chunk[i & (REC_CHUNK - 1)] : NULL;
}

/* Record i, its chunk mapped if it was not (two threads racing for one
 * chunk: the first one's is kept). */
static tcount_t *rec_slot(int i)
{
    tcount_t *t = rec_at(i);
    if (t || i < 0 || i >= PS_MAX_THREADS)
        return t;
    size_t bytes = sizeof(tcount_t) * REC_CHUNK;
    tcount_t *chunk = ps_map(bytes); /* shared with the collector */
    if (!chunk)
        return NULL;
    memset(chunk, 0, bytes);
    tcount_t *none = NULL;
    if (!__atomic_compare_exchange_n(&rec_chunks[i >> REC_CHUNK_LOG2], &none, chunk, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        ps_unmap(chunk, bytes);
    return rec_at(i);
}
static int nthreads, overflow;
static long fd_base, fd_budget, fd_limit;
static int fds_used;
/* No room above the limit (decided when measurement starts), and the
 * collector holds the counters since ps_thread_counts_hand_over; stopped:
 * the process end stopped them (a thread starting later gets none). */
static int tight, outside, stopped;
static __thread int calling; /* this thread waits for the collector (a signal ending the process in it) */
/* Descriptors the collector keeps free for itself: a report being
 * written, a /proc file read, the pidfds of followed children. */
#define COLLECTOR_SPARE_FDS 4
static const char HELD_NOTE[] = "no room above the descriptor limit: counters held by the collector process";
static const char LOST_NOTE[] = "counts lost: the collector process holding the counters ended before the program";

/* Before an exec the threads' reports are written under their final names
 * (the exec may succeed); if it fails they are taken back.  Their paths,
 * by thread index, in one mmap'd area sized for the threads there were
 * (paths[i][0] == '\0': none); kept after they are taken back, so the
 * final report under the same name is not announced a second time. */
static ps_pathtab_t exec_paths;

static int cas(int *p, int from, int to)
{
    return __atomic_compare_exchange_n(p, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The descriptor budget, from the limit and the descriptors open now:
 * in the program a quarter of its free descriptors; in the collector
 * (whole) all of its own but a few, besides those held already. */
static void set_budget(int whole)
{
    struct rlimit rl;
    long limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 1L << 20;
    if (limit > (1L << 20))
        limit = 1L << 20;
    long open_now = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        while (readdir(d))
            open_now++;
        closedir(d);
        open_now -= 3; /* ".", ".." and the directory's own */
    } else
        open_now = 16;
    long headroom = limit - open_now;
    fd_limit = limit;
    fd_budget = headroom > 0 ? headroom / 4 : 0;
    if (whole) {
        fd_budget = __atomic_load_n(&fds_used, __ATOMIC_ACQUIRE) +
                    (headroom > COLLECTOR_SPARE_FDS ? headroom - COLLECTOR_SPARE_FDS : 0);
        return;
    }
    fd_base = limit - fd_budget - (limit >= 2048 ? 512 : 0); /* the process total's are above rlim - 512 */
    if (fd_base < 3)
        fd_base = 3;
}

/* Open the thread's counters (tid 0: the calling thread), within the
 * budget; what is missing and why in t->why. */
static void open_counters(tcount_t *t, int tid)
{
    for (int k = 0; k < PS_HWPC_MAX_EVENTS; k++)
        t->fd[k] = -1;
    t->nfd = 0;
    if (!nevents)
        return;
    if (__atomic_add_fetch(&fds_used, nevents, __ATOMIC_ACQ_REL) > fd_budget) {
        __atomic_sub_fetch(&fds_used, nevents, __ATOMIC_ACQ_REL);
        snprintf(t->why, sizeof t->why,
                 "no counters of its own: too many threads at once for psrun -p's descriptor budget (%ld of "
                 "the limit of %ld); its counts are in the process total", fd_budget, fd_limit);
        return;
    }
    t->nfd = nevents;
    int failed = 0, err = 0;
    for (int k = 0; k < nevents; k++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = types[k];
        a.config = configs[k];
        a.exclude_kernel = !(domain & PS_DOM_KERNEL) && !ps_perf_kernel_only(types[k], configs[k]);
        a.exclude_user = !(domain & PS_DOM_USER);
        a.exclude_hv = 1;
        a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (!failed++)
                err = errno;
            continue;
        }
        t->fd[k] = ps_in_collector() ? fd : ps_perf_move_high(fd, fd_base); /* the program never sees the collector's */
    }
    if (failed)
        snprintf(t->why, sizeof t->why, "%s%d of %d events not counted for this thread (perf_event_open: %s)",
                 failed == nevents ? "no counts: " : "", failed, nevents, strerror(err));
}

/* Read the counters into the record; with close_them, close them too
 * (each checked to be still ours first: never the program's descriptor). */
static void read_counters(tcount_t *t, int close_them)
{
    int lost = 0;
    for (int k = 0; k < nevents; k++) {
        int fd = t->fd[k];
        if (fd < 0)
            continue;
        if (!ps_perf_still_ours(fd)) {
            lost++;
            t->fd[k] = -1;
            continue;
        }
        unsigned long long buf[3]; /* value, time enabled, time running */
        if (read(fd, buf, sizeof buf) == (ssize_t)sizeof buf) {
            unsigned long long value = buf[0];
            if (buf[2] && buf[2] < buf[1]) /* multiplexed: scaled as the process total's */
                value = (unsigned long long)((long double)value * buf[1] / buf[2]);
            t->values[k] = (long long)value;
            if ((long long)buf[2] > t->run_ns)
                t->run_ns = (long long)buf[2];
        }
        if (close_them) {
            close(fd);
            t->fd[k] = -1;
        }
    }
    if (lost && !t->why[0])
        snprintf(t->why, sizeof t->why, "%d of %d counters lost: the program closed or reused their descriptors",
                 lost, nevents);
    if (close_them && t->nfd) {
        __atomic_sub_fetch(&fds_used, t->nfd, __ATOMIC_ACQ_REL);
        t->nfd = 0;
    }
}

static tcount_t *new_record(int tid, int own)
{
    int idx = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    do { /* never past the last record, even for a moment: readers go up to nthreads */
        if (idx >= PS_MAX_THREADS) {
            __atomic_fetch_add(&overflow, 1, __ATOMIC_RELAXED);
            return NULL;
        }
    } while (!__atomic_compare_exchange_n(&nthreads, &idx, idx + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    tcount_t *t = rec_slot(idx);
    if (!t) { /* no memory for its record: as a thread beyond the most */
        __atomic_fetch_add(&overflow, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    t->index = idx;
    t->tid = tid;
    t->own = own;
    t->why[0] = '\0';
    t->exec_pending = 0;
    t->held = t->lost = 0;
    t->user_ns = t->sys_ns = t->run_ns = 0;
    memset(t->values, 0, sizeof(long long) * (size_t)(nevents ? nevents : 1));
    return t;
}

/* Whether record t's descriptors are this process's to use (with the
 * counters in the program, as they were before the collector's fork). */
static int here(const tcount_t *t)
{
    if (!__atomic_load_n(&outside, __ATOMIC_ACQUIRE))
        return 1;
    return ps_in_collector() ? t->held : !t->held;
}

/* In the collector, for the program (ps_collector_call): the counters of
 * record t's thread (tid), held here. */
static int open_held(long t, long tid)
{
    tcount_t *rec = (tcount_t *)t;
    open_counters(rec, (int)tid);
    rec->held = rec->nfd > 0; /* none within the budget: nothing held, the program has nothing to ask */
    return 0;
}

/* In the collector: record t's counts read, and its counters closed. */
static int read_held(long t, long close_them)
{
    read_counters((tcount_t *)t, (int)close_them);
    return 0;
}

/* fn(t, arg) run by the collector; 0 when it did not answer (it ended,
 * and the counters it held with it: the record says so). */
static int ask(int (*fn)(long, long), tcount_t *t, long arg)
{
    int rc;
    if (calling || ps_in_collector()) /* a signal ending the process while this thread waited: the lock is its own */
        return 0;
    calling = 1;
    int answered = ps_collector_call(fn, (long)t, arg, &rc);
    calling = 0;
    if (!answered && t) {
        t->lost = 1;
        ps_strlcpy(t->why, LOST_NOTE, sizeof t->why);
    }
    return answered;
}

static void *thread_begin(void)
{
    if (!recording)
        return NULL;
    tcount_t *t = new_record((int)syscall(SYS_gettid), 1);
    if (!t)
        return NULL;
    t->cpu_start = ps_thread_cputime_ns();
    t->wall_start = ps_wallclock_ns();
    if (__atomic_load_n(&outside, __ATOMIC_ACQUIRE)) {
        /* the program holds no descriptor of it: the collector opens them */
        for (int k = 0; k < PS_HWPC_MAX_EVENTS; k++)
            t->fd[k] = -1;
        if (__atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
            ps_strlcpy(t->why, "no counts: it started after the process's counters were stopped", sizeof t->why);
        else
            ask(open_held, t, t->tid);
    } else {
        ps_fd_window_enter();
        open_counters(t, 0);
        ps_fd_window_leave();
    }
    __atomic_store_n(&t->state, T_LIVE, __ATOMIC_RELEASE);
    return t;
}

/* Read the counters into the record, with close_them closed too: here,
 * or by the collector when it holds them. */
static void read_mine(tcount_t *t, int close_them)
{
    if (here(t))
        read_counters(t, close_them);
    else if (!t->lost)
        ask(read_held, t, close_them);
}

/* In the ending thread: its counts into its record, its counters closed.
 * Nothing is written here. */
static void thread_end(void *state)
{
    tcount_t *t = state;
    for (;;) {
        int st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if (st == T_LIVE && cas(&t->state, T_LIVE, T_ENDING))
            break;
        if (st == T_FROZEN && cas(&t->state, T_FROZEN, T_FROZEN_GONE))
            return; /* stopped with the process total (an exec): its counts are read */
        if (st != T_LIVE && st != T_FROZEN)
            return;
    }
    read_mine(t, 1);
    t->cpu_end = ps_thread_cputime_ns();
    t->wall_end = ps_wallclock_ns();
    long long cpu = t->cpu_end > t->cpu_start && t->cpu_start >= 0 ? t->cpu_end - t->cpu_start : 0;
    struct rusage ru; /* the thread's user/system split (it began at ~0) */
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        long long ut = ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec;
        long long stime = ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
        t->user_ns = ut + stime > 0 ? (long long)((double)cpu * (double)ut / (double)(ut + stime)) : cpu;
    } else
        t->user_ns = cpu;
    t->sys_ns = cpu - t->user_ns;
    __atomic_store_n(&t->state, T_ENDED, __ATOMIC_RELEASE);
}

/* A thread's CPU time so far (-1: gone).  In the collector a thread clock
 * of the program cannot be read (the kernel allows it in the thread's own
 * process only): the scheduler's total for the thread is. */
static long long thread_cpu_ns(int tid)
{
    if (!ps_in_collector())
        return ps_tid_cpu_ns(tid);
    char path[96], text[128];
    ps_buf_t b;
    ps_buf_fixed(&b, path, sizeof path);
    ps_buf_str(&b, "/proc/");
    ps_buf_ll(&b, ps_self_pid());
    ps_buf_str(&b, "/task/");
    ps_buf_ll(&b, tid);
    ps_buf_str(&b, "/schedstat"); /* "run_ns wait_ns timeslices" */
    if (ps_read_file(path, text, sizeof text) <= 0 || text[0] < '0' || text[0] > '9')
        return -1;
    long long ns = 0;
    for (const char *p = text; *p >= '0' && *p <= '9'; p++)
        ns = ns * 10 + (*p - '0');
    return ns;
}

/* A frozen thread's counters stopped where they are (the thread may go
 * on) and read, where they are held; its CPU and wall times taken at once. */
static void stop_one(tcount_t *t)
{
    if (here(t)) {
        for (int k = 0; k < nevents; k++)
            if (t->fd[k] >= 0 && ps_perf_still_ours(t->fd[k]))
                ioctl(t->fd[k], PERF_EVENT_IOC_DISABLE, 0);
        read_counters(t, 0);
    }
    t->cpu_end = thread_cpu_ns(t->tid);
    t->wall_end = ps_wallclock_ns();
    if (t->cpu_end < 0) {
        /* a thread from before measurement, ended since: no CPU clock left
         * to read; its counters ran while it was on a CPU */
        if (t->run_ns > 0) {
            t->user_ns = t->run_ns;
            t->sys_ns = 0;
            ps_append_part(t->why, sizeof t->why,
                           "ended before the process: its CPU time is its counters' running time (all shown as "
                           "user time)");
        } else
            t->user_ns = t->sys_ns = -1;
    }
}

/* Its user/system split, in the program (/proc/self/task: the collector's
 * own there, where the split is all user time). */
static void split_times(tcount_t *t)
{
    if (t->cpu_end < 0)
        return;
    long long cpu = t->cpu_end > t->cpu_start && t->cpu_start >= 0 ? t->cpu_end - t->cpu_start : 0;
    ps_tid_times(t->tid, cpu, &t->user_ns, &t->sys_ns);
}

static int stop_held(long t, long unused)
{
    (void)unused;
    stop_one((tcount_t *)t);
    return 0;
}

/* Stop a live thread's counters where they are (the thread may go on),
 * read them, take its times. */
static void freeze_one(tcount_t *t)
{
    if (!cas(&t->state, T_LIVE, T_FROZEN))
        return;
    if (here(t) || t->lost || !ask(stop_held, t, 0))
        stop_one(t); /* its times at least, when its counts went with the collector */
    split_times(t);
}

/* A thread ending right now finishes its record first (bounded wait; not
 * for the calling thread itself, ended by a signal in its own end). */
static void wait_ending(tcount_t *t)
{
    struct timespec ms = {0, 1000000};
    if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != T_ENDING || t->tid == (int)syscall(SYS_gettid))
        return;
    for (int k = 0; k < 1000 && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == T_ENDING; k++)
        syscall(SYS_nanosleep, &ms, NULL);
}

size_t ps_thread_counts_bytes(void) { return sizeof(tcount_t) * REC_CHUNK; }

size_t ps_thread_counts_all_bytes(void) { return sizeof rec_chunks / sizeof *rec_chunks * ps_thread_counts_bytes(); }

int ps_thread_counts_init(void)
{
    const char *const *counted;
    int n;
    if (ps_hwpc_numevents(&n) || ps_hwpc_eventnames(&counted))
        return -1;
    if (!rec_slot(0))
        return -1;
    recording = 1;
    domain = ps_hwpc_domain(); /* as the process total counts: the configuration's or PSUITE_DOMAIN */
    size_t used = 0;
    nevents = 0;
    note[0] = '\0';
    const char *total_backend = ps_hwpc_backend(NULL);
    if (total_backend && strcmp(total_backend, "PAPI") == 0) /* the report's class says perfmon: say why */
        used = ps_strlcpy(note, "this thread counted through Linux perf_event (the process total through PAPI)",
                          sizeof note);
    int missing = 0;
    for (int k = 0; k < n; k++) {
        char why[192];
        if (ps_perf_lookup(counted[k], &types[nevents], &configs[nevents], why, sizeof why) != PS_EVENT_COUNTED) {
            used += (size_t)snprintf(note + used, used < sizeof note ? sizeof note - used : 0, "%s%s", missing++ ?
                                     ", " : used ? "; not counted per thread (no perf_event equivalent): "
                                                 : "not counted per thread (no perf_event equivalent): ", counted[k]);
            continue;
        }
        names[nevents] = counted[k];
        preset[nevents] = strncmp(counted[k], "PAPI_", 5) == 0;
        nevents++;
    }
    set_budget(0);
    tight = ps_fd_limit_tight();
    outside = stopped = 0;
    ps_threads_hook(thread_begin, thread_end);
    ps_threads_adopt(thread_begin()); /* the main thread is the first: <thread>1</thread> */
    /* Threads already running (shared libraries' constructors start thread
     * pools): counted from now, each with its own record. */
    static int others[1024];
    int nothers = ps_perf_other_threads(others, (int)(sizeof others / sizeof *others));
    if (nothers > (int)(sizeof others / sizeof *others)) {
        ps_note("%d threads running before measurement started have no report of their own (at most %d do)",
                nothers - (int)(sizeof others / sizeof *others), (int)(sizeof others / sizeof *others));
        nothers = (int)(sizeof others / sizeof *others);
    }
    for (int i = 0; i < nothers; i++) {
        tcount_t *t = new_record(others[i], 0);
        if (!t)
            break;
        t->cpu_start = ps_tid_cpu_ns(t->tid);
        t->wall_start = ps_wallclock_ns();
        open_counters(t, t->tid);
        size_t len = strlen(t->why);
        snprintf(t->why + len, sizeof t->why - len, "%srunning before measurement started: counted from then",
                 len ? "; " : "");
        __atomic_store_n(&t->state, T_LIVE, __ATOMIC_RELEASE);
    }
    return 0;
}

/* The running threads' counters this process holds, stopped and read. */
static void freeze_all(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (rec_at(i) && here(rec_at(i)))
            freeze_one(rec_at(i));
}

/* In the collector, for the program's end: the process total's counters
 * and those of every running thread it holds stopped in one pass (a round
 * trip per counter would let the threads still running count on in the
 * total only, or in their own only). */
static int stop_all_held(long unused_a, long unused_b)
{
    (void)unused_a;
    (void)unused_b;
    ps_perf_serve(PS_PERF_OP_DISABLE);
    freeze_all();
    return 0;
}

/* At process end (or before an exec): stop the running threads' counters
 * together with the process total, before any report is written, so that
 * they add up; their CPU and wall times are taken at the same moment,
 * since the threads go on running while the reports are written.  With the
 * counters in the collector, one call stops them all there, and their
 * times' user/system split is taken here.  A signal ending the process in
 * a thread that waits for the collector cannot ask again (the call's lock
 * is its own): the collector stops those counters as it writes. */
static void freeze(void)
{
    __atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
    if (__atomic_load_n(&outside, __ATOMIC_ACQUIRE) && !ps_in_collector()) {
        if (!calling)
            ask(stop_all_held, NULL, 0);
        int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
        for (int i = 0; i < n; i++) {
            tcount_t *t = rec_at(i);
            if (t && t->held && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == T_FROZEN)
                split_times(t);
        }
    }
    freeze_all(); /* the program's own */
}

static void say_overflow(void)
{
    static int said;
    char text[256];
    if (!said && ps_thread_counts_overflow(text, sizeof text)) {
        said = 1;
        ps_hwpc_annotate(text);
        ps_message_safe(text, NULL, NULL, NULL);
    }
}

int ps_thread_counts_overflow(char *out, size_t len)
{
    int over = __atomic_load_n(&overflow, __ATOMIC_RELAXED);
    if (len)
        out[0] = '\0';
    if (over && len) { /* at the end of measurement: no stdio */
        ps_buf_t b;
        ps_buf_fixed(&b, out, len);
        ps_buf_ll(&b, over);
        ps_buf_str(&b, " threads beyond the first ");
        ps_buf_ll(&b, PS_MAX_THREADS);
        ps_buf_str(&b, " have no report of their own (their counts are in the process total)");
    }
    return over;
}

/* Write the thread's report from its record; `why` added to its
 * annotation.  Returns the save's result, the name in path. */
static int write_report(tcount_t *t, const char *why, char *path, size_t path_len)
{
    ps_measurement_t m = {t->wall_end - t->wall_start, t->user_ns > 0 ? t->user_ns / 1e9 : 0,
                          t->sys_ns > 0 ? t->sys_ns / 1e9 : 0, t->values};
    ps_counts_t c = {"perfmon", "perf_event", domain, 0, t->lost ? 0 : nevents, names, preset};
    char annotation[sizeof note + sizeof t->why + sizeof HELD_NOTE + 256];
    const char *parts[5] = {note, t->held ? HELD_NOTE : "", t->why,
                            t->user_ns < 0 ? "ended before the process: its CPU time is not known" : "", why ? why : ""};
    annotation[0] = '\0';
    for (int k = 0; k < 5; k++)
        ps_append_part(annotation, sizeof annotation, parts[k]);
    /* a report taken back after a failed exec was announced already */
    const char *kept = ps_pathtab_at(&exec_paths, t->index);
    if (kept && kept[0])
        ps_report_announced(kept);
    return ps_report_write_counts(&c, ps_thread_number(t->index), annotation, &m, NULL, path, path_len);
}

void ps_thread_counts_freeze(void)
{
    freeze();
    say_overflow();
}

/* Every thread's report, in one pass (after the process total's). */
void ps_thread_counts_finish(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t)
            continue;
        freeze_one(t); /* a thread that started after the freeze */
        wait_ending(t);
        int st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if ((st != T_ENDED && st != T_FROZEN && st != T_FROZEN_GONE) || !cas(&t->state, st, T_WRITTEN))
            continue;
        char path[PATH_MAX];
        path[0] = '\0';
        int rc = write_report(t, NULL, path, sizeof path);
        int err = errno;
        char *kept = ps_pathtab_at(&exec_paths, t->index);
        if (kept)
            kept[0] = '\0';
        if (rc != PS_HWPC_OK && rc != PS_HWPC_EEXIST)
            ps_message_safe("could not save the thread report ", path, ": ", ps_save_errno_text(err));
    }
}

/* In the collector, the process gone without its end (SIGKILL,
 * exit_group, a crash): the threads still running, whose counters went
 * with the process (their counts are in the process total only). */
int ps_thread_counts_running(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE), running = 0;
    for (int i = 0; i < n; i++) {
        const tcount_t *t = rec_at(i);
        int st = t ? __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) : T_FREE;
        running += st == T_LIVE || st == T_ENDING;
    }
    return running;
}

/* In the collector, the process gone without its end: the counters it
 * holds of the threads still running then are read (final: their tasks
 * are gone), so that those threads keep their reports too; their CPU time
 * is their counters' running time. */
void ps_thread_counts_stop_dead(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t || !t->held || !cas(&t->state, T_LIVE, T_FROZEN))
            continue;
        read_counters(t, 1);
        t->cpu_end = -1;
        t->wall_end = ps_wallclock_ns();
        t->user_ns = t->run_ns;
        t->sys_ns = 0;
        ps_append_part(t->why, sizeof t->why, "its CPU time is its counters' running time (all shown as user time)");
    }
}

/* Then the reports of the threads whose counts are final in their records
 * (ended, or stopped with the process total), `how` in the annotation of
 * those that were stopped. */
void ps_thread_counts_write_dead(const char *how)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t)
            continue;
        int st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if ((st != T_ENDED && st != T_FROZEN && st != T_FROZEN_GONE) || !cas(&t->state, st, T_WRITTEN))
            continue;
        char path[PATH_MAX];
        path[0] = '\0';
        int rc = write_report(t, st == T_ENDED ? NULL : how, path, sizeof path);
        if (rc != PS_HWPC_OK && rc != PS_HWPC_EEXIST)
            ps_message_safe("could not save the thread report ", path, ": ", ps_save_errno_text(errno));
    }
}

/* Before an exec: the running threads' counters stopped with the process
 * total (as at process end).  Then ps_thread_counts_exec_write, and
 * ps_thread_counts_exec_failed if the program goes on. */
void ps_thread_counts_exec_freeze(void)
{
    freeze();
    say_overflow();
}

/* Every thread's report (ended or stopped), under its final name, `why`
 * in its annotation; the counters stay open and the threads running. */
void ps_thread_counts_exec_write(const char *why)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t)
            continue;
        wait_ending(t);
        int st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if (st != T_ENDED && st != T_FROZEN && st != T_FROZEN_GONE)
            continue;
        char path[PATH_MAX];
        path[0] = '\0';
        int rc = write_report(t, why, path, sizeof path);
        int err = errno;
        char *slot = ps_pathtab_slot(&exec_paths, i, n);
        if (rc != PS_HWPC_OK && rc != PS_HWPC_EEXIST) {
            ps_message_safe("could not save the thread report ", path, ": ", ps_save_errno_text(err));
            path[0] = '\0';
        }
        if (slot && path[0]) {
            ps_strlcpy(slot, path, PATH_MAX);
            t->exec_pending = 1;
        } else if (path[0]) /* nowhere to remember it: do not leave it behind */
            unlink(path);
    }
}

/* The counters of the threads stopped for an exec run again (those this
 * process holds); the threads that ended meanwhile have final counts. */
static int resume_all(long unused_a, long unused_b)
{
    (void)unused_a;
    (void)unused_b;
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t || !here(t))
            continue;
        if (cas(&t->state, T_FROZEN_GONE, T_ENDED)) { /* it ended meanwhile: its counts are final */
            read_counters(t, 1);
            continue;
        }
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != T_FROZEN)
            continue;
        for (int k = 0; k < nevents; k++)
            if (t->fd[k] >= 0 && ps_perf_still_ours(t->fd[k]))
                ioctl(t->fd[k], PERF_EVENT_IOC_ENABLE, 0);
        if (!cas(&t->state, T_FROZEN, T_LIVE) && cas(&t->state, T_FROZEN_GONE, T_ENDED))
            read_counters(t, 1); /* ended just now */
    }
    return 0;
}

/* The exec failed: the reports written before it are taken back, the
 * threads' counters run again and their end is no longer fixed; their
 * reports come at the process's end, as if no exec was tried. */
void ps_thread_counts_exec_failed(void)
{
    int saved = errno;
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t)
            continue;
        const char *kept = ps_pathtab_at(&exec_paths, i);
        if (t->exec_pending && kept) /* its path stays, not to be announced again */
            unlink(kept);
        t->exec_pending = 0;
    }
    __atomic_store_n(&stopped, 0, __ATOMIC_RELEASE);
    if (__atomic_load_n(&outside, __ATOMIC_ACQUIRE))
        ask(resume_all, NULL, 0);
    resume_all(0, 0);
    errno = saved;
}

/* In the collector (ps_collector_call), just started: the counters it
 * inherited at its fork are its own from now on (the program closes its
 * copies), and its budget is its own descriptor table's. */
static int take_over(long unused_a, long unused_b)
{
    (void)unused_a;
    (void)unused_b;
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t || __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != T_LIVE)
            continue;
        int inherited = 1; /* opened before the fork (not by a thread starting since) */
        for (int k = 0; k < nevents; k++)
            inherited &= t->fd[k] < 0 || ps_perf_still_ours(t->fd[k]);
        t->held = inherited && t->nfd > 0;
    }
    set_budget(1);
    return 0;
}

/* In the program, its collector just started: under a limit with no room
 * above it, the threads' counters are handed to the collector (1), so that
 * the process total is too; else they stay here (0). */
int ps_thread_counts_hand_over(void)
{
    if (!recording || !tight || !ask(take_over, NULL, 0))
        return 0;
    __atomic_store_n(&outside, 1, __ATOMIC_RELEASE); /* first: a thread ending now asks the collector */
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        for (int k = 0; t && t->held && k < nevents; k++)
            if (t->fd[k] >= 0)
                ps_perf_close_fd(t->fd[k]); /* the program's copy; the number is the collector's now */
    }
    return 1;
}

/* In a forked child: the records are the parent's threads.  Their
 * descriptors are closed (the parent's counters go on: nothing is switched
 * off), the records dropped; with psrun -f the calling thread, the child's
 * only one, is counted as its first. */
void ps_thread_counts_after_fork(int follow)
{
    if (!recording)
        return;
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        tcount_t *t = rec_at(i);
        if (!t)
            continue;
        for (int k = 0; k < nevents && t->state != T_FREE && !t->held; k++) /* held: the collector's numbers */
            if (t->fd[k] >= 0)
                ps_perf_close_fd(t->fd[k]);
        memset(t, 0, sizeof *t);
    }
    nthreads = 0;
    outside = stopped = 0;
    overflow = 0;
    fds_used = 0;
    ps_pathtab_free(&exec_paths);
    if (follow)
        ps_threads_adopt(thread_begin());
}
