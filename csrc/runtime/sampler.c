/* sampler.c - statistical profiling.  Every thread gets its own sampling
 * source, so each sample is charged to the thread it interrupted:
 *   - CPU time (ITIMER_PROF, ITIMER_VIRTUAL) and event overflow: a
 *     perf_event counter per thread whose overflow signals that thread
 *     (attr.sigtrap, or F_SETOWN_EX); task-clock is hrtimer-driven, so periods
 *     below the scheduler tick are honoured.  Without perf_event, a POSIX
 *     per-thread CPU-time timer (tick-limited) is used instead.
 *   - wall time (ITIMER_REAL): a running thread is sampled by its own
 *     perf_event task clock counting user time only (exclude_kernel), a
 *     blocked one by a sampler thread from /proc/self/task/TID/syscall,
 *     without any signal.  See real_sampler() for why this never cuts a
 *     sleep or a read short.  When the descriptor limit leaves no room
 *     above it (ps_fd_limit_tight), the collector process holds the task
 *     clocks and runs the sampler thread, so the program holds none
 *     (see `outside`).
 * Threads that exist before sampling starts (started by shared-library
 * constructors, OpenBLAS's pool say) are found in /proc/self/task and get
 * their source too, opened for their tid.
 * perf_event samples come as a synchronous SIGTRAP where the kernel has
 * attr.sigtrap and queues it for a thread that blocks SIGTRAP (5.19 on;
 * 5.13 to 5.18 would kill the thread): the overflow queues work that sends the
 * signal to the sampled thread on its return to user mode, tagged with
 * attr.sig_data, for less than the F_SETSIG route (fasync, a signal from
 * irq_work): 0.3 to 1 point of 1000 Hz sampling's overhead on the VM
 * measured (docs/design/callpath-unwinding.md).  Every other
 * SIGTRAP (breakpoints, raise, a debugger's) goes to the program's own
 * action (signals.c).  SIGPROF with F_SETSIG is used instead where the
 * kernel refuses sigtrap, where the process is traced when sampling starts
 * (a debugger would stop on every sample), and with
 * PSUITE_SAMPLE_SIGNAL=sigprof; timers always signal SIGPROF.
 * The signal handler only stores the interrupted PC into the thread's
 * preallocated table (lock-free, no allocation); what does not fit is
 * counted as lost.  A thread that blocks the sampling signal (SIGTRAP or
 * SIGPROF, whichever its source sends) cannot be sampled: it is
 * detected (its signal mask when its source starts and when it ends, and
 * by the ITIMER_REAL sampler meanwhile), named in the report, and the
 * samples its CPU time should have given are counted as lost.  When a
 * thread ends, its samples are copied out and its table goes to the next
 * thread. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <ucontext.h>
#include <dlfcn.h>
#include <unistd.h>

#include "internal.h"

/* Timer and sampler signals carry (SIGVAL_TAG << 16) | thread index, so the
 * handler knows the signal is ours and whose it is without thread-local
 * storage (TLS in a dlopen'd library is not async-signal-safe). */
#define SIGVAL_TAG 0x7073
#define SIGVAL(index) ((SIGVAL_TAG << 16) | (index))
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define FD_MAP 65536 /* slots of fd_thread: a power of two */
#define MAX_PROBE 64

enum { SRC_PERF = 1, SRC_CPUTIMER, SRC_REAL };

static ps_profcfg_t cfg;
static int source;
static int callpath;                            /* the most frames per sample; 0: flat profile only */
static volatile int active;                     /* samples are recorded */
static volatile int paused;                     /* around an exec: sources held, samples ignored */
static volatile int starting;                   /* psrun's start-up still running: its samples are psuite's */
/* ps_hwpc_suspend (the C API): sources off and samples ignored in every
 * thread until ps_hwpc_start; apart from `paused`, so that an exec that
 * fails does not resume what the program suspended. */
static volatile int suspended;
/* The threads' records, in chunks of THREAD_CHUNK mapped as threads come
 * (under real_lock, before nthreads counts them): a counting run carries
 * none in its address space, a sampled one only those of the threads it
 * started, up to PS_MAX_THREADS. */
#define THREAD_CHUNK_LOG2 8
#define THREAD_CHUNK (1 << THREAD_CHUNK_LOG2)
static ps_sthread_t *thread_chunks[PS_MAX_THREADS / THREAD_CHUNK];

static __thread pid_t sampling_for; /* the collector's sampler thread: the program's pid (collector.c's
                                       in_collector is thread-local: its main thread's only) */

/* In the collector: its main thread (collector.c) or its sampler thread. */
static int in_collector_here(void) { return sampling_for || ps_in_collector(); }

/* Record i (below nthreads, or a chunk known mapped); NULL if its chunk is
 * not mapped.  Async-signal-safe. */
static ps_sthread_t *thread_at(int i)
{
    if (i < 0 || i >= PS_MAX_THREADS)
        return NULL;
    ps_sthread_t *chunk = __atomic_load_n(&thread_chunks[i >> THREAD_CHUNK_LOG2], __ATOMIC_ACQUIRE);
    if (chunk && in_collector_here() && !ps_shared_contains(chunk))
        return NULL; /* not shared with the collector (shared.c) */
    return chunk ? &chunk[i & (THREAD_CHUNK - 1)] : NULL;
}

/* Under real_lock: record i's chunk mapped. */
static ps_sthread_t *thread_slot(int i)
{
    ps_sthread_t *t = thread_at(i);
    if (t || i < 0 || i >= PS_MAX_THREADS)
        return t;
    void *chunk = ps_map(sizeof(ps_sthread_t) * THREAD_CHUNK); /* the collector reads it (shared.c) */
    if (!chunk)
        return NULL;
    __atomic_store_n(&thread_chunks[i >> THREAD_CHUNK_LOG2], (ps_sthread_t *)chunk, __ATOMIC_RELEASE);
    return thread_at(i);
}
static int nthreads;                            /* slots handed out */
static unsigned long unsampled;                 /* threads beyond PS_MAX_THREADS */
static unsigned perf_type;
static unsigned long long perf_config;
/* Held by the ITIMER_REAL sampler for a pass over the threads, and by
 * whatever starts, ends or reads a thread's source or table in normal
 * context (never in the signal handler). */
static ps_lock_t real_lock; /* util.c: taken bounded where the end of measurement needs it */
static pthread_t real_thread;
static volatile int real_stop;
static int real_running;                        /* the sampler thread exists in process real_pid */
static pid_t real_tid;                          /* its thread id, once it runs */
static pid_t real_pid, sampler_pid;             /* sampler_pid: the process sampled (not a child it forked) */
static int real_wanted;                         /* the program's constructors have run: start it */
static int real_signals;                        /* no perf_event: running threads are signalled (see real_sampler) */
/* ITIMER_REAL with no room above the program's descriptor limit: every
 * descriptor psuite held in the program would be one the program could
 * have had.  The collector (collector.c: a fork of the program, sharing
 * these globals and the records) opens the task clock of the thread that
 * starts sampling, and of the threads already running then, for their
 * tids, and runs the sampler thread, reading /proc/PID/task/TID; the
 * program keeps no descriptor.  The collector is under the same limit, so
 * these clocks are inherited (attr.inherit, inherit_thread: by threads,
 * not by forked children): every thread started later gets its own copy
 * from its creator's, with no descriptor and no round trip, and
 * attr.sigtrap signals each thread for its own clock.  The copies share
 * their sig_data, so the handler finds the thread's record by its tid
 * (tid_index).  Only with SIGTRAP delivery: an F_SETSIG route's SIGPROF
 * could outlive an exec. */
static int outside;
#define OUTSIDE_SPARE 6 /* descriptors the collector keeps free (its reports, its /proc reads) */
#define BY_TID 0xffff   /* sig_data's index: look the thread up by its tid */
enum { OUTSIDE_HELD = 1, OUTSIDE_INHERITED }; /* ps_sthread_t.outside */
/* tid -> record index, for the handler: (tid << 32) | index in a window of
 * TID_WINDOW slots from the tid's hash, 0 where free; private memory (a
 * forked child's copy is its own), written under real_lock. */
#define TID_SLOTS 32768
#define TID_WINDOW 16
static unsigned long long *tid_map;
enum { OUT_OPEN = 1, OUT_OPEN_PENDING, OUT_CLOSE, OUT_SWITCH };
static long long started_ns;
static char sampler_note[512];
static int source_lost_noted;                   /* sampler_note says that a source was closed */
/* The F_SETSIG route's signals carry the perf descriptor, not the thread:
 * (fd << 32) | (thread index + 1) in slot fd % FD_MAP, mapped only when
 * that route is taken (the descriptors live above the descriptor limit,
 * which may be far above FD_MAP). */
static unsigned long long *fd_thread;
static int source_chosen;       /* perf_sig decided (once per process: a forked child keeps it) */
static int perf_sig = SIGPROF;  /* what perf_event sources signal: SIGTRAP (attr.sigtrap) or SIGPROF (F_SETSIG) */
static char delivery_note[160]; /* how samples are delivered, and why not by SIGTRAP */

/* Tables of ended threads, zeroed, for the next threads (under real_lock). */
#define FREE_TABLES 64
static ps_slot_t *free_tables[FREE_TABLES];
static int nfree_tables;
/* Where ended threads' samples are kept: mmap'd chunks, used up in order. */
static ps_slot_t *keep_area;
static size_t keep_used, keep_cap;
/* Modules unloaded with dlclose (modules.c retires them, one at a time
 * under its refresh lock; their samples stay in the tables under their
 * load's key).  An entry is complete before nrmods counts it. */
