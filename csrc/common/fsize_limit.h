/* fsize_limit.h - whether a write stays within the file size limit.
 *
 * A write(2) that would take a regular file past RLIMIT_FSIZE (ulimit -f)
 * raises SIGXFSZ, which by default kills the process: psuite's reports would
 * turn a program's clean exit into a crash.  Blocking or ignoring SIGXFSZ is
 * no way out (a blocked one stays pending for the program; the program's own
 * disposition must stay as it set it), so every write of psuite's files asks
 * first and fails with EFBIG instead of writing past the limit.
 * Async-signal-safe (system calls only).  Shared by the runtime and the psrun
 * launcher. */
#ifndef PSUITE_FSIZE_LIMIT_H
#define PSUITE_FSIZE_LIMIT_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when n bytes written at fd's position (its end for O_APPEND) stay within
 * the limit, or when the limit does not apply (no limit, not a regular file,
 * the position unknown); else 0 with errno EFBIG. */
static inline int ps_write_fits(int fd, size_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 1; /* the limit is on regular files only: pipes, terminals, /dev/null */
    int flags = fcntl(fd, F_GETFL);
    off_t pos = flags >= 0 && (flags & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
    if (pos < 0)
        return 1;
    if ((unsigned long long)pos + n > (unsigned long long)rl.rlim_cur) {
        errno = EFBIG;
        return 0;
    }
    return 1;
}

#endif
