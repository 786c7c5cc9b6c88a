/* util.c - small helpers: bounded copies, messages to stderr, /proc reads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../common/quiet_write.h"

size_t ps_strlcpy(char *dst, const char *src, size_t size)
{
    size_t n = strlen(src);
    if (size) {
        size_t c = n < size - 1 ? n : size - 1;
        memcpy(dst, src, c);
        dst[c] = '\0';
    }
    return n;
}

int ps_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "1") == 0;
}

/* Notes are silenced by PSUITE_QUIET=1 (psrun -q) and, in the processes
 * psrun -f follows, by PSUITE_QUIET=reports (the parent said what is
 * counted; only their "report:" lines are left). */
int ps_quiet(void)
{
    const char *v = getenv("PSUITE_QUIET");
    return v && (strcmp(v, "1") == 0 || strcmp(v, "reports") == 0);
}

/* A note (not an error): a message unless quiet (psrun -q). */
void ps_note(const char *fmt, ...)
{
    if (ps_quiet())
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ps_message("%s", line);
}

static void write_no_sigpipe(int fd, const char *s, size_t n);

/* One line on stderr, prefixed "psrun:" under psrun and "pshwpc:" when the
 * API is linked into a program.  Written with a single write() so lines from
 * several processes do not interleave; never to stdout, never a SIGPIPE for
 * the program (a pipe nobody reads). */
void ps_message(const char *fmt, ...)
{
    char line[1024];
    const char *prefix = ps_env_flag("PSUITE_PRELOAD") ? "psrun: " : "pshwpc: ";
    size_t n = ps_strlcpy(line, prefix, sizeof line);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
    line[n++] = '\n';
    write_no_sigpipe(2, line, n);
}

int ps_read_file(const char *path, char *buf, size_t size)
{
    int fd = ps_open_anyway(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t r = read(fd, buf + got, size - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (int)got;
}

long long ps_read_ll(const char *path, long long dflt)
{
    char buf[64];
    if (ps_read_file(path, buf, sizeof buf) <= 0)
        return dflt;
    char *end;
    long long v = strtoll(buf, &end, 10);
    return end == buf ? dflt : v;
}

long long ps_tid_cpu_ns(int tid)
{
    /* The kernel's per-thread CPU clock id, as pthread_getcpuclockid builds it. */
    clockid_t id = (clockid_t)((~(unsigned)tid) << 3) | 6;
    struct timespec ts;
    if (clock_gettime(id, &ts))
        return -1;
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* text appended to dst after "; " (none when dst is empty), cut to fit;
 * async-signal-safe (snprintf's "%s%s" without stdio). */
void ps_append_part(char *dst, size_t cap, const char *text)
{
    size_t used = strlen(dst);
    if (!text || !*text || used + 1 >= cap)
        return;
    const char *parts[2] = {used ? "; " : "", text};
    for (int i = 0; i < 2; i++)
        for (const char *p = parts[i]; *p && used + 1 < cap; p++)
            dst[used++] = *p;
    dst[used] = '\0';
}

static unsigned long long parse_ull(const char **p)
{
    unsigned long long v = 0;
    while (**p >= '0' && **p <= '9')
        v = v * 10 + (unsigned)(*(*p)++ - '0');
    return v;
}

/* Split cpu_ns into user and system time as the thread's utime and stime
 * ticks do.  Async-signal-safe (no stdio): it runs at the end of
 * measurement, which may be a signal handler. */
void ps_tid_times(int tid, long long cpu_ns, long long *user_ns, long long *sys_ns)
{
    char path[64], buf[1024];
    ps_buf_t b;
    ps_buf_fixed(&b, path, sizeof path);
    ps_buf_str(&b, "/proc/self/task/");
    ps_buf_ll(&b, tid);
    ps_buf_str(&b, "/stat");
    int n = ps_read_file(path, buf, sizeof buf);
    const char *p = n > 0 ? strrchr(buf, ')') : NULL;
    unsigned long long ut = 0, st = 0;
    /* after "pid (comm)": state is field 3, utime 14, stime 15 (in ticks: the
     * split only); p ends on the blank before field 14 */
    for (int field = 3; p && field <= 14; field++)
        p = strchr(p + 1, ' ');
    int parsed = 0;
    if (p) {
        p++;
        ut = parse_ull(&p);
        if (*p == ' ') {
            p++;
            st = parse_ull(&p);
            parsed = 1;
        }
    }
    if (parsed && ut + st > 0 && cpu_ns > 0) {
        *user_ns = (long long)((double)cpu_ns * (double)ut / (double)(ut + st));
        *sys_ns = cpu_ns - *user_ns;
    } else {
        *user_ns = cpu_ns > 0 ? cpu_ns : 0;
        *sys_ns = 0;
    }
}

/* Bring every live thread's CPU time up to now.  The kernel adds a running
 * thread's time to its total only at a tick or a context switch, and
 * getrusage(RUSAGE_SELF) brings only the calling thread up to date: a thread
 * running on another CPU is short there by up to a tick (4 ms at HZ=250),
 * while a counter read or disabled at the same moment is exact.  Reading a
 * thread's CPU clock makes the kernel account its pending time.  Call it
 * before starting or stopping the counters, and getrusage() right next to
 * that.  Async-signal-safe (open, getdents64, clock_gettime, close);
 * works after the main thread has exited (/proc/self/task still lists the
 * threads).  Nothing to do, and no system call, while the program has
 * created no thread: a single thread's time getrusage settles itself. */
/* fn(tid, arg) for every thread of the process (/proc/self/task, read with
 * getdents64: async-signal-safe, no allocation); returns how many. */
int ps_each_thread(void (*fn)(int tid, void *arg), void *arg)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), count = 0;
    if (fd < 0)
        return 0;
    char buf[4096] __attribute__((aligned(8)));
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off + 19 < n;) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            int tid = 0;
            for (const char *p = buf + off + 19; *p >= '0' && *p <= '9'; p++)
                tid = tid * 10 + (*p - '0');
            if (tid > 0) {
                fn(tid, arg);
                count++;
            }
            if (!reclen)
                break;
            off += reclen;
        }
    }
    close(fd);
    return count;
}