typedef struct {
    char file[PATH_MAX];
    unsigned long long base, lo, hi; /* lo, hi: its executable segments' span */
    unsigned char buildid[PS_BUILDID_MAX];
    unsigned buildid_len;
} retired_module_t;
static retired_module_t *rmods;
static int nrmods, rmods_cap;

#define TABLE_BYTES (sizeof(ps_slot_t) * PS_SAMPLE_SLOTS)

static int record_n(ps_sthread_t *t, unsigned long long pc, unsigned long long n);

static int record(ps_sthread_t *t, unsigned long long pc) { return record_n(t, pc, 1); }

/* n samples at pc (a timer's overruns: periods that expired while its
 * signal was pending). */
static int record_n(ps_sthread_t *t, unsigned long long pc, unsigned long long n)
{
    ps_slot_t *table = t->table;
    if (!table || !pc) {
        __atomic_fetch_add(&t->lost, n, __ATOMIC_RELAXED);
        return 0;
    }
    pc = ps_modules_key(pc); /* the load it is in: a module unloaded keeps its samples (modules.c) */
    unsigned long long h = (pc * 0x9E3779B97F4A7C15ull) >> (64 - PS_SAMPLE_SLOTS_LOG2);
    for (unsigned probe = 0; probe < MAX_PROBE; probe++) {
        ps_slot_t *s = &table[(h + probe) & (PS_SAMPLE_SLOTS - 1)];
        unsigned long long key = __atomic_load_n(&s->pc, __ATOMIC_ACQUIRE);
        if (key == 0) {
            unsigned long long expected = 0;
            if (__atomic_compare_exchange_n(&s->pc, &expected, pc, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                key = pc;
                __atomic_fetch_add(&t->nused, 1, __ATOMIC_RELAXED);
            } else
                key = expected;
        }
        if (key == pc) {
            __atomic_fetch_add(&s->count, n, __ATOMIC_RELAXED);
            __atomic_fetch_add(&t->samples, n, __ATOMIC_RELAXED);
            return 1;
        }
    }
    __atomic_fetch_add(&t->lost, n, __ATOMIC_RELAXED);
    return 0;
}

static unsigned long long interrupted_pc(void *ucv)
{
    ucontext_t *uc = ucv;
#if defined(__x86_64__)
    return (unsigned long long)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (unsigned long long)uc->uc_mcontext.pc;
#elif defined(__i386__)
    return (unsigned long long)uc->uc_mcontext.gregs[REG_EIP];
#else
    (void)uc;
    return 0;
#endif
}

/* A sample recorded in the flat table goes into the thread's tree too, or
 * is counted lost there: the flat total is the trees' samples plus lost. */
static void callpath_sample(ps_sthread_t *t, void *ucv, unsigned long long n)
{
    if (t->cct)
        ps_cct_sample(t->cct, ucv, n);
    else
        __atomic_fetch_add(&t->cp_lost, n, __ATOMIC_RELAXED);
}

static unsigned tid_hash(pid_t tid) { return (unsigned)(((unsigned long long)tid * 0x9E3779B97F4A7C15ull) >> 49); }

/* The record index of thread tid, -1 if none.  Async-signal-safe. */
static int tid_index(pid_t tid)
{
    unsigned long long *map = __atomic_load_n(&tid_map, __ATOMIC_ACQUIRE);
    for (unsigned k = 0; map && k < TID_WINDOW; k++) {
        unsigned long long v = __atomic_load_n(&map[(tid_hash(tid) + k) & (TID_SLOTS - 1)], __ATOMIC_ACQUIRE);
        if (v && (pid_t)(v >> 32) == tid)
            return (int)(v & 0xffffffffu);
    }
    return -1;
}

/* Under real_lock: tid's entry set (index >= 0) or removed (-1).  0: done. */
static int tid_set(pid_t tid, int index)
{
    if (!tid_map) {
        void *m = mmap(NULL, sizeof *tid_map * TID_SLOTS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        __atomic_store_n(&tid_map, (unsigned long long *)m, __ATOMIC_RELEASE);
    }
    unsigned long long *free_slot = NULL;
    for (unsigned k = 0; k < TID_WINDOW; k++) {
        unsigned long long *slot = &tid_map[(tid_hash(tid) + k) & (TID_SLOTS - 1)];
        unsigned long long v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (v && (pid_t)(v >> 32) == tid) { /* a reused tid's, or its own */
            __atomic_store_n(slot, index < 0 ? 0 : ((unsigned long long)tid << 32) | (unsigned)index, __ATOMIC_RELEASE);
            return 0;
        }
        if (!v && !free_slot)
            free_slot = slot;
    }
    if (index < 0)
        return 0;
    if (!free_slot)
        return -1;
    __atomic_store_n(free_slot, ((unsigned long long)tid << 32) | (unsigned)index, __ATOMIC_RELEASE);
    return 0;
}

/* One of psuite's samples (1): the thread index it is for in *index (-1:
 * unknown) and the periods it stands for in *n.  Async-signal-safe. */
static int classify(int sig, const siginfo_t *si, int *index, unsigned long long *n)
{
    *index = -1;
    *n = 1;
    if (sig == SIGTRAP) {
        /* attr.sigtrap: si_perf_data (after si_addr, long-sized) is the
         * event's sig_data.  A sample that found SIGTRAP blocked (in a
         * handler, or by the program) comes late, TRAP_PERF_FLAG_ASYNC in
         * si_perf_flags, where the thread unblocked it: charged there, as a
         * pending SIGPROF is; the blocked thread's missing samples are
         * counted lost at its end.  Every other SIGTRAP is the program's. */
        if (si->si_code != TRAP_PERF)
            return 0;
        unsigned long data;
        memcpy(&data, (const char *)si + offsetof(siginfo_t, si_addr) + sizeof(void *), sizeof data);
        if ((data >> 16) != SIGVAL_TAG || (data & ~0xffffffffUL) != 0)
            return 0;
        *index = (int)(data & 0xffff);
        if (*index == BY_TID)
            *index = tid_index((pid_t)syscall(SYS_gettid));
        return 1;
    }
    if (sig != SIGPROF)
        return 0;
    if ((si->si_code == SI_TIMER || si->si_code == SI_QUEUE) && (si->si_value.sival_int >> 16) == SIGVAL_TAG) {
        *index = si->si_value.sival_int & 0xffff;
        /* a CPU-time timer checked at the tick: the periods that passed
         * meanwhile come as overruns of one signal */
        if (si->si_code == SI_TIMER && si->si_overrun > 0)
            *n += (unsigned long long)si->si_overrun;
        return 1;
    }
    if (si->si_code >= POLL_IN && si->si_code <= POLL_HUP) { /* perf_event overflow (F_SETSIG) */
        unsigned long long *map = __atomic_load_n(&fd_thread, __ATOMIC_ACQUIRE);
        unsigned long long v = map && si->si_fd >= 0 ? __atomic_load_n(&map[si->si_fd % FD_MAP], __ATOMIC_ACQUIRE) : 0;
        if (v && (int)(v >> 32) == si->si_fd)
            *index = (int)(v & 0xffffffffu) - 1;
        return 1;
    }
    return 0;
}

int ps_sampler_is_sample(int sig, const void *siginfo)
{
    int index;
    unsigned long long n;
    return classify(sig, siginfo, &index, &n);
}

/* Async-signal-safe: no locks, no allocation, atomics only; errno kept. */
static void on_sample(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    int index;
    unsigned long long n;
    ps_sthread_t *t;
    if (!classify(sig, si, &index, &n))
        ps_signals_forward(sig, si, ucv);
    else if (active && !paused && !starting && !__atomic_load_n(&suspended, __ATOMIC_RELAXED) && (t = thread_at(index)) &&
             __atomic_load_n(&t->live, __ATOMIC_ACQUIRE)) {
        unsigned long long pc = ps_modules_charge(interrupted_pc(ucv));
        if (!ps_modules_is_self(pc) && record_n(t, pc, n)) { /* psuite's own time is not the program's */
            __atomic_store_n(&t->last_pc, pc, __ATOMIC_RELAXED);
            if (callpath)
                callpath_sample(t, ucv, n);
        }
    }
    errno = saved;
}

/* The signal the sources send (perf_sig, or SIGPROF from timers). */
static int sampling_signal(void) { return source == SRC_CPUTIMER || real_signals ? SIGPROF : perf_sig; }

/* /proc's file leaf of the measured process's thread tid: /proc/self in
 * the program, /proc/PID in its collector. */
static void task_file(char *path, size_t len, pid_t tid, const char *leaf)
{
    pid_t pid = sampling_for ? sampling_for : ps_in_collector() ? ps_self_pid() : 0;
    if (pid)
        snprintf(path, len, "/proc/%d/task/%d/%s", (int)pid, (int)tid, leaf);
    else
        snprintf(path, len, "/proc/self/task/%d/%s", (int)tid, leaf);
}

/* The sampling signal in a thread's blocked mask: its own (the kernel's
 * mask: psuite's pthread_sigmask shows a program's view) or, for another
 * thread, the SigBlk line of its /proc status. */
static int blocks_sampling_signal(pid_t tid)
{
    int sig = sampling_signal();
    if (tid == (pid_t)syscall(SYS_gettid)) {
        uint64_t cur = 0;
        return syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, 8) == 0 && ((cur >> (sig - 1)) & 1);
    }
    char path[64], buf[2048];
    task_file(path, sizeof path, tid, "status");
    if (ps_read_file(path, buf, sizeof buf) <= 0)
        return 0;
    const char *p = strstr(buf, "\nSigBlk:");
    unsigned long long mask = 0;
    if (!p || sscanf(p + 8, "%llx", &mask) != 1)
        return 0;
    return (mask >> (sig - 1)) & 1;
}

/* Field 22 of /proc/self/task/TID/stat, 0 when the thread is gone. */
static unsigned long long tid_starttime(pid_t tid)
{
    char path[64], buf[1024];
    task_file(path, sizeof path, tid, "stat");
    if (ps_read_file(path, buf, sizeof buf) <= 0)
        return 0;
    const char *p = strrchr(buf, ')');
    for (int field = 3; p && field <= 22; field++)
        p = strchr(p + 1, ' ');
    unsigned long long v = 0;
    return p && sscanf(p + 1, "%llu", &v) == 1 ? v : 0;
}

static void fill_attr(struct perf_event_attr *attr, int index)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = perf_type;
    a.config = perf_config;
    a.sample_period = (unsigned long long)cfg.threshold * (cfg.kind == PS_PROF_ITIMER ? 1000 : 1);
    a.disabled = 1;
    a.wakeup_events = 1;
    /* ITIMER_PROF counts system time too (samples then land on the user
     * instruction after the system call), ITIMER_VIRTUAL does not, nor
     * ITIMER_REAL's running part (see real_sampler). */
    a.exclude_kernel = cfg.kind == PS_PROF_ITIMER ? cfg.timer != PS_TIMER_PROF : !(cfg.domain & PS_DOM_KERNEL);
    a.exclude_user = cfg.kind == PS_PROF_EVENT && !(cfg.domain & PS_DOM_USER);
    a.exclude_hv = 1;
    if (perf_sig == SIGTRAP) {
        /* the kernel requires remove_on_exec with sigtrap: right, an exec'd
         * image has no handler for it */
        a.sigtrap = 1;
        a.remove_on_exec = 1;
        a.sig_data = (unsigned long long)SIGVAL(index);
    }
    if (outside) { /* see `outside` */
        a.inherit = 1;
        a.inherit_thread = 1;
        a.sig_data = (unsigned long long)SIGVAL(BY_TID);
    }
    *attr = a;
}

