/* signals.c - SIGPROF shared with the program.  While sampling, psuite's
 * handler stays installed; the program's sigaction()/signal() on SIGPROF
 * are recorded instead and its SIGPROF signals (its own setitimer, kill)
 * are passed on to its handler, or get their default action.  psrun says
 * once that the program uses SIGPROF or an interval timer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);

static int owned_sig;                      /* the signal we sample with, 0: none */
static struct sigaction program_action;    /* what the program asked for on it */
static int warned_handler, warned_timer;

static sigaction_fn real_sigaction(void)
{
    static sigaction_fn real;
    if (!real)
        real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return real;
}

int ps_signals_take(int sig, const void *action)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return -1;
    memset(&program_action, 0, sizeof program_action);
    program_action.sa_handler = SIG_DFL;
    struct sigaction old;
    if (real(sig, action, &old))
        return -1;
    if (old.sa_handler != SIG_DFL) /* set before main (a constructor): keep it */
        program_action = old;
    owned_sig = sig;
    return 0;
}

void ps_signals_forward(int sig, void *si, void *uc)
{
    struct sigaction *a = &program_action;
    if (a->sa_flags & SA_SIGINFO) {
        a->sa_sigaction(sig, si, uc);
    } else if (a->sa_handler == SIG_IGN) {
        return;
    } else if (a->sa_handler == SIG_DFL) {
        /* SIGPROF's default is to terminate: do so with the same signal. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        real_sigaction()(sig, &dfl, NULL);
        syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig); /* delivered when the handler returns */
    } else {
        a->sa_handler(sig);
    }
}

PS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!owned_sig || sig != owned_sig) {
        int rc = real ? real(sig, act, old) : -1;
        if (rc == 0 && old && ps_exitpaths_is_ours(old)) { /* psuite's report-on-signal: the program set none */
            memset(old, 0, sizeof *old);
            old->sa_handler = SIG_DFL;
        }
        return rc;
    }
    if (old)
        *old = program_action;
    if (act) {
        program_action = *act;
        if (!warned_handler && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN) {
            warned_handler = 1;
            ps_note("the program installs its own SIGPROF handler: it keeps working and gets its own SIGPROF "
                    "signals; the profile is unaffected");
        }
    }
    return 0;
}

PS_API sighandler_t signal(int sig, sighandler_t handler)
{
    if (!owned_sig || sig != owned_sig) {
        static sighandler_t (*real)(int, sighandler_t);
        if (!real)
            real = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
        if (!real)
            return SIG_ERR;
        struct sigaction before;
        int ours = real_sigaction() && real_sigaction()(sig, NULL, &before) == 0 && ps_exitpaths_is_ours(&before);
        sighandler_t old = real(sig, handler);
        return ours && old != SIG_ERR ? SIG_DFL : old;
    }
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART; /* glibc's signal() is BSD-style */
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old))
        return SIG_ERR;
    return old.sa_handler;
}

PS_API int setitimer(__itimer_which_t which, const struct itimerval *value, struct itimerval *old)
{
    static setitimer_fn real;
    if (!real)
        real = (setitimer_fn)dlsym(RTLD_NEXT, "setitimer");
    if (owned_sig && value && (value->it_value.tv_sec || value->it_value.tv_usec) && !warned_timer) {
        warned_timer = 1;
        ps_note("the program sets its own interval timer: it keeps working; psuite samples with per-thread "
                "sources of its own");
    }
    return real ? real(which, value, old) : -1;
}