static void settle_one(int tid, void *arg)
{
    (void)arg;
    ps_tid_cpu_ns(tid);
}

void ps_settle_thread_times(void)
{
    if (ps_threads_created())
        ps_each_thread(settle_one, NULL);
}

/* ---- psrun's "report: PATH" lines ------------------------------------------
 * psrun execs the program, so the library says which reports it wrote: one
 * line per report, on stderr, under psrun and without -q.  Only to the
 * stderr the program started with (still the same file: a program that
 * closed it and opened something else as descriptor 2 never gets the
 * line), never making the write fail the program (a full device, a pipe
 * nobody reads: SIGPIPE is blocked for the write and consumed).  The
 * writing is async-signal-safe (fstat, write, signal mask calls): it also
 * runs in the fatal-signal handler. */
static int notes_on;
static dev_t notes_dev;
static ino_t notes_ino;
static char notes_cwd[PATH_MAX];
static size_t notes_cwd_len;

/* The standard error psrun started the program with: psuite's messages go
 * there and nowhere else.  A program that puts another file on descriptor 2
 * (a log, its data) gets none of psuite's lines in it; the report's
 * <annotation> keeps what they said. */
static int stderr_known;
static dev_t stderr_dev;
static ino_t stderr_ino;

static int stderr_still_ours(void)
{
    struct stat st;
    if (!stderr_known || ps_in_collector()) /* the collector's descriptor 2 is psrun's stderr, or the way to it */
        return 1;
    return fstat(2, &st) == 0 && st.st_dev == stderr_dev && st.st_ino == stderr_ino;
}