/* Under psrun, from before the sampler starts until the program's own
 * code is reached (the module map, the report's header, the collector's
 * fork): samples are dropped, as that time is psuite's and a bare run has
 * none of it. */
static void outside_start(void);

void ps_sampler_starting(int on)
{
    starting = on;
    if (!on && outside && active && !ps_in_collector())
        outside_start();
}

/* Samples are taken now: neither held around an exec nor suspended. */
static int sources_on(void) { return !paused && !__atomic_load_n(&suspended, __ATOMIC_RELAXED); }

/* The F_SETSIG route's map, mapped once (under real_lock or before any
 * thread can race); NULL if it cannot be. */
static unsigned long long *fd_map(void)
{
    if (!fd_thread) {
        void *m = mmap(NULL, sizeof *fd_thread * FD_MAP, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m != MAP_FAILED)
            __atomic_store_n(&fd_thread, (unsigned long long *)m, __ATOMIC_RELEASE);
    }
    return fd_thread;
}

static void map_fd(int fd, int index)
{
    unsigned long long *map = perf_sig != SIGTRAP ? fd_map() : NULL;
    if (map && fd >= 0)
        __atomic_store_n(&map[fd % FD_MAP], ((unsigned long long)fd << 32) | (unsigned)(index + 1), __ATOMIC_RELEASE);
}

static void unmap_fd(int fd)
{
    unsigned long long *map = __atomic_load_n(&fd_thread, __ATOMIC_ACQUIRE);
    if (map && fd >= 0 && (int)(__atomic_load_n(&map[fd % FD_MAP], __ATOMIC_ACQUIRE) >> 32) == fd)
        __atomic_store_n(&map[fd % FD_MAP], 0, __ATOMIC_RELEASE);
}

/* The thread's perf_event source, its descriptor above the program's
 * descriptor limit (ps_fd_above_limit): never a number the program gets
 * from open() or chooses for itself; *id: the event's identity, checked
 * before each later use or close. */
static int open_perf(pid_t tid, int index, unsigned long long *id, char *why, size_t why_len)
{
    struct perf_event_attr a;
    fill_attr(&a, index);
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "perf_event_open: %s", strerror(errno));
        return -1;
    }
    fd = ps_perf_move_high(fd, 0);
    *id = ps_perf_id(fd);
    map_fd(fd, index);
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    if ((perf_sig != SIGTRAP && (fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, SIGPROF) ||
                                 fcntl(fd, F_SETOWN_EX, &owner))) ||
        (sources_on() && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))) {
        snprintf(why, why_len, "perf_event signal routing: %s", strerror(errno));
        unmap_fd(fd);
        close(fd);
        return -1;
    }
    return fd;
}

/* The thread's perf descriptor is still its event: the program may have
 * closed it (closefrom, close_range) and reused the number. */
static int perf_fd_ours(const ps_sthread_t *t) { return t->perf_fd >= 0 && ps_perf_is(t->perf_fd, t->perf_id); }

/* ---- the sources held by the collector (outside) ---------------------- */

static int threads_now(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    return n < PS_MAX_THREADS ? n : PS_MAX_THREADS;
}

/* In the collector: t's task clock opened for its tid and kept here.  0,
 * or why not (an errno). */
static int outside_open(ps_sthread_t *t)
{
    struct perf_event_attr a;
    fill_attr(&a, t->index);
    int fd = (int)syscall(SYS_perf_event_open, &a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return errno ? errno : EINVAL;
    /* the collector is under the program's limit too: room kept for its
     * reports, which it may write while it still holds these */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)fd + OUTSIDE_SPARE >= rl.rlim_cur) {
        close(fd);
        return EMFILE;
    }
    if (sources_on() && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
        int err = errno;
        close(fd);
        return err;
    }
    t->perf_id = ps_perf_id(fd);
    t->perf_fd = fd;
    t->outside = OUTSIDE_HELD;
    return 0;
}

/* A thread whose source the collector could not open is said once; its
 * blocked time is still sampled, its running time is not. */
static void outside_failed(void)
{
    static const char text[] = "the collector could not open a thread's task clock: the running time of that "
                               "thread and of the threads it started is not sampled";
    if (!strstr(sampler_note, text))
        ps_append_part(sampler_note, sizeof sampler_note, text);
}

/* In the collector: the task clocks of the threads that ended closed. */
static void outside_sweep(void)
{
    for (int i = 0, n = threads_now(); i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (t && t->outside == OUTSIDE_HELD && t->perf_fd >= 0 && !__atomic_load_n(&t->live, __ATOMIC_ACQUIRE)) {
            close(t->perf_fd);
            t->perf_fd = -1;
        }
    }
}

/* In the collector: the live threads still without a source (their start
 * came before the collector did) get theirs. */
static void outside_open_pending(void)
{
    for (int i = 0, n = threads_now(); i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (t && __atomic_load_n(&t->live, __ATOMIC_ACQUIRE) && !t->outside && !t->failed && t->perf_fd < 0) {
            if (outside_open(t)) {
                t->failed = 1;
                outside_failed();
            }
        }
    }
}

/* In the collector: the held task clocks on or off as sources_on() says. */
static void outside_switch(void)
{
    int on = sources_on();
    for (int i = 0, n = threads_now(); i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (t && t->outside == OUTSIDE_HELD && t->perf_fd >= 0 && __atomic_load_n(&t->live, __ATOMIC_ACQUIRE))
            ioctl(t->perf_fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0); /* and the inherited copies */
    }
}

/* Run in the collector for the program (ps_collector_call), which holds
 * real_lock meanwhile: op on thread index's source (or on all). */
static int outside_call(long op, long index)
{
    ps_sthread_t *t = thread_at((int)index);
    switch (op) {
    case OUT_OPEN:
        outside_sweep(); /* the room of ended threads first */
        return t ? outside_open(t) : EINVAL;
    case OUT_OPEN_PENDING:
        outside_sweep();
        outside_open_pending();
        return 0;
    case OUT_CLOSE:
        if (t && t->outside == OUTSIDE_HELD && t->perf_fd >= 0) {
            close(t->perf_fd);
            t->perf_fd = -1;
        }
        return 0;
    case OUT_SWITCH:
        outside_switch();
        return 0;
    default:
        return EINVAL;
    }
}

/* In the program, under real_lock: op run by the collector; 0 when done. */
static int ask_outside(int op, int index)
{
    int rc = 0;
    if (!ps_collector_call(outside_call, op, index, &rc))
        return ESRCH;
    return rc;
}

/* The thread's source, for its tid: the calling thread's or another's
 * (threads adopted at start). */
