/* signals.c - SIGPROF shared with the program.  While sampling, psuite's
 * handler stays installed; the program's sigaction()/signal() on SIGPROF
 * are recorded instead and its SIGPROF signals (its own setitimer, kill)
 * are passed on to its handler as the kernel would run it (its sa_mask,
 * SA_NODEFER, SA_RESETHAND, SA_ONSTACK), or get their default action, the
 * report written first.  psrun says once that the program uses SIGPROF or
 * an interval timer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);

static int owned_sig;                      /* the signal we sample with, 0: none */
static struct sigaction program_action;    /* what the program asked for on it */
static struct sigaction ours;              /* psuite's action on it, as the sampler asked */
static int ours_onstack;                   /* SA_ONSTACK added to ours (see mirror_onstack) */
static int dying;                          /* the program dies of it: its report is being written */
static __thread unsigned forwarded;         /* the program's own SIGPROF signals that reached ps_signals_forward */
static int warned_handler, warned_timer;

static sigaction_fn real_sigaction(void)
{
    static sigaction_fn real;
    if (!real)
        real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return real;
}

int ps_signals_owned(int sig) { return owned_sig && sig == owned_sig; }

static int is_handler(const struct sigaction *a) { return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN; }

/* SA_ONSTACK.  The kernel picks the stack of a delivery from the action
 * installed, psuite's: its handler runs where the thread was interrupted
 * (the sampler does not ask for SA_ONSTACK), and the program's handler,
 * called from it, runs there too.  Honouring the program's SA_ONSTACK
 * therefore means asking for it in psuite's installed action while the
 * program's action has it: the kernel then puts the delivery on the
 * thread's alternate stack unless it is already on it, exactly as it
 * would for the program (a Go runtime, say, checks that it is on its
 * signal stack).  Switching stacks by hand inside psuite's handler instead
 * would need assembly, and could not know the frame the kernel leaves.
 * Where the program set no alternate stack in a thread, that thread has
 * psuite's (exitpaths.c, for reports on stack overflow): the program's
 * handler then runs there rather than on the interrupted stack, with more
 * room than it would have had, never less, and psuite's own sampling
 * handler, which needs little, runs on the same stack as the program's. */
static void mirror_onstack(const struct sigaction *program)
{
    int want = is_handler(program) && (program->sa_flags & SA_ONSTACK);
    if (want == ours_onstack || !real_sigaction())
        return;
    struct sigaction sa = ours;
    if (want)
        sa.sa_flags |= SA_ONSTACK;
    if (real_sigaction()(owned_sig, &sa, NULL) == 0)
        ours_onstack = want;
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
    ps_exitpaths_noted(sig, action);
    ours = *(const struct sigaction *)action;
    ours_onstack = (ours.sa_flags & SA_ONSTACK) != 0;
    /* set before main (a constructor): keep it; psuite's own report-on-signal is not the program's */
    if (old.sa_handler != SIG_DFL && !ps_exitpaths_is_ours(&old))
        program_action = old;
    owned_sig = sig;
    mirror_onstack(&program_action);
    return 0;
}

static void block(int how, int sig)
{
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    syscall(SYS_rt_sigprocmask, how, &one, NULL, 8);
}

/* The default action, now: the report is written (or the watchdog fired). */
static void die_of(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction()(sig, &dfl, NULL);
    block(SIG_UNBLOCK, sig);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

/* The program's handler with the mask the kernel would give it: the
 * interrupted mask, its sa_mask, and the signal itself unless SA_NODEFER
 * (psuite's handler runs with the signal blocked, so SA_NODEFER unblocks
 * it); set with the raw system call (no wrapper, nothing else changed),
 * then psuite's restored.  glibc's own signals are never blocked, and the
 * faults psuite reports are blocked in the program's view only, as
 * sigprocmask() does with them (exitpaths.c). */
static void run_handler(const struct sigaction *a, int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    sigset_t during, add, before;
    if (uc)
        during = uc->uc_sigmask;
    else
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &during, 8);
    add = a->sa_mask;
    uint64_t w; /* signals 1..64, bit sig-1 (sigdelset refuses glibc's own) */
    memcpy(&w, &add, sizeof w);
    for (int s = 32; s < SIGRTMIN; s++)
        w &= ~(1ULL << (s - 1));
    memcpy(&add, &w, sizeof w);
    if (a->sa_flags & SA_NODEFER)
        sigdelset(&during, sig);
    else
        sigaddset(&add, sig);
    unsigned long view = ps_exitpaths_enter_mask(&add);
    sigorset(&during, &during, &add);
    sigdelset(&during, SIGKILL);
    sigdelset(&during, SIGSTOP);
    int changed = syscall(SYS_rt_sigprocmask, SIG_SETMASK, &during, &before, 8) == 0;
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, si, ucv);
    else
        a->sa_handler(sig);
    if (changed)
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &before, NULL, 8);
    ps_exitpaths_leave_mask(view);
}

