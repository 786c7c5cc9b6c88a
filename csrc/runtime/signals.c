/* signals.c - the signals psuite samples with, shared with the program:
 * SIGTRAP where perf_event delivers samples synchronously (attr.sigtrap,
 * sampler.c), SIGPROF for the other sources (F_SETSIG, POSIX timers, the
 * ITIMER_REAL sampler thread's signals).  While sampling, psuite's handler
 * stays installed on each; the program's sigaction()/signal() on them are
 * recorded instead and its own signals (its own setitimer, kill, raise, a
 * breakpoint's trap) are passed on to its handler as the kernel would run
 * it (its sa_mask, SA_NODEFER, SA_RESETHAND, SA_ONSTACK), or get their
 * default action, the report written first.  psrun says once that the
 * program handles one of them or uses an interval timer. */
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

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define TRAP_PERF_CODE TRAP_PERF

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);

/* Up to two signals owned at once: SIGTRAP (sampling) and SIGPROF (a
 * thread whose source fell back to a timer). */
#define OWNED_MAX 2
typedef struct {
    int sig;                               /* 0: free */
    struct sigaction program_action;       /* what the program asked for on it */
    struct sigaction ours;                 /* psuite's action on it, as the sampler asked */
    int ours_onstack;                      /* SA_ONSTACK added to ours (see mirror_onstack) */
    int dying;                             /* the program dies of it: its report is being written */
    int warned;                            /* psrun said the program handles it */
} owned_t;
static owned_t owned[OWNED_MAX];
static __thread unsigned forwarded[OWNED_MAX]; /* the program's own signals that reached ps_signals_forward */
static int warned_timer;

static sigaction_fn real_sigaction(void)
{
    static sigaction_fn real;
    if (!real)
        real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return real;
}

static owned_t *slot_of(int sig)
{
    for (int i = 0; sig > 0 && i < OWNED_MAX; i++)
        if (__atomic_load_n(&owned[i].sig, __ATOMIC_ACQUIRE) == sig)
            return &owned[i];
    return NULL;
}

int ps_signals_owned(int sig) { return slot_of(sig) != NULL; }

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
static void mirror_onstack(owned_t *o, const struct sigaction *program)
{
    int want = is_handler(program) && (program->sa_flags & SA_ONSTACK);
    if (want == o->ours_onstack || !real_sigaction())
        return;
    struct sigaction sa = o->ours;
    if (want)
        sa.sa_flags |= SA_ONSTACK;
    if (real_sigaction()(o->sig, &sa, NULL) == 0)
        o->ours_onstack = want;
}

int ps_signals_take(int sig, const void *action)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return -1;
    if (slot_of(sig))
        return 0; /* taken already (a fork's child keeps its parent's) */
    owned_t *o = NULL;
    for (int i = 0; i < OWNED_MAX && !o; i++)
        if (!owned[i].sig)
            o = &owned[i];
    if (!o) {
        errno = EBUSY;
        return -1;
    }
    memset(&o->program_action, 0, sizeof o->program_action);
    o->program_action.sa_handler = SIG_DFL;
    struct sigaction old;
    if (real(sig, action, &old))
        return -1;
    ps_exitpaths_noted(sig, action);
    o->ours = *(const struct sigaction *)action;
    o->ours_onstack = (o->ours.sa_flags & SA_ONSTACK) != 0;
    /* set before main (a constructor): keep it; psuite's own report-on-signal is not the program's */
    if (old.sa_handler != SIG_DFL && !ps_exitpaths_is_ours(&old))
        o->program_action = old;
    __atomic_store_n(&o->sig, sig, __ATOMIC_RELEASE);
    mirror_onstack(o, &o->program_action);
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

/* A synchronous trap the kernel forces (a breakpoint's, a single step's):
 * ignored or blocked, the kernel would have given it the default action. */
static int forced_trap(int sig, const siginfo_t *si)
{
    return sig == SIGTRAP && si && si->si_code > 0 && si->si_code != TRAP_PERF_CODE;
}

