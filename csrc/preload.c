/* preload.c - whole-program measurement for psrun.  With PSUITE_PRELOAD=1
 * in the environment, the library (loaded through LD_PRELOAD) interposes
 * __libc_start_main, starts counting right before main and writes the
 * report when the program exits.  The program's own behaviour, output and
 * exit status are untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static main_fn real_main;
static pid_t measured_pid;

static void report_at_exit(void)
{
    /* A child forked without exec inherits this handler: only the measured
     * process writes its report. */
    if (getpid() != measured_pid)
        return;
    ps_hwpc_stop(NULL);
    ps_hwpc_shutdown();
}

static void announce_dropped(void)
{
    if (getenv("PSUITE_CHECKED")) /* psrun already told the user */
        return;
    for (int i = 0, n = ps_hwpc_numrequested(); i < n; i++) {
        const char *name, *why;
        int status;
        if (ps_hwpc_eventstatus(i, &name, &status, &why) == PS_HWPC_OK && status != PS_EVENT_COUNTED)
            ps_message("%s not counted: %s", name, why);
    }
}

PS_API int ps_hwpc_psrun(void)
{
    int rc = ps_hwpc_init();
    announce_dropped();
    if (rc == PS_HWPC_ENOEVENT || rc == PS_HWPC_ENOCOUNT) {
        ps_message("nothing to count: %s", ps_hwpc_strerror(rc));
        return rc;
    }
    if (rc != PS_HWPC_OK)
        return rc;
    measured_pid = getpid();
    if (atexit(report_at_exit))
        return PS_HWPC_ESTATE;
    return ps_hwpc_start();
}

/* Take this library out of LD_PRELOAD so programs the measured one starts
 * are not measured (psrun without -f). */
static void unpreload_self(void)
{
    Dl_info info;
    const char *preload = getenv("LD_PRELOAD");
    if (!preload || !dladdr((void *)unpreload_self, &info) || !info.dli_fname)
        return;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    char kept[4096];
    size_t used = 0;
    const char *p = preload;
    while (*p) {
        size_t len = strcspn(p, ": ");
        const char *slash = memrchr(p, '/', len);
        const char *tok_base = slash ? slash + 1 : p;
        size_t base_len = len - (size_t)(tok_base - p);
        int mine = base_len == strlen(base) && memcmp(tok_base, base, base_len) == 0;
        if (!mine && len && used + len + 2 < sizeof kept) {
            if (used)
                kept[used++] = ':';
            memcpy(kept + used, p, len);
            used += len;
        }
        p += len;
        p += strspn(p, ": ");
    }
    kept[used] = '\0';
    if (used)
        setenv("LD_PRELOAD", kept, 1);
    else
        unsetenv("LD_PRELOAD");
}

static int measured_main(int argc, char **argv, char **envp)
{
    if (!getenv("PSUITE_FOLLOW"))
        unpreload_self();
    ps_hwpc_psrun();
    return real_main(argc, argv, envp);
}

PS_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end)
{
    start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real) { /* cannot happen with glibc; never leave the program without a start */
        ps_message("cannot find the C library's __libc_start_main; the program is not measured");
        _exit(127);
    }
    const char *on = getenv("PSUITE_PRELOAD");
    if (on && strcmp(on, "1") == 0) {
        real_main = main;
        main = measured_main;
    }
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}