static int start_source(ps_sthread_t *t, char *why, size_t why_len)
{
    if (source == SRC_REAL && outside) {
        if (tid_set(t->tid, t->index)) {
            snprintf(why, why_len, "no room in the table of threads by tid");
            return -1;
        }
        if (t->index > 0 && !t->adopted) { /* started since: its creator's clock is inherited */
            t->outside = OUTSIDE_INHERITED;
            return 0;
        }
        /* before the collector runs (psrun's start, a followed child's),
         * opened once it does: ps_sampler_starting(0), or its sampler
         * thread's first pass */
        int err = ps_collector_running() ? ask_outside(OUT_OPEN, t->index) : 0;
        if (err) {
            snprintf(why, why_len, "perf_event_open in the collector: %s", strerror(err));
            outside_failed();
            return -1;
        }
        return 0;
    }
    if (source == SRC_PERF || (source == SRC_REAL && !real_signals)) {
        int fd = open_perf(t->tid, t->index, &t->perf_id, why, why_len);
        if (fd < 0)
            return -1;
        t->perf_fd = fd;
    } else if (source == SRC_CPUTIMER) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGPROF;
        sev.sigev_value.sival_int = SIGVAL(t->index);
        sev._sigev_un._tid = t->tid;
        /* the thread's CPU clock by tid, as pthread_getcpuclockid builds it */
        clockid_t clock = (clockid_t)((~(unsigned)t->tid) << 3) | 6;
        timer_t timer;
        if (timer_create(clock, &sev, &timer)) {
            snprintf(why, why_len, "timer_create: %s", strerror(errno));
            return -1;
        }
        t->timer = timer;
        struct itimerspec its;
        its.it_interval.tv_sec = cfg.threshold / 1000000;
        its.it_interval.tv_nsec = (cfg.threshold % 1000000) * 1000;
        its.it_value = its.it_interval;
        if (sources_on()) /* else armed when sampling resumes */
            timer_settime(timer, 0, &its, NULL);
        t->has_timer = 1;
    }
    if (source == SRC_REAL) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)t->tid);
        t->syscall_fd = ps_fd_above_limit(open(path, O_RDONLY | O_CLOEXEC));
        t->syscall_ident = ps_fd_ident(t->syscall_fd);
    }
    return 0;
}

/* The samples the thread's source generated (for a thread that blocked
 * them): its CPU time - user time only where the source excludes the
 * kernel - over the period; for event overflow, the counter over the
 * period.  Before the source is stopped. */
static unsigned long long expected_samples(const ps_sthread_t *t)
{
    if (cfg.kind == PS_PROF_EVENT) {
        unsigned long long count = 0;
        if (perf_fd_ours(t) && read(t->perf_fd, &count, sizeof count) == (ssize_t)sizeof count && cfg.threshold > 0)
            return count / (unsigned long long)cfg.threshold;
        return 0;
    }
    long long ns = cfg.timer == PS_TIMER_PROF || source == SRC_CPUTIMER || real_signals ? t->cpu_ns : t->user_ns;
    return ns > 0 && cfg.threshold > 0 ? (unsigned long long)ns / ((unsigned long long)cfg.threshold * 1000) : 0;
}

/* The samples of a thread whose source the program closed are counted
 * lost: the CPU time it was sampled over (as for a thread blocking the
 * signal), minus the samples it gave before the descriptor went. */
static void count_source_lost(ps_sthread_t *t)
{
    t->source_lost = 1;
    if (!__atomic_exchange_n(&source_lost_noted, 1, __ATOMIC_ACQ_REL))
        ps_append_part(sampler_note, sizeof sampler_note,
                       "the program closed psuite's sampling descriptor (closefrom, close_range ...): the samples "
                       "of the CPU time after that are counted lost");
    if (cfg.kind != PS_PROF_ITIMER)
        return;
    long long ns = cfg.timer == PS_TIMER_PROF || real_signals ? t->cpu_ns : t->user_ns;
    unsigned long long expected = ns > 0 && cfg.threshold > 0 ? (unsigned long long)ns / ((unsigned long long)cfg.threshold * 1000) : 0;
    unsigned long long got = t->samples - t->proc_samples - t->wait_samples;
    if (expected > got)
        __atomic_fetch_add(&t->lost, expected - got, __ATOMIC_RELAXED);
}

/* Each descriptor closed only if it is still the thread's (the program
 * may have reused the number): never one of the program's. */
static void stop_source(ps_sthread_t *t)
{
    if (t->perf_fd >= 0 && !t->outside) {
        unmap_fd(t->perf_fd);
        if (perf_fd_ours(t)) {
            ioctl(t->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
            close(t->perf_fd);
        } else
            count_source_lost(t);
        t->perf_fd = -1;
    }
    if (t->has_timer) {
        timer_delete((timer_t)t->timer);
        t->has_timer = 0;
    }
    if (t->syscall_fd >= 0) {
        if (ps_fd_ident(t->syscall_fd) == t->syscall_ident)
            close(t->syscall_fd);
        t->syscall_fd = -1;
    }
}

/* Under real_lock. */
static ps_slot_t *take_table(void)
{
    if (nfree_tables)
        return free_tables[--nfree_tables];
    return ps_map(TABLE_BYTES); /* shared with the collector (shared.c) */
}

/* Under real_lock: room for n kept samples. */
static ps_slot_t *keep_room(size_t n)
{
    if (keep_used + n > keep_cap) {
        size_t cap = n > PS_SAMPLE_SLOTS ? n : PS_SAMPLE_SLOTS;
        void *area = ps_map(sizeof(ps_slot_t) * cap);
        if (!area)
            return NULL;
        keep_area = area; /* what was left of the last chunk is not used */
        keep_used = 0;
        keep_cap = cap;
    }
    ps_slot_t *room = keep_area + keep_used;
    keep_used += n;
    return room;
}

/* Under real_lock, the thread no longer live and no longer sampled by
 * anyone (it has ended, from itself): its samples copied out, its table
 * zeroed and handed to the next thread. */
static void recycle_table(ps_sthread_t *t)
{
    ps_slot_t *table = t->table;
    if (!table)
        return;
    unsigned long long used = __atomic_load_n(&t->nused, __ATOMIC_ACQUIRE);
    ps_slot_t *kept = used ? keep_room(used) : NULL;
    if (used && !kept)
        return; /* nowhere to keep them: the table stays the thread's */
    unsigned long n = 0;
    for (unsigned s = 0; used && s < PS_SAMPLE_SLOTS && n < used; s++)
        if (table[s].pc && table[s].count)
            kept[n++] = table[s];
    t->kept = kept;
    t->nkept = n;
    t->table = NULL;
    if (nfree_tables < FREE_TABLES && ps_zero(table, TABLE_BYTES) == 0)
        free_tables[nfree_tables++] = table;
    else
        ps_unmap(table, TABLE_BYTES);
}

/* Under real_lock: a slot for tid, its table and its source (the caller
 * says how the source went in t->failed). */
static ps_sthread_t *add_thread(pid_t tid, int adopted, ps_cct_t *cct)
{
    int idx = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    if (idx >= PS_MAX_THREADS) {
        __atomic_fetch_add(&unsampled, 1, __ATOMIC_RELAXED);
        ps_cct_free(cct);
        return NULL;
    }
    ps_sthread_t *t = thread_slot(idx);
    if (!t) { /* no memory for its record: counted as a thread not sampled */
        __atomic_fetch_add(&unsampled, 1, __ATOMIC_RELAXED);
        ps_cct_free(cct);
        return NULL;
    }
    memset(t, 0, sizeof *t);
    t->index = idx;
    t->tid = tid;
    t->adopted = adopted;
    t->perf_fd = t->syscall_fd = -1;
    t->start_ns = ps_wallclock_ns();
    if (adopted)
        t->starttime = tid_starttime(tid);
    t->table = take_table();
    t->cct = cct;
    t->sigblocked = blocks_sampling_signal(tid);
    __atomic_store_n(&nthreads, idx + 1, __ATOMIC_RELEASE);
    char why[256];
    ps_fd_window_enter();
    if (start_source(t, why, sizeof why))
        t->failed = 1;
    ps_fd_window_leave();
    __atomic_store_n(&t->live, 1, __ATOMIC_RELEASE);
    return t;
}

ps_sthread_t *ps_sampler_thread_begin(void)
{
    if (!active)
        return NULL;
    /* its tree ready and the unwinder's first-use costs paid before its
     * source starts */
    ps_cct_t *cct = callpath ? ps_cct_new() : NULL;
    if (cct)
        ps_cct_thread_warm(cct);
    ps_lock_take(&real_lock);
    ps_sthread_t *t = add_thread((pid_t)syscall(SYS_gettid), 0, cct);
    ps_lock_give(&real_lock);
    return t;
}

/* Under real_lock.  at_stop: from the thread ending the process, whose
 * own mask may be a signal handler's then (not the program's). */
static void end_thread(ps_sthread_t *t, int recycle, int at_stop)
{
    if (!__atomic_load_n(&t->live, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&t->live, 0, __ATOMIC_RELEASE);
    long long cpu = -1;
    /* an adopted thread may have ended unseen, its tid even reused */
    if (!t->adopted || tid_starttime(t->tid) == t->starttime)
        cpu = ps_tid_cpu_ns(t->tid);
    if (cpu >= 0) {
        t->cpu_ns = cpu;
        ps_tid_times(t->tid, t->cpu_ns, &t->user_ns, &t->sys_ns);
        if (!t->sigblocked && !(at_stop && t->tid == (pid_t)syscall(SYS_gettid)))
            t->sigblocked = blocks_sampling_signal(t->tid);
    } else {
        /* gone: its task clock, where it has one, is its time on a CPU */
        unsigned long long count = 0;
        if (perf_fd_ours(t) && cfg.kind == PS_PROF_ITIMER &&
            read(t->perf_fd, &count, sizeof count) == (ssize_t)sizeof count)
            t->cpu_ns = t->user_ns = (long long)count;
    }
    if (t->sigblocked) {
        /* The mask seen is the evidence only with the samples missing: a
         * thread looked at while glibc starts it has every signal blocked
         * for a moment, and one may block SIGPROF for a short while. */
        t->blocked_cpu_s = t->cpu_ns / 1e9;
        unsigned long long expected = expected_samples(t);
        unsigned long long got = t->samples - t->proc_samples - t->wait_samples;
        if (expected > got + 1 && (expected - got) * 10 >= expected)
            __atomic_fetch_add(&t->lost, expected - got, __ATOMIC_RELAXED);
        else
            t->sigblocked = 0;
    }
    /* The collector's descriptor: closed there now from the thread's own
     * end; at the end of measurement (maybe a signal handler, which must
     * not wait for the collector) by its sampler thread, which closes the
     * ended threads' at its next pass. */
    if (t->outside == OUTSIDE_HELD && t->perf_fd >= 0 && !at_stop)
        ask_outside(OUT_CLOSE, t->index);
    if (outside)
        tid_set(t->tid, -1);
    stop_source(t);
    t->end_ns = ps_wallclock_ns();
    if (recycle) {
        recycle_table(t);
        /* kept, in memory of its size: the copy published before the
         * live tree is unmapped (the exit writer may read t->cct) */
        ps_cct_t *live = t->cct, *kept = ps_cct_retire(live);
        if (kept != live) {
            __atomic_store_n(&t->cct, kept, __ATOMIC_RELEASE);
            ps_cct_free(live);
        }
    }
}

/* From the thread itself at its end (its table is then recycled: no signal
 * can come for it any more), or from the exiting thread for the others;
 * the lock keeps the REAL sampler off the fd being closed. */
void ps_sampler_thread_end(ps_sthread_t *t)
{
    /* a record of a measurement ended since (ps_sampler_reset): its slot
     * may be another thread's now */
    if (!t || __atomic_load_n(&t->tid, __ATOMIC_RELAXED) != (pid_t)syscall(SYS_gettid))
        return;
    /* The asynchronous signals held back (the kernel's mask directly,
     * ps_hold_async_signals): a program handler calling exit() here would
     * write the reports while this thread's tree is being replaced, or wait
     * for the lock this thread holds.  Faults and SIGPROF are not held. */
    sigset_t old;
    int held = ps_hold_async_signals(&old);
    ps_lock_take(&real_lock);
    end_thread(t, t->tid == (pid_t)syscall(SYS_gettid), 0);
    ps_lock_give(&real_lock);
    if (held)
        ps_release_signals(&old);
}

/* Threads running before sampling starts - started by the constructors of
 * shared libraries, which run before ours - get their sources here, opened
 * for their tids.  They are never seen ending (they were not started
 * through our pthread_create hook): they are ended with the process.
 * Their trees are never warmed (ps_cct_thread_warm must run in the thread
 * itself, outside the handler, and no hook runs in them): their samples
 * are flat only, their call paths counted lost (cct.c). */
static void adopt_running_threads(pid_t self)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        ps_cct_t *cct = callpath ? ps_cct_new() : NULL;
        ps_lock_take(&real_lock);
        add_thread(tid, 1, cct);
        ps_lock_give(&real_lock);
    }
    closedir(d);
}

