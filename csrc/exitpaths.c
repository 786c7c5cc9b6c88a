/* exitpaths.c - every way a measured program can end writes its report:
 * return from main and exit() (atexit, in preload.c), _exit()/_Exit(),
 * exec (the old image's report first), and fatal signals the program does
 * not handle itself.  On a signal the data are written, then the default
 * action is restored and the signal raised again, so the program dies of
 * the same signal with the same core behaviour; a watchdog re-raises it if
 * writing hangs (a signal in the middle of malloc, say). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define WATCHDOG_SECONDS 3

typedef void (*exit_fn)(int);

/* The reason given before an exec (finish() knows it by its address). */
const char ps_exec_why[] = "written before exec";

static void (*finish_fn)(const char *why);
/* The C library's _exit, looked up when measurement starts rather than
 * first in a vfork child or in a dying program. */
static exit_fn real__exit;
static void (*resume_fn)(void);

static const struct {
    int sig;
    const char *name;
} fatal[] = {
    {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"},
    {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGHUP, "SIGHUP"},
    {SIGQUIT, "SIGQUIT"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
    {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"},
};

/* ---- faults in threads that block them -------------------------------------
 * The kernel delivers a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS) even when it is blocked, but then with the default action, so
 * psuite's handler would never run.  Where the handler is psuite's, a
 * program's request to block one of these is kept in a per-thread view
 * (what it is told) and not applied; one sent by kill() while the program
 * believes it blocked is made pending, blocked for real, as it would be. */
static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
static __thread unsigned long fault_view; /* bit sig: blocked in the program's view only */
static void on_fatal(int sig, siginfo_t *si, void *uc);

static int handled_here(int sig)
{
    void *kact[4] = {0};
    return syscall(SYS_rt_sigaction, sig, NULL, kact, 8) == 0 && kact[0] == (void *)on_fatal;
}

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);

static int apply_mask(mask_fn real, int how, const sigset_t *set, sigset_t *old)
{
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    unsigned long view = fault_view, hidden = 0;
    sigset_t applied;
    const sigset_t *use = set;
    if (set && (how == SIG_BLOCK || how == SIG_SETMASK)) {
        applied = *set;
        for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
            if (sigismember(set, faults[i]) == 1 && handled_here(faults[i])) {
                sigdelset(&applied, faults[i]);
                hidden |= 1UL << faults[i];
            }
        use = &applied;
    }
    int rc = real(how, use, old);
    if (rc != 0)
        return rc;
    if (old)
        for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
            if (view & (1UL << faults[i]))
                sigaddset(old, faults[i]);
    if (set) {
        if (how == SIG_SETMASK)
            view = hidden;
        else if (how == SIG_BLOCK)
            view |= hidden;
        else if (how == SIG_UNBLOCK)
            for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
                if (sigismember(set, faults[i]) == 1)
                    view &= ~(1UL << faults[i]);
        fault_view = view;
    }
    return 0;
}

/* The C library's functions, looked up when measurement starts (a program
 * may first call them from a signal handler, where dlsym is not safe). */
static mask_fn real_sigprocmask, real_pthread_sigmask;

static void find_mask_fns(void)
{
    if (!real_sigprocmask)
        real_sigprocmask = (mask_fn)dlsym(RTLD_NEXT, "sigprocmask");
    if (!real_pthread_sigmask)
        real_pthread_sigmask = (mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
}

PS_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!real_sigprocmask)
        find_mask_fns();
    return apply_mask(real_sigprocmask, how, set, old);
}

PS_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!real_pthread_sigmask)
        find_mask_fns();
    int saved = errno;
    if (apply_mask(real_pthread_sigmask, how, set, old) == 0) {
        errno = saved;
        return 0;
    }
    return errno;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    if (si && si->si_code <= 0 && (fault_view & (1UL << sig)) && uc) {
        /* sent by kill() to a thread that believes it blocked: pending, and
         * blocked for real, with the handler back in place */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        int saved = errno;
        sigaction(sig, &sa, NULL);
        sigaddset(&((ucontext_t *)uc)->uc_sigmask, sig);
        fault_view &= ~(1UL << sig);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, NULL, 8);
        syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
        errno = saved;
        return;
    }
    /* SA_RESETHAND made the action the default, SA_NODEFER left the signal
     * unblocked: the watchdog's copy of it, or ours below, ends the process. */
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    int timer;
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &timer) == 0) {
        struct itimerspec its = {{0, 0}, {WATCHDOG_SECONDS, 0}};
        syscall(SYS_timer_settime, timer, 0, &its, NULL);
    }
    const char *name = "a signal";
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        if (fatal[i].sig == sig)
            name = fatal[i].name;
    char why[64] = "report written on ";
    strncat(why, name, sizeof why - strlen(why) - 1);
    if (finish_fn)
        finish_fn(why);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

/* ---- an alternate signal stack per thread ----------------------------------
 * A stack overflow's SIGSEGV can only be handled on another stack.  Each
 * thread without one of its own (the program's stays its own) gets one
 * large enough to write the report on, freed when the thread ends. */
#define ALT_GUARD 4096
#define ALT_SIZE (256 * 1024)

static pthread_key_t alt_key;
static pthread_once_t alt_once = PTHREAD_ONCE_INIT;

