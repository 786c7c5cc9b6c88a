/* util.c - small helpers: bounded copies, messages to stderr, /proc reads. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

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

/* A note (not an error): a message unless PSUITE_QUIET=1 (psrun -q). */
void ps_note(const char *fmt, ...)
{
    if (ps_env_flag("PSUITE_QUIET"))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ps_message("%s", line);
}

/* One line on stderr, prefixed "psrun:" under psrun and "pshwpc:" when the
 * API is linked into a program.  Written with a single write() so lines from
 * several processes do not interleave; never to stdout. */
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
    int saved = errno;
    ssize_t w = write(2, line, n);
    (void)w;
    errno = saved;
}

int ps_read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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

void ps_tid_times(int tid, long long cpu_ns, long long *user_ns, long long *sys_ns)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    int n = ps_read_file(path, buf, sizeof buf);
    const char *p = n > 0 ? strrchr(buf, ')') : NULL;
    unsigned long long ut = 0, st = 0;
    /* after "pid (comm)": state is field 3, utime 14, stime 15 (in ticks: the
     * split only); p ends on the blank before field 14 */
    for (int field = 3; p && field <= 14; field++)
        p = strchr(p + 1, ' ');
    if (p && sscanf(p + 1, "%llu %llu", &ut, &st) == 2 && ut + st > 0 && cpu_ns > 0) {
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
void ps_settle_thread_times(void)
{
    if (!ps_threads_created())
        return;
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
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
            if (tid > 0)
                ps_tid_cpu_ns(tid);
            if (!reclen)
                break;
            off += reclen;
        }
    }
    close(fd);
}
