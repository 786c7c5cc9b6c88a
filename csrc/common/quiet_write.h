/* quiet_write.h - write(2) whole or not at all, with any SIGPIPE it raises
 * consumed: the caller's signal mask and dispositions are left as they were.
 * Shared by the library (its messages, also from the fatal-signal handler:
 * only async-signal-safe calls) and the psrun launcher.  The mask is changed
 * by the system call itself, not through pthread_sigmask: inside a measured
 * program that is psuite's own wrapper (exitpaths.c), which rewrites the
 * program's view of the faults.  Nothing is written to a regular file the
 * line would take past the file size limit (fsize_limit.h). */
#ifndef PSUITE_QUIET_WRITE_H
#define PSUITE_QUIET_WRITE_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fsize_limit.h"

static inline void ps_write_quietly(int fd, const char *s, size_t n)
{
    sigset_t pipe_only, saved, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    int saved_errno = errno;
    if (!ps_write_fits(fd, n)) { /* standard error is a file at its size limit: the line is lost, not the program */
        errno = saved_errno;
        return;
    }
    ps_xfsz_hold_t xfsz; /* the program's own writes may reach the limit in between */
    ps_xfsz_hold(&xfsz);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &pipe_only, &saved, 8);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        s += w;
        n -= (size_t)w;
    }
    if (!was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE))
            sigtimedwait(&pipe_only, NULL, &zero);
    }
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, 8);
    ps_xfsz_release(&xfsz);
    errno = saved_errno;
}

#endif