/* A thread that /proc shows running (or runnable): the time it spent
 * runnable but waiting for a CPU since the last look (the run-queue wait
 * of /proc/self/task/TID/schedstat), where its own task clock cannot
 * sample it, is charged in whole periods to the PC it was last sampled
 * at - where a preempted thread resumes. */
static void sample_waiting(ps_sthread_t *t, long long period_ns)
{
    char path[64], buf[128];
    task_file(path, sizeof path, t->tid, "schedstat");
    unsigned long long run = 0, wait = 0;
    if (ps_read_file(path, buf, sizeof buf) <= 0 || sscanf(buf, "%llu %llu", &run, &wait) != 2)
        return;
    unsigned long long before = t->last_count;
    t->last_count = wait;
    int was = t->was_running;
    t->was_running = 1;
    if (!was || wait <= before)
        return;
    t->wait_ns += (long long)(wait - before);
    unsigned long long pc = __atomic_load_n(&t->last_pc, __ATOMIC_RELAXED);
    for (; t->wait_ns >= period_ns; t->wait_ns -= period_ns)
        if (pc && record(t, pc)) {
            __atomic_fetch_add(&t->wait_samples, 1, __ATOMIC_RELAXED);
            if (callpath && t->cct) /* where it was last sampled, in its context */
                ps_cct_again(t->cct);
            else if (callpath)
                __atomic_fetch_add(&t->cp_lost, 1, __ATOMIC_RELAXED);
        }
}

/* fd: the thread's /proc/.../syscall. */
static void sample_blocked(ps_sthread_t *t, int fd, pid_t pid, int check_mask, long long period_ns)
{
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (strncmp(buf, "running", 7) == 0) {
        /* Twice in a row (100 ms apart), as pthread_create and others
         * block every signal for a moment. */
        if (check_mask && !t->sigblocked)
            t->mask_seen = blocks_sampling_signal(t->tid) ? t->mask_seen + 1 : 0;
        if (t->mask_seen >= 2)
            t->sigblocked = 1;
        if (!real_signals) { /* its own task clock samples it */
            sample_waiting(t, period_ns);
            return;
        }
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = SIGPROF;
        si.si_code = SI_QUEUE;
        si.si_pid = pid;
        si.si_uid = getuid();
        si.si_value.sival_int = SIGVAL(t->index);
        syscall(SYS_rt_tgsigqueueinfo, pid, t->tid, SIGPROF, &si);
        return;
    }
    /* "nr args... sp pc" (in a system call) or "-1 sp pc": the user PC last. */
    t->was_running = 0;
    char *last = strrchr(buf, ' ');
    unsigned long long pc = last ? strtoull(last + 1, NULL, 16) : 0;
    if (last && record(t, pc)) {
        __atomic_fetch_add(&t->proc_samples, 1, __ATOMIC_RELAXED);
        if (callpath && t->cct) /* not interrupted: its PC alone, under a "blocked" node */
            ps_cct_blocked(t->cct, pc);
        else if (callpath)
            __atomic_fetch_add(&t->cp_lost, 1, __ATOMIC_RELAXED);
    }
}

/* ITIMER_REAL.  A thread that may be in a blocking system call is never
 * signalled: a signal arriving there cuts nanosleep, poll, read ... short
 * with EINTR (SA_RESTART does not restart the sleeps), and a sampler that
 * looks first ("running" in /proc) and signals after always leaves a
 * window in which the thread enters one.  So:
 *   - time spent running in user mode is sampled by the thread's own
 *     perf_event task clock with exclude_kernel: its overflow is only
 *     taken when the clock's hrtimer interrupts the thread in user mode,
 *     and the signal is delivered on the return to user mode from that
 *     very interrupt, before the thread can enter any system call;
 *   - time spent blocked (sleeping in the kernel) is sampled here, every
 *     period, from /proc/self/task/TID/syscall (the user PC the system
 *     call returns to), without a signal.
 * Time a running thread spends waiting for a CPU is taken from its
 * run-queue wait in /proc and charged to the PC the thread was last
 * sampled at, where a preempted thread resumes (sample_waiting); its
 * time running in the kernel is not sampled.  Without perf_event (real_signals), the
 * running threads are signalled from here as before, and the report says
 * that a system call can then be interrupted.
 * The thread exists only from the program's main (ps_sampler_at_main) and
 * steps aside around unshare and setns, which need a single thread.
 * Outside (no room above the descriptor limit), it runs in the collector
 * instead, samples from the program's main too (real_wanted), opens
 * /proc/PID/task/TID/syscall for each look (a descriptor held per thread
 * would take the room the collector keeps for the task clocks), and keeps
 * the task clocks it holds as the program's threads and state say. */
static void *real_sampler(void *arg)
{
    (void)arg;
    __atomic_store_n(&real_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not for this thread */
    pid_t pid = sampling_for ? sampling_for : getpid();
    int here = sampling_for != 0, was_on = -1;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long long period_ns = cfg.threshold * 1000;
    long long check_every = period_ns > 0 ? 100000000 / period_ns + 1 : 1; /* masks: every 100 ms */
    for (long long pass = 0; !real_stop; pass++) {
        next.tv_nsec += period_ns % 1000000000;
        next.tv_sec += period_ns / 1000000000 + next.tv_nsec / 1000000000;
        next.tv_nsec %= 1000000000;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        if (real_stop)
            break;
        if (here) {
            /* the program may hold the lock when it dies: the pass is
             * skipped then, and the collector can still stop this thread */
            if (!ps_lock_take_bounded(&real_lock))
                continue;
            outside_sweep();
            if (!active) { /* measurement over: every task clock closed (none is live) */
                ps_lock_give(&real_lock);
                break;
            }
            outside_open_pending(); /* a followed child's, started before its collector */
            if (sources_on() != was_on) { /* paused around an exec, or taken back after it failed */
                was_on = sources_on();
                outside_switch();
            }
        } else
            ps_lock_take(&real_lock);
        int n = sources_on() && (!here || real_wanted) ? threads_now() : 0;
        for (int i = 0; i < n; i++) {
            ps_sthread_t *t = thread_at(i);
            if (!t || !__atomic_load_n(&t->live, __ATOMIC_ACQUIRE))
                continue;
            if (!here) {
                if (t->syscall_fd >= 0)
                    sample_blocked(t, t->syscall_fd, pid, pass % check_every == 0, period_ns);
                continue;
            }
            char path[64];
            task_file(path, sizeof path, t->tid, "syscall");
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                sample_blocked(t, fd, pid, pass % check_every == 0, period_ns);
                close(fd);
            }
        }
        ps_lock_give(&real_lock);
    }
    return NULL;
}

