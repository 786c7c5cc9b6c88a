/* collector.c - the process that writes a measured process's reports.
 *
 * Under psrun the recorder (this library, in the program) keeps what it
 * measures in memory shared with a collector (shared.c): a fork of the
 * program taken before main, which is not the program's child (the fork is
 * doubled, the intermediate reaped at once) and lives in a session of its
 * own, ignoring the signals a job's process group receives.  It holds
 * copies of the counters' descriptors as they were at the fork, psrun's
 * stderr, working directory, root and privileges, and it watches the
 * program with a pidfd.
 *
 * - A normal end (exit, return, _exit, a fatal signal the program handles
 *   through psuite): the program freezes its records and hands them over;
 *   the collector writes the reports and says so, the program waits for
 *   that (bounded) and then ends, so the reports exist when the program's
 *   wait() returns, as before.
 * - Any other end (SIGKILL, exit_group, a crash without handlers): the
 *   collector sees the pidfd become readable, learns how the process ended
 *   (PIDFD_GET_INFO, or the zombie's /proc stat), reads the counters through
 *   its own descriptors and writes what was recorded until then, saying
 *   how the process ended.
 * - With a checkpoint period, it also writes the reports so far every
 *   period, so that a job killed together with its collector leaves all
 *   but the last period.
 *
 * The collector runs psuite's own writers on the shared records: the same
 * documents as ever, and nothing of the program's (its descriptors, stderr,
 * credentials, root) is needed at its end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
/* <linux/pidfd.h> of Linux 6.15 (the build machine's headers may be older) */
struct ps_pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define PS_PIDFD_GET_INFO _IOWR(0xFF, 11, struct ps_pidfd_info)
#define PS_PIDFD_INFO_EXIT (1ULL << 3)

/* How long a collector sleeps between looks at its program (its death is
 * seen within this), and how long the program waits for its reports. */
#define TICK_MS 50
#define HANDOFF_WAIT_MS 60000
#define ATTACH_WAIT_MS 10000

/* The control block, in the library's shared globals. */
static struct {
    int doorbell;         /* futex: the program rang (a hand-over) */
    int handoff;          /* 1: records frozen, to be written; 2: taken */
    int written;          /* futex: 1 the reports are written, 2 the collector could not */
    int exec_written;     /* the program wrote its reports itself before an exec */
    int has_why;
    char why[160];
    pid_t program, collector;
    /* lines the program hands to the collector to say (its reports written
     * before an exec): head and tail count them, slots hold them */
    unsigned said_head, said_tail;
    struct {
        int len;
        char text[PATH_MAX + 64];
    } say[4];
    long long user_ns, sys_ns; /* the program's CPU time, last seen by the collector */
    /* a segment the arena grew by (shared.c), to be attached by the
     * collector at the program's address: 1 asked, 2 attached, 3 refused */
    int attach;
    int attach_id;
    void *attach_at;
    /* the counters the collector holds (perfev.c): an operation asked by
     * the program, 1 asked, 2 done (count_rc its result) */
    int count_asked;
    int count_op, count_rc;
    /* a function of the library's run in the collector for the program
     * (ps_collector_call): 1 asked, 2 done; call_lock serializes callers */
    ps_lock_t call_lock;
    int call_asked;
    int (*call_fn)(long, long);
    long call_a, call_b;
    int call_rc;
} ctl;

/* Thread-local, hence private to each process: the library's globals are
 * shared between the program and its collector (shared.c). */
static __thread int in_collector; /* this process is a collector */
static __thread pid_t target;     /* in the collector: the measured process */
static __thread pid_t writing_for; /* in the collector: the process a report is written for, 0: target */
static ps_collector_writers_t writers;
/* The program's pidfd, opened by the program itself just before the
 * collector is forked (and closed in the program right after): a process
 * killed at once is still seen, and how it ended known. */
static int start_pidfd = -1;
static long long checkpoint_ns;

pid_t ps_self_pid(void) { return in_collector ? (writing_for ? writing_for : target) : getpid(); }
int ps_in_collector(void) { return in_collector; }