static void alt_release(void *mem)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == (char *)mem + ALT_GUARD && !(cur.ss_flags & SS_ONSTACK)) {
        stack_t off = {.ss_flags = SS_DISABLE};
        sigaltstack(&off, NULL);
    }
    munmap(mem, ALT_GUARD + ALT_SIZE);
}

static void alt_make_key(void) { pthread_key_create(&alt_key, alt_release); }

static void give_altstack(void)
{
    stack_t old;
    if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
        return; /* the thread has one: the program's */
    void *mem = mmap(NULL, ALT_GUARD + ALT_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mem == MAP_FAILED)
        return;
    mprotect(mem, ALT_GUARD, PROT_NONE);
    stack_t ss = {.ss_sp = (char *)mem + ALT_GUARD, .ss_size = ALT_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(mem, ALT_GUARD + ALT_SIZE);
        return;
    }
    pthread_once(&alt_once, alt_make_key);
    pthread_setspecific(alt_key, mem);
}

void ps_exitpaths_init(void (*finish)(const char *why), void (*resume)(void))
{
    finish_fn = finish;
    resume_fn = resume;
    real__exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    find_mask_fns();
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) {
        struct sigaction old, sa;
        /* Only where the default action would kill the program: a signal it
         * ignores (nohup, background jobs) or handles stays its own. */
        if (sigaction(fatal[i].sig, NULL, &old) || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal[i].sig, &sa, NULL);
    }
    give_altstack();
    ps_threads_on_start(give_altstack);
}

/* A program asking about one of these signals sees the default it set up
 * with, not psuite's handler. */
int ps_exitpaths_is_ours(const void *action)
{
    const struct sigaction *act = action;
    return act && (act->sa_flags & SA_SIGINFO) && act->sa_sigaction == on_fatal;
}

/* ---- _exit, _Exit, exec ---------------------------------------------------- */

PS_API void _exit(int status)
{
    if (!real__exit)
        real__exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    if (finish_fn)
        finish_fn("the program ended with _exit()");
    if (real__exit)
        real__exit(status);
    syscall(SYS_exit_group, status);
    for (;;)
        ;
}

PS_API void _Exit(int status) { _exit(status); }

/* The new image gets the mask the program believes it has. */
static void view_for_real(int how)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        if (fault_view & (1UL << faults[i]))
            sigaddset(&set, faults[i]);
    if (fault_view)
        syscall(SYS_rt_sigprocmask, how, &set, NULL, 8);
}

static void before_exec(void)
{
    view_for_real(SIG_BLOCK);
    if (finish_fn)
        finish_fn(ps_exec_why);
}

/* The exec failed and the program goes on: so does measurement, and the
 * program still sees the exec's errno. */
static void exec_failed(void)
{
    int saved = errno;
    view_for_real(SIG_UNBLOCK);
    if (resume_fn)
        resume_fn();
    errno = saved;
}

/* One wrapper per exec function of the C library: the report first, then
 * the real call; it returns only when the exec failed. */
#define EXEC_WRAPPER(name, params, args)                                                                               \
    PS_API int name params                                                                                             \
    {                                                                                                                  \
        static int(*real) params;                                                                                      \
        if (!real)                                                                                                     \
            real = (int(*) params)dlsym(RTLD_NEXT, #name);                                                             \
        if (!real) {                                                                                                   \
            errno = ENOSYS;                                                                                            \
            return -1;                                                                                                 \
        }                                                                                                              \
        before_exec();                                                                                                 \
        int rc = real args;                                                                                            \
        exec_failed();                                                                                                 \
        return rc;                                                                                                     \
    }

EXEC_WRAPPER(execve, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp))
EXEC_WRAPPER(execv, (const char *path, char *const argv[]), (path, argv))
EXEC_WRAPPER(execvp, (const char *path, char *const argv[]), (path, argv))
EXEC_WRAPPER(execvpe, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp))
EXEC_WRAPPER(fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp))

/* execl, execlp, execle: their arguments as a vector, then the v forms. */
#define MAX_EXEC_ARGS 4096
static int collect(const char *arg0, va_list ap, char **argv, char ***envp)
{
    int n = 0;
    argv[n++] = (char *)arg0;
    while (arg0 && n < MAX_EXEC_ARGS - 1 && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    argv[n] = NULL;
    if (envp)
        *envp = va_arg(ap, char **);
    return n;
}

PS_API int execl(const char *path, const char *arg0, ...)
{
    char *argv[MAX_EXEC_ARGS];
    va_list ap;
    va_start(ap, arg0);
    collect(arg0, ap, argv, NULL);
    va_end(ap);
    return execv(path, argv);
}

PS_API int execlp(const char *file, const char *arg0, ...)
{
    char *argv[MAX_EXEC_ARGS];
    va_list ap;
    va_start(ap, arg0);
    collect(arg0, ap, argv, NULL);
    va_end(ap);
    return execvp(file, argv);
}

PS_API int execle(const char *path, const char *arg0, ...)
{
    char *argv[MAX_EXEC_ARGS], **envp;
    va_list ap;
    va_start(ap, arg0);
    collect(arg0, ap, argv, &envp);
    va_end(ap);
    return execve(path, argv, envp);
}