/* The sampler thread in the collector, for the program outside_for. */
static pid_t outside_for;
static void *outside_sampler(void *arg)
{
    sampling_for = outside_for;
    return real_sampler(arg);
}

/* In the collector, first (writers.started): the sampler thread here when
 * the program holds no descriptor (outside). */
void ps_sampler_collector_started(void)
{
    if (source != SRC_REAL || !outside || !active)
        return;
    real_stop = 0;
    real_pid = getpid();
    outside_for = ps_self_pid();
    int started = pthread_create_unhooked(&real_thread, outside_sampler) == 0;
    __atomic_store_n(&real_running, started, __ATOMIC_RELEASE);
}

/* In the program, once its collector runs (the end of psrun's start): the
 * sources of the threads that started before it opened there, before the
 * program's constructors run.  Without a collector the program holds them
 * after all, as with room above the limit. */
static void outside_start(void)
{
    ps_lock_take(&real_lock);
    if (ask_outside(OUT_OPEN_PENDING, 0)) {
        outside = 0;
        ps_strlcpy(sampler_note, delivery_note, sizeof sampler_note);
        for (int i = 0, n = threads_now(); i < n; i++) {
            ps_sthread_t *t = thread_at(i);
            char why[256];
            if (!t || !__atomic_load_n(&t->live, __ATOMIC_ACQUIRE) || t->failed || t->perf_fd >= 0)
                continue;
            ps_fd_window_enter();
            if (start_source(t, why, sizeof why))
                t->failed = 1;
            ps_fd_window_leave();
        }
    }
    ps_lock_give(&real_lock);
}

/* Under real_lock or before any thread can race. */
static void real_start(void)
{
    if (outside) /* the collector runs it (ps_sampler_collector_started) */
        return;
    if (source != SRC_REAL || !active || getpid() != sampler_pid || (real_running && real_pid == sampler_pid))
        return;
    real_stop = 0;
    real_pid = sampler_pid;
    real_running = pthread_create_unhooked(&real_thread, real_sampler) == 0;
}

/* The sampler thread exists here (not in a child forked without it). */
static int real_here(void) { return __atomic_load_n(&real_running, __ATOMIC_ACQUIRE) && real_pid == getpid(); }

static void real_join(void)
{
    if (!real_here())
        return;
    real_stop = 1;
    pthread_join(real_thread, NULL);
    real_running = 0;
    /* pthread_join returns when the kernel clears the thread's id, before
     * the thread has left the thread group, and until then unshare and
     * setns still see two threads: wait for it to be gone (at most 1 s) */
    pid_t tid = __atomic_load_n(&real_tid, __ATOMIC_ACQUIRE);
    struct timespec brief = {0, 20000};
    int saved = errno;
    for (int k = 0; tid > 0 && k < 50000 && syscall(SYS_tgkill, getpid(), tid, 0) == 0; k++)
        nanosleep(&brief, NULL);
    errno = saved;
}

void ps_sampler_at_main(void)
{
    if (source != SRC_REAL || getpid() != sampler_pid)
        return;
    real_wanted = 1;
    real_start();
}

/* unshare(CLONE_NEWUSER), and CLONE_NEWNS or CLONE_FS, and setns into
 * such namespaces, need a process with one thread: the sampler thread is
 * stopped around the call and started again after it. */
/* The sampler thread stopped (if it runs here), then again after. */
static int real_step_aside(void)
{
    if (!real_here())
        return 0;
    real_join();
    return 1;
}

static void real_step_back(int stopped)
{
    if (stopped) {
        int saved = errno;
        real_start();
        errno = saved;
    }
}

PS_API int unshare(int flags)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "unshare");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int stopped = real_step_aside();
    int rc = real(flags);
    real_step_back(stopped);
    return rc;
}

PS_API int setns(int fd, int nstype)
{
    static int (*real)(int, int);
    if (!real)
        real = (int (*)(int, int))dlsym(RTLD_NEXT, "setns");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int stopped = real_step_aside();
    int rc = real(fd, nstype);
    real_step_back(stopped);
    return rc;
}

/* Traced now (TracerPid in /proc/self/status). */
static int traced(void)
{
    char buf[2048];
    if (ps_read_file("/proc/self/status", buf, sizeof buf) <= 0)
        return 0;
    const char *p = strstr(buf, "\nTracerPid:");
    return p && atoi(p + 11) != 0;
}

/* Linux 5.19 on queues a sample's SIGTRAP for a thread that blocks it
 * (TRAP_PERF_FLAG_ASYNC); 5.13 to 5.18 force it, and the thread dies of it. */
static int sigtrap_queues_when_blocked(char *release, size_t len)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
        return 0;
    ps_strlcpy(release, u.release, len);
    return major > 5 || (major == 5 && minor >= 19);
}

/* How perf_event sources deliver their samples (perf_sig), once: SIGTRAP
 * where the kernel takes attr.sigtrap for this event and queues it for a
 * thread that blocks it, unless the process is traced (a debugger stops at
 * every signal, breakpoint-like ones above all) or
 * PSUITE_SAMPLE_SIGNAL=sigprof asks for the F_SETSIG route. */
static void choose_delivery(void)
{
    perf_sig = SIGPROF;
    const char *want = getenv("PSUITE_SAMPLE_SIGNAL");
    if (want && *want && strcmp(want, "sigtrap") != 0) {
        if (strcmp(want, "sigprof") != 0)
            ps_message("PSUITE_SAMPLE_SIGNAL must be sigtrap or sigprof (not \"%.40s\"): SIGPROF used", want);
        ps_strlcpy(delivery_note, "samples delivered by SIGPROF (F_SETSIG), as PSUITE_SAMPLE_SIGNAL asks",
                   sizeof delivery_note);
        return;
    }
    if (traced()) {
        ps_note("the process is traced: samples are delivered by SIGPROF, not SIGTRAP (the debugger would stop "
                "at each one)");
        ps_strlcpy(delivery_note, "samples delivered by SIGPROF (F_SETSIG): the process was traced",
                   sizeof delivery_note);
        return;
    }
    char release[65] = "";
    if (!sigtrap_queues_when_blocked(release, sizeof release)) {
        snprintf(delivery_note, sizeof delivery_note,
                 "samples delivered by SIGPROF (F_SETSIG): perf_event sigtrap would kill a thread that blocks "
                 "SIGTRAP before Linux 5.19 (this is %.40s)", release);
        return;
    }
    struct perf_event_attr a;
    perf_sig = SIGTRAP;
    fill_attr(&a, 0);
    perf_sig = SIGPROF;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        a.sigtrap = a.remove_on_exec = 0;
        a.sig_data = 0;
        int plain = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (plain >= 0) { /* perf_event works, sigtrap does not (before 5.13: EINVAL) */
            close(plain);
            snprintf(delivery_note, sizeof delivery_note,
                     "samples delivered by SIGPROF (F_SETSIG): the kernel refuses perf_event sigtrap (%s)",
                     strerror(err));
        }
        return;
    }
    close(fd);
    perf_sig = SIGTRAP;
    ps_strlcpy(delivery_note, "samples delivered by SIGTRAP (perf_event sigtrap)", sizeof delivery_note);
}

/* The pthread_create hook's view of a thread's state: an opaque pointer. */
static void *hook_begin(void) { return ps_sampler_thread_begin(); }
static void hook_end(void *t) { ps_sampler_thread_end(t); }

size_t ps_sampler_table_bytes(void) { return sizeof(ps_sthread_t) * THREAD_CHUNK; }