void ps_signals_forward(int sig, void *si, void *uc)
{
    __atomic_fetch_add(&forwarded, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&dying, __ATOMIC_SEQ_CST)) {
        /* more of the program's own while the report is written: it dies
         * of the first; the watchdog's, if writing hangs, ends it now */
        if (ps_exitpaths_is_watchdog(si))
            die_of(sig);
        return;
    }
    struct sigaction a = program_action;
    if (a.sa_handler == SIG_IGN)
        return;
    if (a.sa_handler == SIG_DFL) {
        /* SIGPROF's default is to terminate: the report, then the same
         * signal.  The signal is unblocked for the watchdog's to come in. */
        if (__atomic_exchange_n(&dying, 1, __ATOMIC_SEQ_CST))
            return;
        block(SIG_UNBLOCK, sig);
        ps_exitpaths_signal_report(sig);
        die_of(sig);
        return;
    }
    if (a.sa_flags & SA_RESETHAND) /* the first delivery resets it, as the kernel does (flags kept) */
        program_action.sa_handler = SIG_DFL;
    run_handler(&a, sig, si, uc);
}

PS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!owned_sig || sig != owned_sig) {
        struct sigaction reported;
        if (act && act->sa_handler == SIG_DFL && ps_exitpaths_default_action(sig, &reported))
            act = &reported; /* the default, with the report first (exitpaths.c) */
        int rc = real ? real(sig, act, old) : -1;
        if (rc == 0 && old && ps_exitpaths_is_ours(old)) { /* psuite's report-on-signal: the program set none */
            memset(old, 0, sizeof *old);
            old->sa_handler = SIG_DFL;
        }
        if (rc == 0 && act) /* psuite's report-on-signal replaced, or put back */
            ps_exitpaths_noted(sig, act);
        return rc;
    }
    struct sigaction now = act ? *act : program_action; /* act and old may be the same */
    if (old)
        *old = program_action;
    if (act) {
        program_action = now;
        mirror_onstack(&now);
        if (!warned_handler && is_handler(&now)) {
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
        struct sigaction dfl, before;
        if (handler == SIG_DFL && ps_exitpaths_default_action(sig, &dfl)) /* as sigaction() does */
            return sigaction(sig, &dfl, &before) ? SIG_ERR : before.sa_handler;
        int reported = ps_exitpaths_handles(sig);
        sighandler_t old = real(sig, handler);
        if (old == SIG_ERR)
            return old;
        ps_exitpaths_noted(sig, NULL); /* the program's own now */
        return reported ? SIG_DFL : old;
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

/* The other names of signal(): bsd_signal (signal()'s own semantics), and
 * sysv_signal, which strict C programs (gcc -std=c99: no _DEFAULT_SOURCE)
 * call for every signal() as __sysv_signal.  Through sigaction() above, so
 * that psuite knows of the handler the program sets. */
PS_API sighandler_t bsd_signal(int sig, sighandler_t handler) { return signal(sig, handler); }

PS_API sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
    struct sigaction act, old;
    if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = SA_RESETHAND | SA_NODEFER; /* the System V semantics */
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old))
        return SIG_ERR;
    return old.sa_handler;
}

PS_API sighandler_t sysv_signal(int sig, sighandler_t handler) { return __sysv_signal(sig, handler); }

/* raise() of the signal psuite samples with.  A standard signal is not
 * queued twice: sent while one of psuite's samples is pending for the
 * thread (glibc's raise() blocks every signal around its tgkill; a sample
 * can also be queued during the system call itself), the program's is
 * dropped and only the sample is delivered.  So it is sent directly, and
 * when the thread, not blocking it, returns from tgkill without having run
 * it through ps_signals_forward, it is sent again.  (A kill() to the
 * process, or a signal sent while the program blocks SIGPROF, can still be
 * lost in a sample: only a queued real-time signal for sampling, in
 * sampler.c, would avoid that.) */
PS_API int raise(int sig)
{
    if (owned_sig && sig == owned_sig) {
        for (int tries = 0; tries < 16; tries++) {
            unsigned before = __atomic_load_n(&forwarded, __ATOMIC_SEQ_CST);
            if (syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig) != 0)
                return -1;
            if (__atomic_load_n(&forwarded, __ATOMIC_SEQ_CST) != before)
                return 0;
            sigset_t now;
            if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, 8) != 0 || sigismember(&now, sig) == 1)
                return 0; /* blocked: pending, as it would be */
        }
        return 0;
    }
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "raise");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(sig);
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
