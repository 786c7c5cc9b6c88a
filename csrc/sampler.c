/* sampler.c - statistical profiling.  Every thread gets its own sampling
 * source, so each sample is charged to the thread it interrupted:
 *   - CPU time (ITIMER_PROF, ITIMER_VIRTUAL) and event overflow: a
 *     perf_event counter per thread whose overflow signal is routed to
 *     that thread (F_SETOWN_EX); task-clock is hrtimer-driven, so periods
 *     below the scheduler tick are honoured.  Without perf_event, a POSIX
 *     per-thread CPU-time timer (tick-limited) is used instead.
 *   - wall time (ITIMER_REAL): a sampler thread wakes every period; a
 *     running thread is signalled, a blocked one is sampled from
 *     /proc/self/task/TID/syscall without being interrupted, so the
 *     program's sleeps and reads are never cut short.
 * The signal handler only stores the interrupted PC into the thread's
 * preallocated table (lock-free, no allocation); what does not fit is
 * counted as lost. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

/* Timer and sampler signals carry (SIGVAL_TAG << 16) | thread index, so the
 * handler knows the signal is ours and whose it is without thread-local
 * storage (TLS in a dlopen'd library is not async-signal-safe). */
#define SIGVAL_TAG 0x7073
#define SIGVAL(index) ((SIGVAL_TAG << 16) | (index))
#define FD_MAP 65536
#define MAX_PROBE 64

enum { SRC_PERF = 1, SRC_CPUTIMER, SRC_REAL };

static ps_profcfg_t cfg;
static int source;
static volatile int active;                     /* samples are recorded */
static volatile int paused;                     /* around an exec: sources held, samples ignored */
static ps_sthread_t threads[PS_MAX_THREADS];
static int nthreads;                            /* slots handed out */
static unsigned long unsampled;                 /* threads beyond PS_MAX_THREADS */
static unsigned perf_type;
static unsigned long long perf_config;
static pthread_mutex_t real_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t real_thread;
static volatile int real_stop;
static long long started_ns;
static char sampler_note[256];
static int fd_thread[FD_MAP]; /* perf fd -> thread index + 1 (overflow signals carry the fd) */

static void record(ps_sthread_t *t, unsigned long long pc)
{
    if (!t->table || !pc) {
        __atomic_fetch_add(&t->lost, 1, __ATOMIC_RELAXED);
        return;
    }
    unsigned long long h = (pc * 0x9E3779B97F4A7C15ull) >> (64 - PS_SAMPLE_SLOTS_LOG2);
    for (unsigned probe = 0; probe < MAX_PROBE; probe++) {
        ps_slot_t *s = &t->table[(h + probe) & (PS_SAMPLE_SLOTS - 1)];
        unsigned long long key = __atomic_load_n(&s->pc, __ATOMIC_ACQUIRE);
        if (key == 0) {
            unsigned long long expected = 0;
            if (__atomic_compare_exchange_n(&s->pc, &expected, pc, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                key = pc;
            else
                key = expected;
        }
        if (key == pc) {
            __atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&t->samples, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_fetch_add(&t->lost, 1, __ATOMIC_RELAXED);
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

/* Async-signal-safe: no locks, no allocation, atomics only; errno kept. */
static void on_sample(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    int index = -1, ours = 0;
    if ((si->si_code == SI_TIMER || si->si_code == SI_QUEUE) && (si->si_value.sival_int >> 16) == SIGVAL_TAG) {
        ours = 1;
        index = si->si_value.sival_int & 0xffff;
    } else if (si->si_code >= POLL_IN && si->si_code <= POLL_HUP) { /* perf_event overflow (F_SETSIG) */
        ours = 1;
        if (si->si_fd >= 0 && si->si_fd < FD_MAP)
            index = __atomic_load_n(&fd_thread[si->si_fd], __ATOMIC_ACQUIRE) - 1;
    }
    if (!ours)
        ps_signals_forward(sig, si, ucv);
    else if (active && !paused && index >= 0 && index < PS_MAX_THREADS &&
             __atomic_load_n(&threads[index].live, __ATOMIC_ACQUIRE))
        record(&threads[index], interrupted_pc(ucv));
    errno = saved;
}

static int start_source(ps_sthread_t *t, char *why, size_t why_len)
{
    if (source == SRC_PERF) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = perf_type;
        a.config = perf_config;
        a.sample_period = (unsigned long long)cfg.threshold * (cfg.kind == PS_PROF_ITIMER ? 1000 : 1);
        a.disabled = 1;
        a.wakeup_events = 1;
        /* ITIMER_PROF counts system time too (samples then land on the
         * user instruction after the system call), ITIMER_VIRTUAL does not. */
        a.exclude_kernel = cfg.kind == PS_PROF_ITIMER ? cfg.timer == PS_TIMER_VIRTUAL : !(cfg.domain & PS_DOM_KERNEL);
        a.exclude_user = cfg.kind == PS_PROF_EVENT && !(cfg.domain & PS_DOM_USER);
        a.exclude_hv = 1;
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            snprintf(why, why_len, "perf_event_open: %s", strerror(errno));
            return -1;
        }
        struct f_owner_ex owner = {F_OWNER_TID, t->tid};
        if (fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, SIGPROF) || fcntl(fd, F_SETOWN_EX, &owner) ||
            ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
            snprintf(why, why_len, "perf_event signal routing: %s", strerror(errno));
            close(fd);
            return -1;
        }
        t->perf_fd = fd;
        if (fd < FD_MAP)
            __atomic_store_n(&fd_thread[fd], t->index + 1, __ATOMIC_RELEASE);
    } else if (source == SRC_CPUTIMER) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGPROF;
        sev.sigev_value.sival_int = SIGVAL(t->index);
        sev._sigev_un._tid = t->tid;
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer)) {
            snprintf(why, why_len, "timer_create: %s", strerror(errno));
            return -1;
        }
        struct itimerspec its;
        its.it_interval.tv_sec = cfg.threshold / 1000000;
        its.it_interval.tv_nsec = (cfg.threshold % 1000000) * 1000;
        its.it_value = its.it_interval;
        timer_settime(t->timer, 0, &its, NULL);
        t->has_timer = 1;
    } else if (source == SRC_REAL) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)t->tid);
        t->syscall_fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    return 0;
}