static long futex(int *addr, int op, int val, const struct timespec *timeout)
{
    return syscall(SYS_futex, addr, op, val, timeout, NULL, 0);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "Name" of a signal, for the annotation (async-signal-safe). */
static const char *signal_name(int sig)
{
    static const char *const names[] = {
        [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
        [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT", [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
        [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
        [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM", [SIGSTKFLT] = "SIGSTKFLT",
        [SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
        [SIGSYS] = "SIGSYS",   [SIGIO] = "SIGIO",     [SIGPWR] = "SIGPWR",
    };
    if (sig > 0 && sig < (int)(sizeof names / sizeof *names) && names[sig])
        return names[sig];
    return NULL;
}

/* The zombie's wait status from /proc/PID/stat (field 52), -1 if gone. */
static int zombie_status(pid_t pid, long long *user_ns, long long *sys_ns)
{
    char path[64], buf[1024];
    ps_buf_t b;
    ps_buf_fixed(&b, path, sizeof path);
    ps_buf_str(&b, "/proc/");
    ps_buf_ll(&b, pid);
    ps_buf_str(&b, "/stat");
    int n = ps_read_file(path, buf, sizeof buf);
    if (n <= 0)
        return -1;
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* fields from 3 on, after the command's closing parenthesis */
    long long field[53] = {0};
    int k = 3;
    for (p += 2; *p && k < 53; k++) {
        long long v = 0;
        int neg = *p == '-';
        if (neg)
            p++;
        while (*p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        field[k] = neg ? -v : v;
        while (*p && *p != ' ')
            p++;
        if (*p == ' ')
            p++;
    }
    long tck = sysconf(_SC_CLK_TCK);
    if (user_ns && tck > 0) {
        *user_ns = field[14] * (1000000000LL / tck);
        *sys_ns = field[15] * (1000000000LL / tck);
    }
    if (k < 53)
        return -2; /* an old kernel: no exit code there */
    return (int)field[52];
}

/* A wait status as the report says it; status < 0: not known. */
static void describe_status(int status, char *out, size_t len)
{
    ps_buf_t b;
    ps_buf_fixed(&b, out, len);
    if (status < 0) {
        ps_buf_str(&b, "ended without running its exit path");
    } else if (WIFSIGNALED(status)) {
        char rt[16];
        const char *name = signal_name(WTERMSIG(status));
        if (!name)
            name = ps_rt_signal_name(WTERMSIG(status), rt);
        ps_buf_str(&b, "killed by ");
        if (name)
            ps_buf_str(&b, name);
        else {
            ps_buf_str(&b, "signal ");
            ps_buf_ll(&b, WTERMSIG(status));
        }
        if (WCOREDUMP(status))
            ps_buf_str(&b, " (core dumped)");
    } else {
        ps_buf_str(&b, "ended without running its exit path (exit status ");
        ps_buf_ll(&b, WEXITSTATUS(status));
        ps_buf_str(&b, ")");
    }
    if (b.failed)
        out[0] = '\0';
}

static int parent_saw(pid_t pid);

/* How the process ended, for the report: "" when it is not known.  Asked
 * of the kernel (the pidfd, the zombie) and, under psrun -f, of the
 * parent's wait: a parent that reaps at once can leave neither, on a
 * kernel without PIDFD_INFO_EXIT or between the zombie's end and the
 * pidfd's exit record.  At most about 300 ms. */
static void how_it_ended(int pidfd, pid_t pid, char *out, size_t len)
{
    int status = -1;
    for (int tries = 0; tries < 300 && status < 0; tries++) {
        struct ps_pidfd_info info;
        memset(&info, 0, sizeof info);
        info.mask = PS_PIDFD_INFO_EXIT;
        if (ioctl(pidfd, PS_PIDFD_GET_INFO, &info) == 0 && (info.mask & PS_PIDFD_INFO_EXIT)) {
            status = info.exit_code;
            break;
        }
        long long u, s;
        int z = zombie_status(pid, &u, &s);
        if (z >= 0) {
            status = z;
            if (pid == target) {
                __atomic_store_n(&ctl.user_ns, u, __ATOMIC_RELAXED);
                __atomic_store_n(&ctl.sys_ns, s, __ATOMIC_RELAXED);
            }
            break;
        }
        if ((status = parent_saw(pid)) >= 0)
            break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    describe_status(status, out, len);
}

/* The measured process's user and system CPU time: its own getrusage in
 * it; in its collector what the process said at its hand-over, or what the
 * collector last saw of it. */
void ps_process_cpu(double *user, double *sys)
{
    if (!in_collector) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
        *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
        return;
    }
    *user = __atomic_load_n(&ctl.user_ns, __ATOMIC_RELAXED) / 1e9;
    *sys = __atomic_load_n(&ctl.sys_ns, __ATOMIC_RELAXED) / 1e9;
}

long long ps_collector_cpu(long long *user_ns, long long *sys_ns)
{
    *user_ns = __atomic_load_n(&ctl.user_ns, __ATOMIC_RELAXED);
    *sys_ns = __atomic_load_n(&ctl.sys_ns, __ATOMIC_RELAXED);
    return *user_ns + *sys_ns;
}

/* Every descriptor but stderr and the counters' closed: the collector must
 * not keep a pipe or socket of the program's open (a reader waiting for its
 * end would wait for the collector too). */
static void close_others(void)
{
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return;
    char buf[4096];
    int fds[1024], n = 0;
    long got;
    while ((got = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long at = 0; at < got;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + at);
            at += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9')
                continue;
            int fd = atoi(d->name);
            if (fd == 2 || fd == dir || fd == start_pidfd)
                continue;
            char link[64], target_name[64];
            ps_buf_t b;
            ps_buf_fixed(&b, link, sizeof link);
            ps_buf_str(&b, "/proc/self/fd/");
            ps_buf_ll(&b, fd);
            ssize_t len = readlink(link, target_name, sizeof target_name - 1);
            if (len > 0) {
                target_name[len] = '\0';
                if (strcmp(target_name, "anon_inode:[perf_event]") == 0)
                    continue; /* a counter: read at the end */
            }
            if (n < (int)(sizeof fds / sizeof *fds))
                fds[n++] = fd;
        }
    }
    close(dir);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) { /* 0 and 1 taken, so nothing the writers open lands there */
        if (null != 0)
            dup3(null, 0, O_CLOEXEC);
        if (null != 1)
            dup3(null, 1, O_CLOEXEC);
        if (null > 1)
            close(null);
    }
}

/* Through the system calls: the C library's sigaction and sigprocmask are
 * psuite's own wrappers in this process too, and their bookkeeping is in
 * the memory shared with the program. */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

static void set_action(int sig, void (*handler)(int))
{
    struct kernel_sigaction ka = {handler, 0, NULL, 0};
    syscall(SYS_rt_sigaction, sig, &ka, NULL, sizeof ka.mask);
}

static void quiet_signals(void)
{
    static const int job[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM,
                              SIGTSTP, SIGTTIN, SIGTTOU, SIGXCPU, SIGVTALRM, SIGPROF, SIGIO, SIGPWR};
    for (size_t i = 0; i < sizeof job / sizeof *job; i++)
        set_action(job[i], SIG_IGN);
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGCHLD, SIGWINCH, SIGURG};
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        set_action(fatal[i], SIG_DFL);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        set_action(sig, SIG_IGN);
    unsigned long none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
}

/* The program's argument strings, as the kernel laid them out: a
 * collector writes its own title over its copy of them, so that ps, pgrep
 * and pkill (by command line or by name) find the program alone. */
static char *title_lo, *title_hi;

void ps_collector_title_area(int argc, char **argv)
{
    if (argc < 1 || !argv || !argv[0])
        return;
    char *end = argv[0] + strlen(argv[0]) + 1;
    for (int i = 1; i < argc && argv[i] == end; i++)
        end += strlen(argv[i]) + 1;
    title_lo = argv[0];
    title_hi = end;
}

/* In the collector only: its stack is its own since the fork. */
static void retitle(void)
{
    prctl(PR_SET_NAME, "psuite-collect", 0, 0, 0);
    if (!title_lo || title_hi <= title_lo + 1)
        return;
    char title[64];
    ps_buf_t b;
    ps_buf_fixed(&b, title, sizeof title);
    ps_buf_str(&b, "psuite-collector ");
    ps_buf_ll(&b, target);
    size_t room = (size_t)(title_hi - title_lo) - 1, len = strlen(title);
    if (len > room)
        len = room;
    memcpy(title_lo, title, len);
    memset(title_lo + len, 0, (size_t)(title_hi - title_lo) - len);
}

static void notes_relay(void);

/* The collector ends without any of the program's exit paths (psuite's
 * exit wrappers among them). */
static void say_queued(void);

static void watch_children(int final);

static void family_release_own(void);

static __attribute__((noreturn)) void collector_exit(void)
{
    watch_children(1);
    family_release_own();
    say_queued();
    notes_relay();
    for (;;)
        syscall(SYS_exit_group, 0);
}

/* psrun -f: psuite's lines go to psrun's own stderr, never into a stream a
 * followed process redirected (an autoconf check reading a compiler's
 * stderr, a subprocess capturing it).  psrun names a datagram socket in
 * PSUITE_NOTES; the collector of the process psrun started (its pid is in
 * the name) binds it and copies what arrives to its stderr, psrun's; the
 * collectors of the processes it starts send their lines there (their
 * descriptor 2 becomes the socket).  Where that fails, a collector writes
 * to the stderr it has. */
static __thread int relay_fd = -1;

static void notes_route(void)
{
    const char *name = getenv("PSUITE_NOTES");
    if (!name || !*name || strlen(name) + 2 > sizeof ((struct sockaddr_un *)0)->sun_path)
        return;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path + 1, name, strlen(name)); /* abstract: no file */
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
    const char *dash = strchr(name, '-');
    long root = dash ? strtol(dash + 1, NULL, 10) : 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return;
    if (root == (long)target && bind(fd, (struct sockaddr *)&a, len) == 0) {
        relay_fd = fd;
        return;
    }
    /* a process psrun's started: its lines to that collector (an exec'd
     * image of psrun's own process finds the name taken and does so too) */
    for (int tries = 0; tries < 40; tries++) {
        if (connect(fd, (struct sockaddr *)&a, len) == 0) {
            if (dup3(fd, 2, O_CLOEXEC) == 2)
                close(fd);
            return;
        }
        if (errno != ECONNREFUSED)
            break;
        /* that collector may not be listening yet: it started just before */
        struct timespec ms = {0, 5000000};
        nanosleep(&ms, NULL);
    }
    close(fd);
}

static void notes_relay(void)
{
    if (relay_fd < 0)
        return;
    char buf[PATH_MAX + 512];
    ssize_t n;
    while ((n = recv(relay_fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
        if (write(2, buf, (size_t)n) < 0)
            break;
}

/* In the program: the line queued for its collector (0: no room). */
int ps_collector_say(const char *line, size_t n)
{
    if (!ps_collector_running() || n > sizeof ctl.say[0].text)
        return 0;
    unsigned tail = __atomic_load_n(&ctl.said_tail, __ATOMIC_ACQUIRE);
    for (;;) {
        if (tail - __atomic_load_n(&ctl.said_head, __ATOMIC_ACQUIRE) >= sizeof ctl.say / sizeof *ctl.say)
            return 0;
        /* a slot claimed by its number, filled, then published with len */
        if (__atomic_compare_exchange_n(&ctl.said_tail, &tail, tail + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    unsigned k = tail % (sizeof ctl.say / sizeof *ctl.say);
    memcpy(ctl.say[k].text, line, n);
    __atomic_store_n(&ctl.say[k].len, (int)n, __ATOMIC_RELEASE);
    __atomic_add_fetch(&ctl.doorbell, 1, __ATOMIC_RELEASE);
    futex(&ctl.doorbell, FUTEX_WAKE, 1, NULL);
    return 1;
}

static void say_queued(void)
{
    for (;;) {
        unsigned head = __atomic_load_n(&ctl.said_head, __ATOMIC_ACQUIRE);
        if (head == __atomic_load_n(&ctl.said_tail, __ATOMIC_ACQUIRE))
            return;
        unsigned k = head % (sizeof ctl.say / sizeof *ctl.say);
        int len = __atomic_load_n(&ctl.say[k].len, __ATOMIC_ACQUIRE);
        if (len <= 0)
            return; /* claimed, not filled yet: at the next look */
        if (write(2, ctl.say[k].text, (size_t)len) < 0) { /* nowhere to say it: nothing more to do */
        }
        __atomic_store_n(&ctl.say[k].len, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&ctl.said_head, head + 1, __ATOMIC_RELEASE);
    }
}

/* psrun -f: children the program forks get collectors of their own, from
 * the child's side of the fork.  A child killed before it got there (1 ms
 * after fork() on a busy machine) would leave no report: the parent's
 * collector watches every child the program forks, and writes a report
 * for one that ends without a collector of its own.  The table of children
 * is a shared page of its own: the parent registers each child it forks,
 * and the child's collector, once it runs, marks the child as its own
 * (the page stays shared with the child, unlike the rest of the memory). */
#define KIN_SLOTS 255
typedef struct {
    int pid;
    int state;            /* KIN_* */
    long long forked_ns;  /* wall clock at the fork */
    int status;           /* its wait status, as the program's wait returned it */
    int has_status;
} kin_t;
enum { KIN_FREE = 0, KIN_FORKED, KIN_OWN };
typedef struct {
    kin_t kin[KIN_SLOTS];
} family_t;
static family_t *family;        /* this process's children */
static family_t *family_parent; /* the parent's table, in a child psrun -f follows */
static int follow_children;

static kin_t *kin_slot(family_t *f, int pid)
{
    for (int i = 0; i < KIN_SLOTS; i++)
        if (__atomic_load_n(&f->kin[i].pid, __ATOMIC_ACQUIRE) == pid)
            return &f->kin[i];
    for (int i = 0; i < KIN_SLOTS; i++) {
        int free_pid = 0;
        if (__atomic_compare_exchange_n(&f->kin[i].pid, &free_pid, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return &f->kin[i];
    }
    return NULL; /* more children at once than slots: this one is its own collector's alone */
}

/* The program's fork(), in the parent: the child is watched. */
static void kin_forked(int pid)
{
    if (!family || !follow_children || pid <= 0)
        return;
    kin_t *k = kin_slot(family, pid);
    if (!k)
        return;
    k->forked_ns = ps_wallclock_ns();
    int fresh = KIN_FREE;
    if (__atomic_compare_exchange_n(&k->state, &fresh, KIN_FORKED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        k->has_status = 0;
}

/* The program's wait for a child: its status kept for the child's report
 * (a child reaped before the collector looked has no other record of it). */
static void kin_reaped(pid_t pid, int status)
{
    if (!family || !follow_children || pid <= 0)
        return;
    for (int i = 0; i < KIN_SLOTS; i++)
        if (__atomic_load_n(&family->kin[i].pid, __ATOMIC_ACQUIRE) == pid) {
            family->kin[i].status = status;
            __atomic_store_n(&family->kin[i].has_status, 1, __ATOMIC_RELEASE);
            return;
        }
}

typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
PS_API pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    static wait4_fn real;
    if (!real)
        real = (wait4_fn)dlsym(RTLD_NEXT, "wait4");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int mine;
    pid_t got = real(pid, status ? status : &mine, options, ru);
    if (got > 0 && !(options & WNOWAIT)) {
        int saved = errno;
        kin_reaped(got, status ? *status : mine);
        errno = saved;
    }
    return got;
}

PS_API pid_t waitpid(pid_t pid, int *status, int options) { return wait4(pid, status, options, NULL); }
PS_API pid_t wait(int *status) { return wait4(-1, status, 0, NULL); }
PS_API pid_t wait3(int *status, int options, struct rusage *ru) { return wait4(-1, status, options, ru); }

typedef pid_t (*fork_fn)(void);
PS_API pid_t fork(void)
{
    static fork_fn real;
    if (!real)
        real = (fork_fn)dlsym(RTLD_NEXT, "fork");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    pid_t pid = real();
    if (pid > 0)
        kin_forked(pid);
    return pid;
}

/* In the collector: the children being watched (pidfds), its own. */
#define WATCHED 64
static __thread struct {
    int pid, fd;
} watched[WATCHED];
static __thread int nwatched;

static void kin_write_stub(int pid, long long forked_ns, const char *how)
{
    char annotation[256];
    ps_buf_t b;
    ps_buf_fixed(&b, annotation, sizeof annotation);
    ps_buf_str(&b, "ended before its measurement started");
    if (how && *how) {
        ps_buf_str(&b, ": ");
        ps_buf_str(&b, how);
    }
    ps_buf_str(&b, "; forked by process ");
    ps_buf_ll(&b, target);
    if (b.failed)
        ps_strlcpy(annotation, "ended before its measurement started", sizeof annotation);
    ps_measurement_t m = {forked_ns ? ps_wallclock_ns() - forked_ns : 0, 0, 0, NULL};
    ps_counts_t c = {"perfmon", "perf_event", ps_hwpc_domain(), 0, 0, NULL, NULL};
    char path[PATH_MAX];
    writing_for = pid;
    ps_report_write_counts(&c, 0, annotation, &m, NULL, path, sizeof path);
    writing_for = 0;
}

static void how_it_ended(int pidfd, pid_t pid, char *out, size_t len);

/* The children that ended are settled: a report of their own written by
 * their collectors, or one written here.  final: the collector is about to
 * end; every child still in the table is looked at once more. */
static void watch_children(int final)
{
    if (!family)
        return;
    for (int i = 0; i < KIN_SLOTS; i++) {
        kin_t *k = &family->kin[i];
        int pid = __atomic_load_n(&k->pid, __ATOMIC_ACQUIRE);
        if (!pid || __atomic_load_n(&k->state, __ATOMIC_ACQUIRE) != KIN_FORKED)
            continue;
        int known = 0;
        for (int w = 0; w < nwatched && !known; w++)
            known = watched[w].pid == pid;
        if (known || nwatched == WATCHED)
            continue;
        watched[nwatched].pid = pid;
        watched[nwatched].fd = (int)syscall(SYS_pidfd_open, pid, 0); /* -1: gone and reaped already */
        nwatched++;
    }
    int ended[WATCHED], nended = 0;
    for (int w = 0; w < nwatched; w++) {
        struct pollfd p = {watched[w].fd, POLLIN, 0};
        if (watched[w].fd < 0 || poll(&p, 1, 0) == 1)
            ended[nended++] = w;
    }
    if (!nended)
        return;
    /* a child's own collector may be just starting: one moment for all */
    for (int tries = 0; tries < 20; tries++) {
        int waiting = 0;
        for (int e = 0; e < nended && !waiting; e++) {
            kin_t *k = kin_slot(family, watched[ended[e]].pid);
            waiting = k && __atomic_load_n(&k->state, __ATOMIC_ACQUIRE) == KIN_FORKED;
        }
        if (!waiting)
            break;
        struct timespec ms = {0, 5000000};
        nanosleep(&ms, NULL);
    }
    for (int e = nended - 1; e >= 0; e--) { /* from the end: removing keeps the earlier indexes */
        int w = ended[e], pid = watched[w].pid, fd = watched[w].fd;
        kin_t *k = kin_slot(family, pid);
        if (k && __atomic_load_n(&k->state, __ATOMIC_ACQUIRE) == KIN_FORKED) {
            char how[128] = "";
            if (__atomic_load_n(&k->has_status, __ATOMIC_ACQUIRE))
                describe_status(k->status, how, sizeof how);
            else if (fd >= 0)
                how_it_ended(fd, pid, how, sizeof how);
            kin_write_stub(pid, k->forked_ns, how);
        }
        if (k) {
            __atomic_store_n(&k->state, KIN_FREE, __ATOMIC_RELEASE);
            __atomic_store_n(&k->pid, 0, __ATOMIC_RELEASE);
        }
        if (fd >= 0)
            close(fd);
        watched[w] = watched[--nwatched];
    }
    if (final && nwatched < WATCHED) /* more may have been waiting for a place */
        for (int i = 0; i < KIN_SLOTS; i++)
            if (__atomic_load_n(&family->kin[i].state, __ATOMIC_ACQUIRE) == KIN_FORKED) {
                watch_children(1);
                break;
            }
}

/* In a child psrun -f follows, before its own collector starts: the
 * parent's table kept aside (the child's collector marks the child there),
 * a table of its own for its own children. */
static void family_new(void)
{
    family_parent = family;
    family = NULL;
    follow_children = ps_env_flag("PSUITE_FOLLOW");
    if (!follow_children)
        return;
    void *m = mmap(NULL, sizeof(family_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    family = m == MAP_FAILED ? NULL : m;
}

/* In a child psrun -f follows, its measurement set up or given up: the
 * parent's collector writes nothing for it (its own collector does, when
 * it has one). */
void ps_collector_child_settled(void)
{
    if (!family_parent)
        return;
    kin_t *k = kin_slot(family_parent, getpid());
    if (k)
        __atomic_store_n(&k->state, KIN_OWN, __ATOMIC_RELEASE);
}

/* In the collector: the child it writes for has a collector now. */
static void family_mark_own(void)
{
    if (!family_parent)
        return;
    kin_t *k = kin_slot(family_parent, target);
    if (k)
        __atomic_store_n(&k->state, KIN_OWN, __ATOMIC_RELEASE);
}

/* In the collector of a child psrun -f follows: the wait status the
 * parent's wait returned for pid, -1 if it has not (yet). */
static int parent_saw(pid_t pid)
{
    if (!family_parent)
        return -1;
    for (int i = 0; i < KIN_SLOTS; i++) {
        kin_t *k = &family_parent->kin[i];
        if (__atomic_load_n(&k->pid, __ATOMIC_ACQUIRE) == pid && __atomic_load_n(&k->has_status, __ATOMIC_ACQUIRE))
            return k->status;
    }
    return -1;
}

/* In the collector, its reports written: the child's place in the
 * parent's table is free for the next child (a program forking more
 * children than places over its life keeps watching the new ones). */
static void family_release_own(void)
{
    if (!family_parent)
        return;
    for (int i = 0; i < KIN_SLOTS; i++) {
        kin_t *k = &family_parent->kin[i];
        if (__atomic_load_n(&k->pid, __ATOMIC_ACQUIRE) != target)
            continue;
        /* the parent's collector may free it too, and a new child take it
         * at once: each step only from the state this one saw */
        int own = KIN_OWN, pid = target;
        if (__atomic_compare_exchange_n(&k->state, &own, KIN_FREE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            __atomic_compare_exchange_n(&k->pid, &pid, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        return;
    }
}

static void snapshot_cpu(void)
{
    long long u, s;
    if (zombie_status(target, &u, &s) != -1) {
        __atomic_store_n(&ctl.user_ns, u, __ATOMIC_RELAXED);
        __atomic_store_n(&ctl.sys_ns, s, __ATOMIC_RELAXED);
    }
}

/* In the collector: the segment the program asked for, at its address
 * (never over anything of the collector's: no SHM_REMAP). */
static void attach_asked(void)
{
    if (__atomic_load_n(&ctl.attach, __ATOMIC_ACQUIRE) != 1)
        return;
    void *p = shmat(ctl.attach_id, ctl.attach_at, 0);
    int ok = p == ctl.attach_at;
    if (!ok && p != (void *)-1)
        shmdt(p);
    __atomic_store_n(&ctl.attach, ok ? 2 : 3, __ATOMIC_RELEASE);
    futex(&ctl.attach, FUTEX_WAKE, INT_MAX, NULL);
}

/* In the collector: the program's request on the counters it holds. */
static void counters_asked(void)
{
    if (__atomic_load_n(&ctl.count_asked, __ATOMIC_ACQUIRE) != 1)
        return;
    ctl.count_rc = ps_perf_serve(ctl.count_op);
    __atomic_store_n(&ctl.count_asked, 2, __ATOMIC_RELEASE);
    futex(&ctl.count_asked, FUTEX_WAKE, INT_MAX, NULL);
}

/* In the collector: the function the program asked to run here. */
static void call_asked(void)
{
    if (__atomic_load_n(&ctl.call_asked, __ATOMIC_ACQUIRE) != 1)
        return;
    ctl.call_rc = ctl.call_fn(ctl.call_a, ctl.call_b);
    __atomic_store_n(&ctl.call_asked, 2, __ATOMIC_RELEASE);
    futex(&ctl.call_asked, FUTEX_WAKE, INT_MAX, NULL);
}

/* The program's CPUs while its collector is started: the intermediate,
 * which shares the program's memory, runs on the program's CPU alone.  A
 * CPU that has run the program's address space stays in its mask of CPUs
 * to flush (Linux trims it once a second), and every munmap the program
 * makes meanwhile flushes there too: 4 % more CPU time in a dlopen loop. */
static cpu_set_t program_cpus;
static int cpus_pinned;

static void pin_to_this_cpu(void)
{
    int cpu = sched_getcpu();
    cpus_pinned = 0;
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof program_cpus, &program_cpus) != 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    cpus_pinned = sched_setaffinity(0, sizeof one, &one) == 0;
}

static void unpin(void)
{
    if (cpus_pinned)
        sched_setaffinity(0, sizeof program_cpus, &program_cpus);
}

static __attribute__((noreturn)) void collector_main(void)
{
    in_collector = 1;
    target = ctl.program;
    unpin(); /* the program's CPUs (the intermediate ran pinned) */
    quiet_signals();
    retitle();
    close_others();
    ps_sampler_close_inherited();
    family_mark_own();
    notes_route();
    if (writers.started)
        writers.started();
    int pidfd = start_pidfd >= 0 ? start_pidfd : (int)syscall(SYS_pidfd_open, target, 0);
    long long next_checkpoint = checkpoint_ns ? now_ns() + checkpoint_ns : 0;
    for (;;) {
        int seen = __atomic_load_n(&ctl.doorbell, __ATOMIC_ACQUIRE);
        attach_asked();
        counters_asked();
        call_asked();
        say_queued();
        watch_children(0);
        notes_relay(); /* the lines of processes that ended before this one first */
        if (__atomic_load_n(&ctl.handoff, __ATOMIC_ACQUIRE) == 1) {
            __atomic_store_n(&ctl.handoff, 2, __ATOMIC_RELEASE);
            const char *why = ctl.has_why ? ctl.why : NULL;
            int ok = writers.write_end(why) == 0;
            __atomic_store_n(&ctl.written, ok ? 1 : 2, __ATOMIC_RELEASE);
            futex(&ctl.written, FUTEX_WAKE, INT_MAX, NULL);
            collector_exit();
        }
        struct pollfd p = {pidfd, POLLIN, 0};
        int dead = pidfd >= 0 ? poll(&p, 1, 0) == 1 : kill(target, 0) != 0 && errno == ESRCH;
        if (dead) {
            /* the hand-over may have come just before the end */
            if (__atomic_load_n(&ctl.handoff, __ATOMIC_ACQUIRE) == 1)
                continue;
            if (__atomic_load_n(&ctl.exec_written, __ATOMIC_ACQUIRE) || __atomic_load_n(&ctl.handoff, __ATOMIC_ACQUIRE))
                collector_exit();
            char how[128];
            how_it_ended(pidfd, target, how, sizeof how);
            writers.write_dead(how);
            collector_exit();
        }
        if (!__atomic_load_n(&ctl.handoff, __ATOMIC_ACQUIRE)) {
            snapshot_cpu();
            ps_modules_collector_tick(target, now_ns());
        }
        if (next_checkpoint && now_ns() >= next_checkpoint && writers.write_checkpoint) {
            writers.write_checkpoint();
            next_checkpoint = now_ns() + checkpoint_ns;
        }
        struct timespec tick = {0, TICK_MS * 1000000L};
        futex(&ctl.doorbell, FUTEX_WAIT, seen, &tick);
    }
}

/* The collector's stack (its fork of the intermediate runs on it for its
 * whole life): reserved, not committed; the writers' deepest use is far
 * below it.  A guard page under it. */
#define COLLECTOR_STACK ((size_t)8 << 20)
#define GUARD_BYTES ((size_t)1 << 16)

/* The intermediate: a session of its own (the job's signals to the
 * program's group miss the collector), then the collector forked. */
static int intermediate(void *arg)
{
    (void)arg;
    syscall(SYS_setsid);
    /* the collector's name from its first instant (inherited): psrun
     * --archive waits for its children by that name, however soon the
     * program ends */
    prctl(PR_SET_NAME, "psuite-collect", 0, 0, 0);
    pid_t c = _Fork();
    if (c == 0)
        collector_main();
    if (c > 0)
        __atomic_store_n(&ctl.collector, c, __ATOMIC_RELEASE); /* shared: the program reads it */
    return c < 0 ? 1 : 0;
}

int ps_collector_start(const ps_collector_writers_t *w)
{
    if (in_collector || ps_shared_active() == 0)
        return -1;
    writers = *w;
    if (!family && !family_parent) { /* the process psrun started */
        follow_children = ps_env_flag("PSUITE_FOLLOW");
        if (follow_children) {
            void *m = mmap(NULL, sizeof(family_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            family = m == MAP_FAILED ? NULL : m;
        }
    }
    const char *period = getenv("PSUITE_CHECKPOINT");
    checkpoint_ns = 0;
    if (period && *period) {
        char *end;
        double s = strtod(period, &end);
        if (*end == '\0' && s > 0 && s < 1e6)
            checkpoint_ns = (long long)(s * 1e9);
    }
    ctl.program = getpid();
    ctl.collector = 0;
    ctl.handoff = ctl.written = ctl.exec_written = ctl.has_why = ctl.count_asked = ctl.call_asked = 0;
    ps_lock_reset(&ctl.call_lock);
    /* The intermediate: a clone child that signals nobody when it ends
     * (exit signal 0), reaped here with __WCLONE, so the program sees no
     * SIGCHLD and no child.  It shares the program's memory (CLONE_VM, the
     * program's thread waiting meanwhile: CLONE_VFORK), so only the
     * collector's fork copies the page tables, and its end frees nothing;
     * it runs on a stack of its own, which becomes the collector's.  Every
     * signal is held meanwhile: no handler of the program may run in it. */
    int saved = errno;
    start_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    sigset_t all, was;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &was, _NSIG / 8);
    pin_to_this_cpu();
    pid_t mid = -1;
    char *stack = mmap(NULL, COLLECTOR_STACK + GUARD_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack != MAP_FAILED && mprotect(stack + GUARD_BYTES, COLLECTOR_STACK, PROT_READ | PROT_WRITE) == 0)
        mid = clone(intermediate, stack + GUARD_BYTES + COLLECTOR_STACK, CLONE_VM | CLONE_VFORK, NULL);
    else /* no room for a stack: a copy of the program's, as fork() gives */
        mid = (pid_t)syscall(SYS_clone, 0, NULL, NULL, NULL, NULL);
    if (mid == 0) /* the fork() above, in the intermediate */
        syscall(SYS_exit_group, intermediate(NULL));
    int status = 0;
    while (mid > 0 && waitpid(mid, &status, __WCLONE) < 0 && errno == EINTR)
        ;
    unpin();
    if (stack != MAP_FAILED) /* the collector has its copy */
        munmap(stack, COLLECTOR_STACK + GUARD_BYTES);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &was, NULL, _NSIG / 8);
    if (start_pidfd >= 0) /* the collector has its copy */
        close(start_pidfd);
    start_pidfd = -1;
    errno = saved;
    if (mid < 0) {
        ctl.collector = 0;
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || ctl.collector <= 0) {
        ctl.collector = 0;
        return -1;
    }
    return 0;
}

int ps_collector_running(void) { return !in_collector && ctl.collector > 0 && ctl.program == getpid(); }

/* The kernel gives the collector the status of a process that ended
 * (PIDFD_INFO_EXIT, Linux 6.15) even when its parent reaps it at once;
 * before it, only a zombie's stat tells, which a shell reaping at once
 * hides. */
int ps_collector_sees_deaths(void)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (!ps_collector_running() || uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
        return 0;
    return major > 6 || (major == 6 && minor >= 15);
}

/* In the program: the collector has ended.  kill(pid, 0) still finds it
 * while it is a zombie no one has reaped yet (a subreaper that waits for
 * nothing): its state in /proc says so. */
static int collector_gone(void)
{
    if (kill(ctl.collector, 0) != 0)
        return errno == ESRCH; /* EPERM (the program gave up its privileges): still there */
    char path[64], stat[512];
    ps_buf_t b;
    ps_buf_fixed(&b, path, sizeof path);
    ps_buf_str(&b, "/proc/");
    ps_buf_ll(&b, ctl.collector);
    ps_buf_str(&b, "/stat");
    if (ps_read_file(path, stat, sizeof stat) <= 0)
        return 0;
    const char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

int ps_collector_handoff(const char *why)
{
    if (!ps_collector_running())
        return 0;
    struct rusage ru; /* what the collector's writers take as the process's CPU time */
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        ctl.user_ns = ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL;
        ctl.sys_ns = ru.ru_stime.tv_sec * 1000000000LL + ru.ru_stime.tv_usec * 1000LL;
    }
    ctl.has_why = why != NULL;
    if (why)
        ps_strlcpy(ctl.why, why, sizeof ctl.why);
    __atomic_store_n(&ctl.written, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ctl.handoff, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&ctl.doorbell, 1, __ATOMIC_RELEASE);
    futex(&ctl.doorbell, FUTEX_WAKE, 1, NULL);
    /* Wait for the reports.  A collector that died (killed with the job)
     * never answers: after the bound the program writes them itself. */
    long long until = now_ns() + HANDOFF_WAIT_MS * 1000000LL;
    int w;
    while ((w = __atomic_load_n(&ctl.written, __ATOMIC_ACQUIRE)) == 0 && now_ns() < until) {
        struct timespec tick = {0, TICK_MS * 1000000L};
        futex(&ctl.written, FUTEX_WAIT, 0, &tick);
        /* EPERM (the program gave up its privileges) still means it is there */
        if (__atomic_load_n(&ctl.written, __ATOMIC_ACQUIRE) == 0 && collector_gone())
            break;
    }
    if (w != 0) /* written, or tried and said why: not again here */
        return 1;
    __atomic_store_n(&ctl.handoff, 0, __ATOMIC_RELEASE);
    return 0;
}

/* In the program: *slot set to 1 (asked), the collector woken, and its
 * answer waited for: within a tick unless it is writing (a checkpoint),
 * never from one that died.  The slot's last value (1: no answer), and
 * the slot back to 0, so that a late answer changes nothing. */
static int ask_collector(int *slot, long long wait_ms)
{
    __atomic_store_n(slot, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&ctl.doorbell, 1, __ATOMIC_RELEASE);
    futex(&ctl.doorbell, FUTEX_WAKE, 1, NULL);
    long long until = now_ns() + wait_ms * 1000000LL;
    int a;
    while ((a = __atomic_load_n(slot, __ATOMIC_ACQUIRE)) == 1 && now_ns() < until) {
        struct timespec tick = {0, TICK_MS * 1000000L};
        futex(slot, FUTEX_WAIT, 1, &tick);
        if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) == 1 && collector_gone())
            break;
    }
    __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
    return a;
}

/* In the program: a segment the arena grew by, attached by the collector
 * too before the program uses it.  0: no collector (one forked later
 * inherits it), 1: attached, -1: the collector has a mapping of its own
 * there (the caller may try another address), -2: no answer (the caller
 * gives the segment up).  The arena's lock serializes callers. */
int ps_collector_attach(int shmid, void *at)
{
    if (!ps_collector_running())
        return 0;
    ctl.attach_id = shmid;
    ctl.attach_at = at;
    int a = ask_collector(&ctl.attach, ATTACH_WAIT_MS);
    return a == 2 ? 1 : a == 3 ? -1 : -2;
}

/* In the program: op on the counters the collector holds; 0 when no
 * answer comes (the collector is gone).  Callers hold the counting set's
 * lock. */
int ps_collector_counters(int op, int *rc)
{
    if (!ps_collector_running())
        return 0;
    int saved = errno; /* the program's, whatever the wait leaves */
    ctl.count_op = op;
    int a = ask_collector(&ctl.count_asked, HANDOFF_WAIT_MS);
    errno = saved;
    if (a != 2)
        return 0;
    *rc = ctl.count_rc;
    return 1;
}

/* In the program: fn(a, b) run in the collector (a fork of the program:
 * the same code at the same addresses; a and b may point into shared
 * memory), for what only a process outside the program can hold (a
 * descriptor where the program's limit leaves no room).  1 and *rc its
 * result; 0 when no collector answers.  Not from a signal handler. */
int ps_collector_call(int (*fn)(long, long), long a, long b, int *rc)
{
    if (!ps_collector_running())
        return 0;
    int saved = errno;
    ps_lock_take(&ctl.call_lock);
    ctl.call_fn = fn;
    ctl.call_a = a;
    ctl.call_b = b;
    int answer = ask_collector(&ctl.call_asked, HANDOFF_WAIT_MS);
    int result = ctl.call_rc;
    ps_lock_give(&ctl.call_lock);
    errno = saved;
    if (answer != 2)
        return 0;
    *rc = result;
    return 1;
}

void ps_collector_exec_written(int on) { __atomic_store_n(&ctl.exec_written, on, __ATOMIC_RELEASE); }

/* In a forked child (its globals private already): the parent's collector
 * is not the child's. */
void ps_collector_after_fork(void)
{
    family_new();
    ctl.collector = 0;
    ctl.said_head = ctl.said_tail = 0;
}