int ps_sampler_init(const ps_profcfg_t *config, char *why, size_t why_len)
{
    cfg = *config;
    const char *name = cfg.kind == PS_PROF_ITIMER ? "task-clock" : cfg.event;
    char lwhy[192];
    if (ps_perf_lookup(name, &perf_type, &perf_config, lwhy, sizeof lwhy) != PS_EVENT_COUNTED) {
        if (cfg.kind == PS_PROF_EVENT) {
            snprintf(why, why_len, "cannot sample on %s: %s", cfg.event, lwhy);
            return PS_HWPC_ENOEVENT;
        }
    }
    source = cfg.kind == PS_PROF_ITIMER && cfg.timer == PS_TIMER_REAL ? SRC_REAL : SRC_PERF;
    if (source == SRC_PERF && cfg.kind == PS_PROF_ITIMER && ps_fd_limit_tight()) {
        /* Every descriptor psuite held would be one the program could have
         * had (ulimit -n 16 sets the hard limit too): per-thread POSIX
         * CPU-time timers, which take none. */
        source = SRC_CPUTIMER;
        ps_strlcpy(sampler_note, cfg.timer == PS_TIMER_VIRTUAL
                   ? "no room above the descriptor limit: ITIMER_VIRTUAL sampled as CPU time (user and system) by "
                     "POSIX CPU-time timers (no descriptor), limited to the kernel tick"
                   : "no room above the descriptor limit: POSIX CPU-time timers used (no descriptor), limited to the "
                     "kernel tick", sizeof sampler_note);
    }
    if (!source_chosen) {
        choose_delivery();
        source_chosen = 1;
    }
    callpath = 0;
    if (cfg.callpath > 0) {
        char note[512];
        ps_cct_init(cfg.callpath);
        ps_unwind_init(note, sizeof note);
        ps_modules_refresh(); /* the unwinder's view of the modules in the handler (unwind.c) */
        const char *delivery = source == SRC_CPUTIMER ? "" : delivery_note; /* timers signal SIGPROF */
        const char *sep = *delivery ? "; " : "";
        if (*note) /* a warning: said even with -q */
            ps_message("call paths: up to %d frames per sample, unwound with %s (%s)%s%s", cfg.callpath,
                       ps_unwind_name(), note, sep, delivery);
        else
            ps_note("call paths: up to %d frames per sample, unwound with %s%s%s", cfg.callpath, ps_unwind_name(),
                    sep, delivery);
        callpath = cfg.callpath;
    }
    /* Check the source once here, so a failure is one message, not one per thread. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    /* The asynchronous signals wait while the handler runs: a program
     * handler that interrupted it mid-unwind and siglongjmp'd away would
     * leave the tree and the unwinder marked busy for good.  The faults stay
     * deliverable; the program's own handlers and mask are untouched. */
    sigfillset(&sa.sa_mask);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        sigdelset(&sa.sa_mask, faults[i]);
    /* SIGPROF stays psuite's whichever way perf_event delivers: a thread
     * may fall back to timers, and the program's SIGPROF keeps one
     * behaviour (its handler gets its own signals, signals.c). */
    if (ps_signals_take(SIGPROF, &sa)) {
        snprintf(why, why_len, "cannot install the SIGPROF handler: %s", strerror(errno));
        return PS_HWPC_EBACKEND;
    }
    if (perf_sig == SIGTRAP && source != SRC_CPUTIMER && ps_signals_take(SIGTRAP, &sa)) {
        perf_sig = SIGPROF;
        snprintf(delivery_note, sizeof delivery_note,
                 "samples delivered by SIGPROF (F_SETSIG): SIGTRAP's handler could not be installed (%s)",
                 strerror(errno));
    }
    /* Under psrun (starting: a collector follows) with SIGTRAP delivery:
     * see `outside`. */
    outside = source == SRC_REAL && starting && perf_sig == SIGTRAP && ps_fd_limit_tight();
    if (outside)
        ps_strlcpy(sampler_note, "no room above the descriptor limit: the collector process holds the sampling "
                   "descriptors (none in the program)", sizeof sampler_note);
    active = 1;
    sampler_pid = getpid();
    started_ns = ps_wallclock_ns();
    ps_threads_hook(hook_begin, hook_end);
    pid_t self = (pid_t)syscall(SYS_gettid);
    ps_sthread_t *main_thread = ps_sampler_thread_begin();
    ps_threads_adopt(main_thread);
    if (main_thread && main_thread->failed && source == SRC_PERF) {
        if (cfg.kind == PS_PROF_EVENT) {
            snprintf(why, why_len, "cannot sample on %s here", cfg.event);
            active = 0;
            return PS_HWPC_ENOCOUNT;
        }
        /* No perf_event: per-thread CPU-time timers, limited to the tick. */
        source = SRC_CPUTIMER;
        main_thread->failed = start_source(main_thread, why, why_len) != 0;
        ps_strlcpy(sampler_note, "perf_event unavailable: POSIX CPU-time timers used, limited to the kernel tick",
                   sizeof sampler_note);
        if (cfg.timer == PS_TIMER_VIRTUAL)
            ps_strlcpy(sampler_note, "perf_event unavailable: ITIMER_VIRTUAL sampled as CPU time (user and system), "
                       "limited to the kernel tick", sizeof sampler_note);
    } else if (main_thread && main_thread->failed && source == SRC_REAL) {
        /* No perf_event: the sampler thread signals the running threads. */
        real_signals = 1;
        main_thread->failed = start_source(main_thread, why, why_len) != 0;
        ps_strlcpy(sampler_note, "perf_event unavailable: running threads signalled by the sampler thread, which "
                   "can interrupt a system call starting at that moment (EINTR)", sizeof sampler_note);
    }
    if (main_thread && main_thread->failed) {
        active = 0;
        return PS_HWPC_EBACKEND;
    }
    adopt_running_threads(self);
    if (source == SRC_PERF || (source == SRC_REAL && !real_signals))
        ps_append_part(sampler_note, sizeof sampler_note, delivery_note);
    /* ITIMER_REAL's sampler thread starts at main (ps_sampler_at_main, from
     * preload.c's main wrapper): none of the program's constructors runs
     * with an extra thread */
    return PS_HWPC_OK;
}

void ps_sampler_stop(void)
{
    if (!source)
        return;
    if (source == SRC_REAL && !real_stop && real_here() && !pthread_equal(pthread_self(), real_thread))
        real_join();
    active = 0;
    int held = ps_lock_take_bounded(&real_lock); /* this may be a signal handler */
    int n = ps_sampler_nthreads();
    for (int i = 0; i < n; i++)
        end_thread(thread_at(i), 0, 1);
    if (held)
        ps_lock_give(&real_lock);
}

/* In the collector (collector.c), the process gone without stopping: its
 * live threads ended now, without touching their sources (they went with
 * the process).  Their CPU times went with it too: the process's CPU time
 * less what the ended threads had is shared out by their samples. */
void ps_sampler_stop_dead(long long user_ns, long long sys_ns)
{
    if (!source)
        return;
    active = 0;
    if (outside && real_here()) { /* its sampler thread stopped, and the room of its task clocks back */
        real_join();
        for (int i = 0, n = threads_now(); i < n; i++) {
            ps_sthread_t *t = thread_at(i);
            if (t && t->outside && t->perf_fd >= 0) {
                close(t->perf_fd);
                t->perf_fd = -1;
            }
        }
    }
    int n = ps_sampler_nthreads(), nlive = 0;
    unsigned long long live_samples = 0;
    long long left = user_ns + sys_ns;
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (!t)
            continue;
        if (__atomic_load_n(&t->live, __ATOMIC_ACQUIRE)) {
            nlive++;
            live_samples += t->samples;
        } else
            left -= t->cpu_ns;
    }
    if (left < 0)
        left = 0;
    double user_share = user_ns + sys_ns > 0 ? (double)user_ns / (double)(user_ns + sys_ns) : 1.0;
    long long now = ps_wallclock_ns();
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (!t || !__atomic_load_n(&t->live, __ATOMIC_ACQUIRE))
            continue;
        __atomic_store_n(&t->live, 0, __ATOMIC_RELEASE);
        double part = live_samples ? (double)t->samples / (double)live_samples : 1.0 / nlive;
        t->cpu_ns = (long long)(left * part);
        t->user_ns = (long long)(t->cpu_ns * user_share);
        t->sys_ns = t->cpu_ns - t->user_ns;
        t->end_ns = now;
    }
}

/* In the collector, before writing after a kill: a thread whose table,
 * kept samples or tree is in memory the collector does not share (the
 * shared arena was full, shared.c) is written without them; their samples
 * are counted lost.  Returns how many; *paths_dropped, how many samples'
 * call paths. */
unsigned long long ps_sampler_drop_unshared(unsigned long long *paths_dropped)
{
    unsigned long long dropped = 0;
    *paths_dropped = 0;
    int n = ps_sampler_nthreads();
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (!t)
            continue;
        int table_gone = t->table && !ps_shared_contains(t->table);
        int kept_gone = t->kept && !ps_shared_contains(t->kept);
        if (table_gone || kept_gone) {
            dropped += t->samples;
            t->lost += t->samples;
            t->samples = 0;
            t->table = NULL;
            t->kept = NULL;
            t->nkept = 0;
            t->nused = 0;
        }
        if (t->cct && !ps_shared_contains(t->cct)) {
            *paths_dropped += t->samples;
            t->cp_lost += t->samples;
            t->cct = NULL;
        }
    }
    return dropped;
}

/* In the collector, at its start: the sampling descriptors it inherited
 * closed (the records untouched: they are the program's).  Sampling is the
 * program's; a copy held here would keep a source the program closed
 * sampling on. */
void ps_sampler_close_inherited(void)
{
    int n = ps_sampler_nthreads();
    for (int i = 0; i < n; i++) {
        const ps_sthread_t *t = thread_at(i);
        if (t && t->perf_fd >= 0 && !t->outside)
            close(t->perf_fd);
        if (t && t->syscall_fd >= 0)
            close(t->syscall_fd);
    }
}

/* Under real_lock: the live threads' sources on or off as sources_on()
 * says (timers armed anew from a whole period). */
static void switch_sources(void)
{
    int on = sources_on();
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (on) {
        its.it_interval.tv_sec = cfg.threshold / 1000000;
        its.it_interval.tv_nsec = (cfg.threshold % 1000000) * 1000;
        its.it_value = its.it_interval;
    }
    int n = ps_sampler_nthreads();
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        if (!__atomic_load_n(&t->live, __ATOMIC_ACQUIRE))
            continue;
        if (!t->outside && perf_fd_ours(t))
            ioctl(t->perf_fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
        if (t->has_timer)
            timer_settime((timer_t)t->timer, 0, &its, NULL);
    }
}

/* Before an exec (on = 1): no more samples and no more signals from the
 * sources - a SIGPROF still pending when the exec succeeds would meet the
 * new image's default action and kill it - but the sources are kept: if
 * the exec fails (on = 0) sampling goes on from them.  When the exec
 * succeeds the image goes with its timers and CLOEXEC perf descriptors,
 * and the ITIMER_REAL sampler thread with the other threads (paused, it
 * signals no one meanwhile). */