static void stop_source(ps_sthread_t *t)
{
    if (t->perf_fd >= 0) {
        ioctl(t->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (t->perf_fd < FD_MAP)
            __atomic_store_n(&fd_thread[t->perf_fd], 0, __ATOMIC_RELEASE);
        close(t->perf_fd);
        t->perf_fd = -1;
    }
    if (t->has_timer) {
        timer_delete(t->timer);
        t->has_timer = 0;
    }
    if (t->syscall_fd >= 0) {
        close(t->syscall_fd);
        t->syscall_fd = -1;
    }
}

ps_sthread_t *ps_sampler_thread_begin(void)
{
    if (!active)
        return NULL;
    int idx = __atomic_fetch_add(&nthreads, 1, __ATOMIC_ACQ_REL);
    if (idx >= PS_MAX_THREADS) {
        __atomic_fetch_add(&unsampled, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    ps_sthread_t *t = &threads[idx];
    t->index = idx;
    t->tid = (pid_t)syscall(SYS_gettid);
    t->perf_fd = t->syscall_fd = -1;
    t->start_ns = ps_wallclock_ns();
    void *table = mmap(NULL, sizeof(ps_slot_t) * PS_SAMPLE_SLOTS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    t->table = table == MAP_FAILED ? NULL : table;
    char why[256];
    pthread_mutex_lock(&real_lock);
    if (start_source(t, why, sizeof why))
        t->failed = 1;
    __atomic_store_n(&t->live, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&real_lock);
    return t;
}

/* From the thread itself at its end, or from the exiting thread for the
 * others; the lock keeps the REAL sampler off the fd being closed. */
void ps_sampler_thread_end(ps_sthread_t *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&real_lock);
    if (__atomic_load_n(&t->live, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&t->live, 0, __ATOMIC_RELEASE);
        t->cpu_ns = ps_tid_cpu_ns(t->tid);
        ps_tid_times(t->tid, t->cpu_ns, &t->user_ns, &t->sys_ns);
        stop_source(t);
        t->end_ns = ps_wallclock_ns();
    }
    pthread_mutex_unlock(&real_lock);
}

static void sample_blocked_or_signal(ps_sthread_t *t, pid_t pid)
{
    char buf[512];
    ssize_t n = pread(t->syscall_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (strncmp(buf, "running", 7) == 0) {
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
    char *last = strrchr(buf, ' ');
    if (last)
        record(t, strtoull(last + 1, NULL, 16));
}

static void *real_sampler(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not for this thread */
    pid_t pid = getpid();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long long period_ns = cfg.threshold * 1000;
    while (!real_stop) {
        next.tv_nsec += period_ns % 1000000000;
        next.tv_sec += period_ns / 1000000000 + next.tv_nsec / 1000000000;
        next.tv_nsec %= 1000000000;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        if (real_stop)
            break;
        pthread_mutex_lock(&real_lock);
        int n = paused ? 0 : __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
        for (int i = 0; i < n && i < PS_MAX_THREADS; i++)
            if (__atomic_load_n(&threads[i].live, __ATOMIC_ACQUIRE) && threads[i].syscall_fd >= 0)
                sample_blocked_or_signal(&threads[i], pid);
        pthread_mutex_unlock(&real_lock);
    }
    return NULL;
}

/* The pthread_create hook's view of a thread's state: an opaque pointer. */
static void *hook_begin(void) { return ps_sampler_thread_begin(); }
static void hook_end(void *t) { ps_sampler_thread_end(t); }

int ps_sampler_init(const ps_profcfg_t *config, char *why, size_t why_len)
{
    cfg = *config;
    if (cfg.kind == PS_PROF_ITIMER && cfg.timer == PS_TIMER_REAL)
        source = SRC_REAL;
    else {
        const char *name = cfg.kind == PS_PROF_ITIMER ? "task-clock" : cfg.event;
        char lwhy[192];
        if (ps_perf_lookup(name, &perf_type, &perf_config, lwhy, sizeof lwhy) != PS_EVENT_COUNTED) {
            if (cfg.kind == PS_PROF_EVENT) {
                snprintf(why, why_len, "cannot sample on %s: %s", cfg.event, lwhy);
                return PS_HWPC_ENOEVENT;
            }
        }
        source = SRC_PERF;
    }
    /* Check the source once here, so a failure is one message, not one per thread. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (ps_signals_take(SIGPROF, &sa)) {
        snprintf(why, why_len, "cannot install the SIGPROF handler: %s", strerror(errno));
        return PS_HWPC_EBACKEND;
    }
    active = 1;
    started_ns = ps_wallclock_ns();
    ps_threads_hook(hook_begin, hook_end);
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
    }
    if (main_thread && main_thread->failed) {
        active = 0;
        return PS_HWPC_EBACKEND;
    }
    if (source == SRC_REAL && pthread_create_unhooked(&real_thread, real_sampler)) {
        snprintf(why, why_len, "cannot start the ITIMER_REAL sampler thread");
        active = 0;
        return PS_HWPC_EBACKEND;
    }
    return PS_HWPC_OK;
}

void ps_sampler_stop(void)
{
    if (!source)
        return;
    active = 0;
    if (source == SRC_REAL && !real_stop) {
        real_stop = 1;
        pthread_join(real_thread, NULL);
    }
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < PS_MAX_THREADS; i++)
        ps_sampler_thread_end(&threads[i]);
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
    pthread_mutex_lock(&real_lock); /* the REAL sampler signals nobody after this */
    paused = on;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (!on) {
        its.it_interval.tv_sec = cfg.threshold / 1000000;
        its.it_interval.tv_nsec = (cfg.threshold % 1000000) * 1000;
        its.it_value = its.it_interval;
    }
    int n = ps_sampler_nthreads();
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = &threads[i];
        if (!__atomic_load_n(&t->live, __ATOMIC_ACQUIRE))
            continue;
        if (t->perf_fd >= 0)
            ioctl(t->perf_fd, on ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE, 0);
        if (t->has_timer)
            timer_settime(t->timer, 0, &its, NULL);
    }
    pthread_mutex_unlock(&real_lock);
}

int ps_sampler_nthreads(void)
{
    int n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
    return n < PS_MAX_THREADS ? n : PS_MAX_THREADS;
}

const ps_sthread_t *ps_sampler_get(int i) { return i >= 0 && i < ps_sampler_nthreads() ? &threads[i] : NULL; }

const ps_profcfg_t *ps_sampler_config(void) { return source ? &cfg : NULL; }

long long ps_sampler_started_ns(void) { return started_ns; }

unsigned long ps_sampler_unsampled(void) { return unsampled; }

const char *ps_sampler_source(const char **note)
{
    if (note)
        *note = sampler_note;
    switch (source) {
    case SRC_PERF: return cfg.kind == PS_PROF_ITIMER ? "perf_event task-clock per thread" : "perf_event overflow per thread";
    case SRC_CPUTIMER: return "POSIX CPU-time timer per thread";
    case SRC_REAL: return "wall-clock sampler thread";
    default: return "";
    }
}

/* In a child forked while sampling (psrun -f): forget the parent's
 * threads - their perf_event descriptors are closed here without touching
 * the parent's events, their tables unmapped - and sample the child, whose
 * only thread is the one that forked. */
void ps_sampler_restart_after_fork(void)
{
    int n = ps_sampler_nthreads();
    pthread_mutex_init(&real_lock, NULL);
    for (int i = 0; i < n; i++) {
        ps_sthread_t *t = &threads[i];
        if (t->perf_fd >= 0) {
            if (t->perf_fd < FD_MAP)
                fd_thread[t->perf_fd] = 0;
            close(t->perf_fd);
        }
        if (t->syscall_fd >= 0)
            close(t->syscall_fd);
        if (t->table)
            munmap(t->table, sizeof(ps_slot_t) * PS_SAMPLE_SLOTS);
        memset(t, 0, sizeof *t);
    }
    nthreads = 0;
    unsampled = 0;
    real_stop = 0;
    paused = 0;
    active = 1;
    started_ns = ps_wallclock_ns();
    ps_threads_adopt(ps_sampler_thread_begin());
    if (source == SRC_REAL && pthread_create_unhooked(&real_thread, real_sampler))
        active = 0;
}