void ps_notes_init(void)
{
    struct stat st;
    const char *q = getenv("PSUITE_QUIET");
    stderr_known = ps_env_flag("PSUITE_PRELOAD") && fstat(2, &st) == 0;
    if (stderr_known) {
        stderr_dev = st.st_dev;
        stderr_ino = st.st_ino;
    }
    notes_on = ps_env_flag("PSUITE_PRELOAD") && !(q && strcmp(q, "1") == 0) && fstat(2, &st) == 0;
    if (!notes_on)
        return;
    notes_dev = st.st_dev;
    notes_ino = st.st_ino;
    notes_cwd_len = 0;
    if (getcwd(notes_cwd, sizeof notes_cwd) && notes_cwd[0] == '/')
        notes_cwd_len = strlen(notes_cwd) == 1 ? 0 : strlen(notes_cwd);
    else
        notes_cwd_len = (size_t)-1;
}

/* quiet_write.h, and only to the standard error the program started with. */
static void write_no_sigpipe(int fd, const char *s, size_t n)
{
    if (fd == 2 && !stderr_still_ours())
        return;
    ps_write_quietly(fd, s, n);
}

/* A report taken back (before a failed exec) was announced already: its
 * name is not announced again when the final report takes it. */
static char announced[PATH_MAX];
void ps_report_announced(const char *path) { ps_strlcpy(announced, path, sizeof announced); }

void ps_report_note(const char *path)
{
    struct stat st;
    if (announced[0] && strcmp(path, announced) == 0) {
        announced[0] = '\0';
        return;
    }
    /* the collector's descriptor 2 is psrun's stderr (or the way to it);
     * a report the program writes itself (before an exec) is said by its
     * collector too, when it has one */
    int say_here = ps_in_collector() || !ps_collector_running();
    if (!notes_on || (say_here && !ps_in_collector() &&
                      (fstat(2, &st) != 0 || st.st_dev != notes_dev || st.st_ino != notes_ino)))
        return;
    const char *shown = path;
    if (notes_cwd_len != (size_t)-1 && strncmp(path, notes_cwd, notes_cwd_len) == 0 && path[notes_cwd_len] == '/')
        shown = path + notes_cwd_len + 1;
    static const char head[] = "psrun: report: ", hex[] = "0123456789abcdef";
    char line[PATH_MAX + 64];
    size_t n = sizeof head - 1;
    memcpy(line, head, n);
    for (const unsigned char *p = (const unsigned char *)shown; *p && n < sizeof line - 5; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            line[n++] = (char)*p;
        } else { /* one line whatever the name holds */
            line[n++] = '\\';
            line[n++] = 'x';
            line[n++] = hex[*p >> 4];
            line[n++] = hex[*p & 15];
        }
    }
    line[n++] = '\n';
    if (say_here || !ps_collector_say(line, n))
        write_no_sigpipe(2, line, n);
}

/* ---- messages without printf ------------------------------------------------
 * For the end of measurement, which may run in a signal handler: the
 * switches are read from the environment when measurement starts
 * (ps_messages_prepare), not at the end. */
static int msg_preload = -1, msg_quiet = -1;

void ps_messages_prepare(void)
{
    msg_preload = ps_env_flag("PSUITE_PRELOAD");
    msg_quiet = ps_quiet();
}

void ps_message_safe(const char *a, const char *b, const char *c, const char *d)
{
    char line[1024];
    int preload = msg_preload >= 0 ? msg_preload : ps_env_flag("PSUITE_PRELOAD");
    const char *parts[5] = {preload ? "psrun: " : "pshwpc: ", a, b, c, d};
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        for (const char *p = parts[i]; p && *p && n < sizeof line - 1; p++)
            line[n++] = *p;
    line[n++] = '\n';
    write_no_sigpipe(2, line, n);
}

void ps_note_safe(const char *a, const char *b)
{
    if (ps_report_is_checkpointing()) /* a checkpoint is written silently */
        return;
    if (msg_quiet >= 0 ? msg_quiet : ps_quiet())
        return;
    ps_message_safe(a, b, NULL, NULL);
}

const char *ps_errno_text(int err)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *s = strerrordesc_np(err);
    if (s)
        return s;