void ps_signals_forward(int sig, void *si, void *uc)
{
    owned_t *o = slot_of(sig);
    if (!o)
        return;
    __atomic_fetch_add(&forwarded[o - owned], 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&o->dying, __ATOMIC_SEQ_CST)) {
        /* more of the program's own while the report is written: it dies
         * of the first; the watchdog's, if writing hangs, ends it now */
        if (ps_exitpaths_is_watchdog(si))
            die_of(sig);
        return;
    }
    struct sigaction a = o->program_action;
    if (a.sa_handler == SIG_IGN && !forced_trap(sig, si))
        return;
    if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN) {
        /* SIGPROF's default is to terminate, SIGTRAP's to dump core: the
         * report, then the same signal.  The signal is unblocked for the
         * watchdog's to come in. */
        if (__atomic_exchange_n(&o->dying, 1, __ATOMIC_SEQ_CST))
            return;
        block(SIG_UNBLOCK, sig);
        ps_exitpaths_signal_report(sig);
        die_of(sig);
        return;
    }
    if (a.sa_flags & SA_RESETHAND) /* the first delivery resets it, as the kernel does (flags kept) */
        o->program_action.sa_handler = SIG_DFL;
    run_handler(&a, sig, si, uc);
}

PS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    owned_t *o = slot_of(sig);
    if (!o) {
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
    struct sigaction now = act ? *act : o->program_action; /* act and old may be the same */
    if (old)
        *old = o->program_action;
    if (act) {
        o->program_action = now;
        mirror_onstack(o, &now);
        if (!o->warned && is_handler(&now)) {
            o->warned = 1;
            const char *name = sig == SIGTRAP ? "SIGTRAP" : "SIGPROF";
            ps_note("the program installs its own %s handler: it keeps working and gets its own %s "
                    "signals; the profile is unaffected", name, name);
        }
    }
    return 0;
}

PS_API sighandler_t signal(int sig, sighandler_t handler)
{
    if (!ps_signals_owned(sig)) {
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

/* raise() of a signal psuite samples with.  A standard signal is not
 * queued twice: sent while one of psuite's samples is pending for the
 * thread (glibc's raise() blocks every signal around its tgkill; a sample
 * can also be queued during the system call itself), the program's is
 * dropped and only the sample is delivered.  So it is sent directly, and
 * when the thread, not blocking it, returns from tgkill without having run
 * it through ps_signals_forward, it is sent again.  (A kill() to the
 * process can still be lost in a sample: only a queued real-time signal
 * for sampling, in sampler.c, would avoid that.)  Sent while the thread
 * blocks it, a pending sample is taken off for it (ps_signals_unpend_samples). */
int ps_signals_unpend_samples(int sig)
{
    uint64_t bit = 1ULL << (sig - 1), pending = 0;
    siginfo_t own[2];
    int nown = 0;
    /* a standard signal: at most one pending for the thread, one for the process */
    for (int k = 0; k < 2; k++) {
        if (syscall(SYS_rt_sigpending, &pending, 8) != 0 || !(pending & bit))
            break;
        siginfo_t si;
        struct timespec zero = {0, 0};
        memset(&si, 0, sizeof si);
        if (syscall(SYS_rt_sigtimedwait, &bit, &si, &zero, 8) != sig)
            break;
        if (!ps_sampler_is_sample(sig, &si))
            own[nown++] = si;
    }
    /* put back, to this thread (allowed for kernel codes when sent to oneself) */
    for (int k = 0; k < nown; k++)
        syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), sig, &own[k]);
    return nown > 0;
}

PS_API int raise(int sig)
{
    owned_t *o = slot_of(sig);
    if (o) {
        unsigned *mine = &forwarded[o - owned];
        for (int tries = 0; tries < 16; tries++) {
            unsigned before = __atomic_load_n(mine, __ATOMIC_SEQ_CST);
            if (syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig) != 0)
                return -1;
            if (__atomic_load_n(mine, __ATOMIC_SEQ_CST) != before)
                return 0;
            sigset_t now;
            if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, 8) != 0)
                return 0;
            /* blocked: pending, as it would be - unless a sample pending
             * first took its place; the sample is dropped, it is sent again */
            if (sigismember(&now, sig) == 1 && ps_signals_unpend_samples(sig))
                return 0;
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
    if ((owned[0].sig || owned[1].sig) && value && (value->it_value.tv_sec || value->it_value.tv_usec) && !warned_timer) {
        warned_timer = 1;
        ps_note("the program sets its own interval timer: it keeps working; psuite samples with per-thread "
                "sources of its own");
    }
    return real ? real(which, value, old) : -1;
}
