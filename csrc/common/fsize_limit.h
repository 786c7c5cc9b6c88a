/* fsize_limit.h - whether a write stays within the file size limit.
 *
 * A write(2) that would take a regular file past RLIMIT_FSIZE (ulimit -f)
 * raises SIGXFSZ, which by default kills the process: psuite's reports would
 * turn a program's clean exit into a crash.  So every write of psuite's files
 * asks first (ps_write_fits) and fails with EFBIG instead of writing past the
 * limit.  A file that others append to as well (the manifest that followed
 * processes share, standard error) can reach the limit between the question
 * and the write: those writes also hold SIGXFSZ blocked in this thread and
 * take back one they raised (ps_xfsz_hold/ps_xfsz_release), leaving one the
 * program had pending and its disposition as they were.
 * Async-signal-safe (system calls only).  Shared by the runtime and the psrun
 * launcher. */
#ifndef PSUITE_FSIZE_LIMIT_H
#define PSUITE_FSIZE_LIMIT_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 1 when n bytes written at fd's position (its end for O_APPEND) stay within
 * the limit, or when the limit does not apply (no limit, not a regular file,
 * the position unknown); else 0 with errno EFBIG. */
static inline int ps_write_fits(int fd, size_t n)
{
    int saved_errno = errno; /* unchanged when the answer is yes */
    struct rlimit rl;
    struct stat st;
    int fits = 1;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && fstat(fd, &st) == 0 &&
        S_ISREG(st.st_mode)) { /* the limit is on regular files only: pipes, terminals, /dev/null */
        int flags = fcntl(fd, F_GETFL);
        off_t pos = flags >= 0 && (flags & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
        fits = pos < 0 || (unsigned long long)pos + n <= (unsigned long long)rl.rlim_cur;
    }
    errno = fits ? saved_errno : EFBIG;
    return fits;
}

/* SIGXFSZ blocked in this thread around a write to a shared file; the raw
 * system call, not pthread_sigmask (inside a measured program that is
 * psuite's own wrapper, exitpaths.c). */
typedef struct {
    sigset_t saved;
    int was_pending;
} ps_xfsz_hold_t;

static inline void ps_xfsz_hold(ps_xfsz_hold_t *h)
{
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    sigpending(&pending);
    h->was_pending = sigismember(&pending, SIGXFSZ);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &xfsz, &h->saved, 8);
}

static inline void ps_xfsz_release(ps_xfsz_hold_t *h)
{
    int saved_errno = errno;
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    if (!h->was_pending) { /* raised by our write: taken back */
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGXFSZ))
            sigtimedwait(&xfsz, NULL, &zero);
    }
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &h->saved, NULL, 8);
    errno = saved_errno;
}

#endif