#endif
    switch (err) {
    case ENOSPC: return "No space left on device";
    case EACCES: return "Permission denied";
    case ENOENT: return "No such file or directory";
    case EROFS: return "Read-only file system";
    case EDQUOT: return "Disk quota exceeded";
    case ENOMEM: return "Cannot allocate memory";
    case EIO: return "Input/output error";
    default: return "error";
    }
}

/* Why a report could not be saved: EFBIG is the file size limit, refused
 * before any write (fsize_limit.h), so the line says which limit and how to
 * raise it. */
const char *ps_save_errno_text(int err)
{
    if (err == EFBIG)
        return "it would exceed the file size limit (ulimit -f); raise the limit "
               "(ulimit -f unlimited) and run again";
    return ps_errno_text(err);
}

/* ---- reports written before an exec, by index ---------------------------- */

char *ps_pathtab_at(ps_pathtab_t *t, int k)
{
    if (ps_in_collector() && t->paths && !ps_shared_contains(t->paths))
        return NULL; /* not shared with the collector (shared.c) */
    return k >= 0 && k < t->n ? t->paths[k] : NULL;
}

/* Slot k, the table grown to at least n slots (mmap, not malloc: the exec
 * may come from a signal handler).  NULL when it cannot grow. */
char *ps_pathtab_slot(ps_pathtab_t *t, int k, int n)
{
    if (k < t->n)
        return t->paths[k];
    if (n <= k)
        n = k + 1;
    void *area = ps_map(sizeof *t->paths * (size_t)n); /* the collector reads it too (shared.c) */
    if (!area)
        return NULL;
    if (t->paths) {
        memcpy(area, t->paths, sizeof *t->paths * (size_t)t->n);
        ps_unmap(t->paths, sizeof *t->paths * (size_t)t->n);
    }
    t->paths = area;
    t->n = n;
    return t->paths[k];
}

void ps_pathtab_free(ps_pathtab_t *t)
{
    if (t->paths)
        ps_unmap(t->paths, sizeof *t->paths * (size_t)t->n);
    t->paths = NULL;
    t->n = 0;
}

/* ---- a lock the end of measurement can meet in a signal handler ---------
 * The holder's thread id, 0 when free: taking it and naming the owner are
 * one atomic step, so the end of measurement, in a signal handler, always
 * knows whether it interrupted the holder (a mutex plus an owner field
 * leaves a window between the two). */
static int self_tid(void) { return (int)syscall(SYS_gettid); }