void ps_sampler_pause(int on)
{
    if (!source || !active)
        return;
    int held = ps_lock_take_bounded(&real_lock); /* the REAL sampler signals nobody after this */
    paused = on;
    switch_sources();
    /* Before an exec, in the thread calling it, its sources disabled: a
     * sample still pending because the thread blocks the signal would
     * outlive the exec and meet the new image's default action (SIGTRAP's
     * a core dump) when it unblocks it.  The program's own stay pending. */
    if (on) {
        ps_signals_unpend_samples(SIGTRAP);
        ps_signals_unpend_samples(SIGPROF);
    }
    if (held)
        ps_lock_give(&real_lock);
}

/* The process's time while suspended (wall clock, user and system CPU),
 * and since when the current suspension lasts: what the report's times
 * leave out, so that they cover what was sampled. */
static long long susp_wall_ns, susp_user_ns, susp_sys_ns;
static long long since_wall_ns, since_user_ns, since_sys_ns;

static void process_times(long long *wall, long long *user, long long *sys)
{
    double u, s;
    ps_process_cpu(&u, &s); /* the measured process's, also in its collector */
    *wall = ps_wallclock_ns();
    *user = (long long)(u * 1e9);
    *sys = (long long)(s * 1e9);
}

void ps_sampler_suspended_time(long long *wall_ns, long long *user_ns, long long *sys_ns)
{
    *wall_ns = susp_wall_ns;
    *user_ns = susp_user_ns;
    *sys_ns = susp_sys_ns;
    if (__atomic_load_n(&suspended, __ATOMIC_RELAXED)) { /* up to now */
        long long w, u, y;
        process_times(&w, &u, &y);
        *wall_ns += w - since_wall_ns;
        *user_ns += u - since_user_ns;
        *sys_ns += y - since_sys_ns;
    }
}

/* ps_hwpc_suspend (on = 1) and ps_hwpc_start (0): every thread's source
 * off or on, so that a suspended program pays for no signal; a sample
 * already on its way finds `suspended` set and is dropped.  Before
 * ps_sampler_init, it says whether the sources start switched on.  Not in
 * a signal handler (it takes real_lock unbounded). */
void ps_sampler_suspend(int on)
{
    ps_lock_take(&real_lock);
    if (on != suspended) {
        long long w, u, y;
        process_times(&w, &u, &y);
        if (on) {
            since_wall_ns = w;
            since_user_ns = u;
            since_sys_ns = y;
        } else {
            susp_wall_ns += w - since_wall_ns;
            susp_user_ns += u - since_user_ns;
            susp_sys_ns += y - since_sys_ns;
        }
    }
    __atomic_store_n(&suspended, on, __ATOMIC_RELAXED);
    if (source && active) {
        switch_sources();
        if (outside && ps_collector_running())
            ask_outside(OUT_SWITCH, 0);
        /* ITIMER_REAL: the run-queue wait while suspended is not charged */
        for (int i = 0, n = ps_sampler_nthreads(); !on && i < n; i++)
            thread_at(i)->was_running = 0;
    }
    ps_lock_give(&real_lock);
}

int ps_sampler_nthreads(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    return n < PS_MAX_THREADS ? n : PS_MAX_THREADS;
}

const ps_sthread_t *ps_sampler_get(int i) { return i >= 0 && i < ps_sampler_nthreads() ? thread_at(i) : NULL; }

const ps_profcfg_t *ps_sampler_config(void) { return source ? &cfg : NULL; }

const char *ps_sampler_signal_name(void) { return sampling_signal() == SIGTRAP ? "SIGTRAP" : "SIGPROF"; }

int ps_sampler_active(void) { return source && active; }

int ps_sampler_callpath(void) { return source ? callpath : 0; }

long long ps_sampler_started_ns(void) { return started_ns; }

unsigned long ps_sampler_unsampled(void) { return unsampled; }

const char *ps_sampler_source(const char **note)
{
    if (note)
        *note = sampler_note;
    switch (source) {
    case SRC_PERF: return cfg.kind == PS_PROF_ITIMER ? "perf_event task-clock per thread" : "perf_event overflow per thread";
    case SRC_CPUTIMER: return "POSIX CPU-time timer per thread";
    case SRC_REAL:
        return real_signals ? "wall-clock sampler thread"
                            : "perf_event user-mode task-clock per thread while running, a sampler thread "
                              "reading /proc while blocked";
    default: return "";
    }
}

/* A larger block with the old one's contents (the old one given back):
 * realloc's job, in memory the collector shares (shared.c). */
static void *grow(void *old, size_t old_bytes, size_t new_bytes)
{
    void *p = ps_map(new_bytes);
    if (p && old) {
        memcpy(p, old, old_bytes);
        ps_unmap(old, old_bytes);
    }
    return p;
}

/* The index of (file, base) among the retired modules, added if new. */
static int retired_module(const char *file, unsigned long long base, const unsigned char *buildid, unsigned len)
{
    for (int i = 0; i < nrmods; i++)
        if (rmods[i].base == base && strcmp(rmods[i].file, file) == 0)
            return i;
    if (nrmods == rmods_cap) {
        int cap = rmods_cap ? 2 * rmods_cap : 16;
        retired_module_t *v = grow(rmods, sizeof *v * (size_t)rmods_cap, sizeof *v * (size_t)cap);
        if (!v)
            return -1;
        rmods = v;
        rmods_cap = cap;
    }
    if (strlen(file) >= sizeof rmods[nrmods].file)
        return -1;
    ps_strlcpy(rmods[nrmods].file, file, sizeof rmods[nrmods].file);
    rmods[nrmods].base = base;
    rmods[nrmods].lo = rmods[nrmods].hi = 0;
    rmods[nrmods].buildid_len = buildid && len <= PS_BUILDID_MAX ? len : 0;
    if (rmods[nrmods].buildid_len)
        memcpy(rmods[nrmods].buildid, buildid, len);
    __atomic_store_n(&nrmods, nrmods + 1, __ATOMIC_RELEASE);
    return nrmods - 1;
}

int ps_sampler_retired_add(const char *file, unsigned long long base, unsigned long long lo, unsigned long long hi,
                           const unsigned char *buildid, unsigned buildid_len)
{
    int module = retired_module(file, base, buildid, buildid_len);
    if (module >= 0) {
        retired_module_t *r = &rmods[module];
        if (!r->hi || lo < r->lo)
            r->lo = lo;
        if (hi > r->hi)
            r->hi = hi;
    }
    return module;
}

int ps_sampler_retired_span(int module, unsigned long long *lo, unsigned long long *hi)
{
    if (module < 0 || module >= nrmods || (ps_in_collector() && !ps_shared_contains(rmods)))
        return 0;
    *lo = rmods[module].lo;
    *hi = rmods[module].hi;
    return 1;
}

const char *ps_sampler_retired_module(int module, unsigned long long *base)
{
    if (module < 0 || module >= nrmods || (ps_in_collector() && !ps_shared_contains(rmods)))
        return NULL;
    *base = rmods[module].base;
    return rmods[module].file;
}

const unsigned char *ps_sampler_retired_buildid(int module, unsigned *len)
{
    *len = module >= 0 && module < nrmods && !(ps_in_collector() && !ps_shared_contains(rmods))
               ? rmods[module].buildid_len : 0;
    return *len ? rmods[module].buildid : NULL;
}

/* In a forked child: the parent's threads forgotten - their perf_event
 * descriptors closed here without touching the parent's events, their
 * tables unmapped - and nothing sampled (a child psrun -f does not follow). */
void ps_sampler_forget_after_fork(void)
{
    int n = ps_sampler_nthreads();
    ps_lock_reset(&real_lock);
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = thread_at(i);
        /* only descriptors still the parent's events: the program may
         * have closed them and opened its own under the same numbers */
        if (t->perf_fd >= 0 && !t->outside) { /* the collector's: a number that is not this process's */
            unmap_fd(t->perf_fd);
            if (perf_fd_ours(t))
                close(t->perf_fd);
        }
        if (t->syscall_fd >= 0 && ps_fd_ident(t->syscall_fd) == t->syscall_ident)
            close(t->syscall_fd);
        if (t->table)
            ps_unmap(t->table, TABLE_BYTES);
        ps_cct_free(t->cct); /* the parent's trees */
        memset(t, 0, sizeof *t);
    }
    for (int i = 0; i < nfree_tables; i++)
        ps_unmap(free_tables[i], TABLE_BYTES);
    nfree_tables = 0;
    if (tid_map) /* the parent's threads' */
        madvise(tid_map, sizeof *tid_map * TID_SLOTS, MADV_DONTNEED);
    keep_area = NULL; /* the parent's kept samples: not the child's (the pages stay, untouched) */
    keep_used = keep_cap = 0;
    nthreads = 0;
    unsampled = 0;
    real_stop = 0;
    real_running = 0;
    paused = 0;
    suspended = 0;
    susp_wall_ns = susp_user_ns = susp_sys_ns = 0;
    active = 0;
}

/* After ps_sampler_stop, before sampling again in the same process (the C
 * API's ps_hwpc_init after ps_hwpc_shutdown): the ended threads' records
 * forgotten as in a forked child; the sources are closed already. */
void ps_sampler_reset(void) { ps_sampler_forget_after_fork(); }

/* In a forked child psrun -f follows: the parent's threads forgotten, and
 * the child, whose only thread is the one that forked, sampled. */
void ps_sampler_restart_after_fork(void)
{
    ps_sampler_forget_after_fork();
    active = 1;
    sampler_pid = getpid();
    started_ns = ps_wallclock_ns();
    ps_threads_adopt(ps_sampler_thread_begin());
    if (real_wanted) /* else main's wrapper starts it */
        real_start();
}