static int lock_try(ps_lock_t *l, int me)
{
    int free_ = 0;
    return __atomic_compare_exchange_n(&l->tid, &free_, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void ps_lock_take(ps_lock_t *l)
{
    struct timespec pause = {0, 100000};
    int me = self_tid();
    for (int spins = 0;; spins++) {
        if (!__atomic_load_n(&l->end_waiting, __ATOMIC_ACQUIRE) && lock_try(l, me))
            return;
        if (spins < 100)
            sched_yield();
        else
            nanosleep(&pause, NULL);
    }
}

void ps_lock_give(ps_lock_t *l) { __atomic_store_n(&l->tid, 0, __ATOMIC_RELEASE); }

void ps_lock_reset(ps_lock_t *l)
{
    l->tid = 0;
    l->end_waiting = 0;
}

/* For the end of measurement, which may be a signal handler that
 * interrupted a thread holding the lock: this thread holds it (interrupted
 * inside a call): go on without it.  Another thread holds it: wait a
 * bounded time (the work under the lock is short; others wanting it
 * meanwhile let this one pass), then go on without it rather than hang.
 * Returns whether the lock is held; async-signal-safe. */
#define END_LOCK_WAIT_US 1000000
#define END_LOCK_POLL_US 100
int ps_lock_take_bounded(ps_lock_t *l)
{
    struct timespec poll = {0, END_LOCK_POLL_US * 1000};
    int held = 0, me = self_tid();
    __atomic_add_fetch(&l->end_waiting, 1, __ATOMIC_SEQ_CST);
    for (int k = 0; k <= END_LOCK_WAIT_US / END_LOCK_POLL_US; k++) {
        if (lock_try(l, me)) {
            held = 1;
            break;
        }
        if (__atomic_load_n(&l->tid, __ATOMIC_ACQUIRE) == me)
            break;
        syscall(SYS_nanosleep, &poll, NULL);
    }
    __atomic_sub_fetch(&l->end_waiting, 1, __ATOMIC_SEQ_CST);
    return held;
}

/* ---- descriptors opened while another thread forks -------------------- */

/* A thread opening its counters or its sampling source holds a descriptor
 * for a moment before its record says so; a fork in that moment would give
 * the child a psuite descriptor that nothing there knows to close.  The
 * openers announce the window, and the fork's prepare handler waits for
 * the windows open to close (bounded: a signal handler of the opening
 * thread itself may be the one forking). */
static int fd_forking, fd_opening;

void ps_fd_window_enter(void)
{
    struct timespec poll = {0, 50000};
    for (;;) {
        __atomic_add_fetch(&fd_opening, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&fd_forking, __ATOMIC_SEQ_CST))
            return;
        __atomic_sub_fetch(&fd_opening, 1, __ATOMIC_SEQ_CST);
        for (int k = 0; k < 20000 && __atomic_load_n(&fd_forking, __ATOMIC_SEQ_CST); k++)
            syscall(SYS_nanosleep, &poll, NULL);
    }
}

void ps_fd_window_leave(void) { __atomic_sub_fetch(&fd_opening, 1, __ATOMIC_SEQ_CST); }

void ps_fd_window_fork_prepare(void)
{
    struct timespec poll = {0, 50000};
    __atomic_store_n(&fd_forking, 1, __ATOMIC_SEQ_CST);
    for (int k = 0; k < 20000 && __atomic_load_n(&fd_opening, __ATOMIC_SEQ_CST); k++)
        syscall(SYS_nanosleep, &poll, NULL);
}

/* child: 1 in the forked child, where no other thread is opening anything */
void ps_fd_window_fork_done(int child)
{
    if (child)
        __atomic_store_n(&fd_opening, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fd_forking, 0, __ATOMIC_SEQ_CST);
}

/* ---- sorting without allocation or recursion (signal-safe) --------------- */

static void swap_bytes(char *a, char *b, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        char t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

static void sift(char *v, size_t root, size_t n, size_t size, int (*less)(const void *, const void *))
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && less(v + c * size, v + (c + 1) * size))
            c++;
        if (!less(v + root * size, v + c * size))
            return;
        swap_bytes(v + root * size, v + c * size, size);
        root = c;
    }
}

/* Heap sort (glibc's qsort may malloc: not in a signal handler). */
void ps_heapsort(void *base, size_t n, size_t size, int (*less)(const void *, const void *))
{
    char *v = base;
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n, size, less);
    for (size_t end = n; end-- > 1;) {
        swap_bytes(v, v + end * size, size);
        sift(v, 0, end, size, less);
    }
}

/* The asynchronous signals held back with the kernel's mask directly
 * (psuite's sigprocmask wrapper shows the program its own view); faults and
 * SIGPROF, the sampler's, stay deliverable.  Returns 1 when *old is to be
 * given back with ps_release_signals. */
int ps_hold_async_signals(sigset_t *old)
{
    sigset_t hold;
    sigfillset(&hold);
    static const int keep[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGPROF};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        sigdelset(&hold, keep[i]);
    return syscall(SYS_rt_sigprocmask, SIG_BLOCK, &hold, old, _NSIG / 8) == 0;
}

void ps_release_signals(const sigset_t *old) { syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, _NSIG / 8); }

/* ---- descriptors out of the program's reach ---------------------------------
 * A descriptor psuite keeps in the program is moved above the soft
 * RLIMIT_NOFILE: the program never gets such a number from open(), pipe(),
 * dup() ..., so it keeps all the room it has bare, and code that assumes the
 * lowest free number (closefrom(3), then open() gives 3) or writes to a
 * number it chose (bash's exec 3>file) never meets one of psuite's.  The
 * kernel takes a new descriptor only below the soft limit: the soft limit
 * is raised to the hard one for the duplication and set back right after
 * (prlimit: the value restored is the one read in the same call).  Where
 * the hard limit leaves no room above, the descriptor goes as high as the
 * limit allows.  Raw system calls only: async-signal-safe. */
#define FD_CAP (1L << 20) /* the kernel's default nr_open: no descriptor beyond it */
#define NEAR_TOP 4096L     /* above FD_SETSIZE (1024), which daemons close up to */

static int rlimit_nofile(struct rlimit *now, const struct rlimit *set)
{
    return (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, set, now);
}

/* The lowest free descriptor >= base duplicated from fd (close-on-exec),
 * with the soft limit raised to the hard one meanwhile; -1 if none. */
static int dup_beyond(int fd, long base, const struct rlimit *was)
{
    struct rlimit raised = {was->rlim_max, was->rlim_max}, before;
    if (rlimit_nofile(&before, &raised) != 0)
        return -1;
    int high = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base);
    /* back to the value read as the limit was raised (a program thread
     * changing the limit in between would have its change undone: the
     * window is three system calls) */
    rlimit_nofile(NULL, &before);
    return high;
}

int ps_fd_room_above(void)
{
    struct rlimit rl;
    return rlimit_nofile(&rl, NULL) == 0 && rl.rlim_cur < rl.rlim_max && (long)rl.rlim_cur < FD_CAP;
}

int ps_fd_limit_tight(void)
{
    struct rlimit rl;
    return rlimit_nofile(&rl, NULL) == 0 && rl.rlim_cur >= rl.rlim_max && (long)rl.rlim_cur <= NEAR_TOP;
}

int ps_fd_above_limit(int fd)
{
    struct rlimit rl;
    if (fd < 0 || rlimit_nofile(&rl, NULL) != 0)
        return fd;
    long soft = rl.rlim_cur == RLIM_INFINITY || (long)rl.rlim_cur > FD_CAP ? FD_CAP : (long)rl.rlim_cur;
    if (fd >= soft)
        return fd;
    int high = -1;
    if (rl.rlim_cur < rl.rlim_max && soft < FD_CAP)
        high = dup_beyond(fd, soft, &rl);
    /* No room above: the highest free number below the limit, or below
     * 4096 under a higher one (F_DUPFD fails with EMFILE when none is free
     * at or above its base): out of the range daemons close (0 to
     * FD_SETSIZE), and not the limit's top, as every fork copies the
     * descriptor table up to the highest number open (at 20,000, 0.25 MB
     * per fork, the program's own forks included). */
    long top = soft > NEAR_TOP ? NEAR_TOP : soft;
    for (long step = 1; high < 0 && top - step > fd; step *= 2)
        high = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, top - step);
    if (high < 0)
        return fd;
    syscall(SYS_close, fd);
    return high;
}

/* open(), which the program may have left no descriptor for: when it has
 * used up its limit, the file is opened with the soft limit raised (the
 * lowest free number then is above the program's limit).  The end of
 * measurement opens its reports this way. */
int ps_open_anyway(const char *path, int flags, int mode)
{
    int fd = open(path, flags, mode);
    if (fd >= 0 || errno != EMFILE)
        return fd;
    struct rlimit rl, raised, before;
    if (rlimit_nofile(&rl, NULL) != 0 || rl.rlim_cur >= rl.rlim_max) {
        errno = EMFILE;
        return -1;
    }
    raised.rlim_cur = raised.rlim_max = rl.rlim_max;
    if (rlimit_nofile(&before, &raised) != 0) {
        errno = EMFILE;
        return -1;
    }
    fd = open(path, flags, mode);
    int err = errno;
    rlimit_nofile(NULL, &before);
    errno = err;
    return fd;
}

unsigned long long ps_fd_ident(int fd)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return 0;
    return ((unsigned long long)st.st_dev << 40) ^ (unsigned long long)st.st_ino ^ 1;
}
