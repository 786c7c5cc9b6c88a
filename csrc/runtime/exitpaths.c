/* exitpaths.c - every way a measured program can end writes its report:
 * return from main and exit() (atexit, in preload.c), _exit()/_Exit(),
 * quick_exit(), exec (the old image's report first), and fatal signals the
 * program does not handle itself: every signal whose default action ends
 * the process, the real-time ones included.  Under psrun a fatal signal is
 * normally the collector's to see (the process dies as bare, and the
 * collector writes what was measured); the actions below are installed
 * only where the process must write its report itself (see
 * ps_exitpaths_hook_fatal).  On a signal the data are then written, the
 * default action restored and the signal raised again, so the program dies
 * of the same signal with the same core behaviour; a watchdog re-raises it
 * if writing hangs (a signal in the middle of malloc, say). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

#define WATCHDOG_SECONDS 3

typedef void (*exit_fn)(int);

/* The reason given before an exec (finish() knows it by its address). */
const char ps_exec_why[] = "written before exec";

static void (*finish_fn)(const char *why);
static int fatal_hooked; /* ps_exitpaths_hook_fatal ran */
/* The C library's _exit, looked up when measurement starts rather than
 * first in a vfork child or in a dying program. */
static exit_fn real__exit, real_quick_exit;
static void (*resume_fn)(void);

/* Every signal whose default action ends the process, but SIGKILL (cannot
 * be caught) and the real-time ones (SIGRTMIN..SIGRTMAX, known at run time:
 * glibc keeps the first few for itself), which are added to these. */
static const struct {
    int sig;
    const char *name;
} fatal[] = {
    {SIGSEGV, "SIGSEGV"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},       {SIGABRT, "SIGABRT"},
    {SIGTRAP, "SIGTRAP"},     {SIGSYS, "SIGSYS"},   {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},       {SIGHUP, "SIGHUP"},
    {SIGQUIT, "SIGQUIT"},     {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"},     {SIGUSR2, "SIGUSR2"},
    {SIGXCPU, "SIGXCPU"},     {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGIO, "SIGIO"},
    {SIGPWR, "SIGPWR"},       {SIGSTKFLT, "SIGSTKFLT"},
};

/* The signal's name, as kill -l gives it (SIGRTMIN+3, SIGRTMAX-2):
 * async-signal-safe, into buf (at least 16 bytes). */
static const char *sig_name(int sig, char *buf)
{
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        if (fatal[i].sig == sig)
            return fatal[i].name;
    int lo = SIGRTMIN, hi = SIGRTMAX;
    if (sig < lo || sig > hi)
        return "a signal";
    const char *base = "SIGRTMIN";
    char op = '+';
    int n = sig - lo;
    if (n > (hi - lo) / 2) {
        base = "SIGRTMAX";
        op = '-';
        n = hi - sig;
    }
    size_t k = 0;
    for (; base[k]; k++)
        buf[k] = base[k];
    if (n) {
        buf[k++] = op;
        if (n >= 10)
            buf[k++] = (char)('0' + n / 10);
        buf[k++] = (char)('0' + n % 10);
    }
    buf[k] = '\0';
    return buf;
}

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

/* Bit sig-1: psuite's on_fatal is the signal's action.  Kept here rather
 * than asked of the kernel, so that the program's mask calls cost no extra
 * system call: set where psuite installs it, cleared when the program sets
 * an action of its own (the sigaction() and signal() wrappers, signals.c,
 * tell ps_exitpaths_noted).  The kernel's SA_RESETHAND reset of a fatal
 * signal is not seen, but then the process is dying of it. */
static uint64_t installed;

static int handled_here(int sig)
{
    return sig > 0 && sig <= 64 && (__atomic_load_n(&installed, __ATOMIC_RELAXED) >> (sig - 1)) & 1;
}

int ps_exitpaths_handles(int sig) { return handled_here(sig); }

void ps_exitpaths_noted(int sig, const void *action)
{
    if (sig <= 0 || sig > 64)
        return;
    uint64_t bit = 1ULL << (sig - 1);
    if (ps_exitpaths_is_ours(action))
        __atomic_fetch_or(&installed, bit, __ATOMIC_RELAXED);
    else
        __atomic_fetch_and(&installed, ~bit, __ATOMIC_RELAXED);
}

/* A program's handler run by psuite (signals.c) gets set blocked, but the
 * faults psuite reports, which are hidden as sigprocmask() hides them (a
 * crash in the handler still writes the report); returns the view to
 * restore after the handler. */
unsigned long ps_exitpaths_enter_mask(sigset_t *set)
{
    unsigned long saved = fault_view;
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        if (sigismember(set, faults[i]) == 1 && handled_here(faults[i])) {
            sigdelset(set, faults[i]);
            fault_view |= 1UL << faults[i];
        }
    return saved;
}

void ps_exitpaths_leave_mask(unsigned long saved) { fault_view = saved; }

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);

/* Signals 1..64 as the first word of a sigset_t holds them (bit sig-1). */
#define SIGBIT(s) (1ULL << ((s) - 1))
#define FAULT_BITS (SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) | SIGBIT(SIGILL) | SIGBIT(SIGTRAP) | SIGBIT(SIGSYS))

static uint64_t first_word(const sigset_t *set)
{
    uint64_t w;
    memcpy(&w, set, sizeof w);
    return w;
}

/* No system call but the program's own: word operations on the set and
 * on psuite's installed actions, as kept in memory. */
static int apply_mask(mask_fn real, int how, const sigset_t *set, sigset_t *old)
{
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    unsigned long view = fault_view, hidden = 0;
    uint64_t asked = set ? first_word(set) & FAULT_BITS : 0;
    sigset_t applied;
    const sigset_t *use = set;
    if (asked && (how == SIG_BLOCK || how == SIG_SETMASK)) {
        uint64_t h = asked & __atomic_load_n(&installed, __ATOMIC_RELAXED);
        if (h) {
            applied = *set;
            uint64_t w = first_word(set) & ~h;
            memcpy(&applied, &w, sizeof w);
            use = &applied;
            hidden = (unsigned long)(h << 1); /* fault_view: bit sig */
        }
    }
    int rc = real(how, use, old);
    if (rc != 0)
        return rc;
    if (old && view) {
        uint64_t w = first_word(old) | (uint64_t)(view >> 1);
        memcpy(old, &w, sizeof w);
    }
    if (set) {
        if (how == SIG_SETMASK)
            view = hidden;
        else if (how == SIG_BLOCK)
            view |= hidden;
        else if (how == SIG_UNBLOCK)
            view &= ~(unsigned long)(asked << 1);
        if (view != fault_view)
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
    if (si && si->si_code <= 0 && sig < 64 && (fault_view & (1UL << sig)) && uc) {
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
    ps_exitpaths_signal_report(sig);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

/* The watchdog's signal carries this value (not the sampler's tag). */
#define WATCHDOG_VALUE ((0x7064 << 16) | 0x6f67)

int ps_exitpaths_is_watchdog(const void *siginfo)
{
    const siginfo_t *si = siginfo;
    return si && si->si_code == SI_TIMER && si->si_value.sival_int == WATCHDOG_VALUE;
}

/* The report of a process dying of sig, on the thread it was delivered to,
 * with a watchdog that sends sig to this thread if writing hangs (the
 * caller makes sure that it then ends the process). */
void ps_exitpaths_signal_report(int sig)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_value.sival_int = WATCHDOG_VALUE;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    int timer;
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &timer) == 0) {
        struct itimerspec its = {{0, 0}, {WATCHDOG_SECONDS, 0}};
        syscall(SYS_timer_settime, timer, 0, &its, NULL);
    }
    char buf[16];
    const char *name = sig_name(sig, buf);
    char why[64] = "report written on ";
    strncat(why, name, sizeof why - strlen(why) - 1);
    if (finish_fn)
        finish_fn(why);
}

/* A real-time signal's name as kill -l gives it (SIGRTMIN+2), in buf
 * (16 bytes); NULL for any other signal. */
const char *ps_rt_signal_name(int sig, char *buf)
{
    return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig_name(sig, buf) : NULL;
}

static int is_fatal(int sig)
{
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        if (fatal[i].sig == sig)
            return 1;
    return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

static void fill_action(struct sigaction *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sa_sigaction = on_fatal;
    sa->sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa->sa_mask);
}

/* The program sets the default action of sig (often restoring the action
 * sigaction() told it of, after a handler of its own): where the default
 * ends the process, psuite's action is what is installed (a struct
 * sigaction into action; returns 1), so that it still writes the report. */
int ps_exitpaths_default_action(int sig, void *action)
{
    if (!finish_fn || !fatal_hooked || !is_fatal(sig) || ps_signals_owned(sig))
        return 0;
    fill_action(action);
    return 1;
}

static void hook_fatal(int sig)
{
    struct sigaction old, sa;
    /* Only where the default action would kill the program: a signal it
     * ignores (nohup, background jobs) or handles stays its own, and so
     * does the one psuite samples with (signals.c reports the program's
     * own, when their action is the default). */
    if (ps_signals_owned(sig) || sigaction(sig, NULL, &old) || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    fill_action(&sa);
    if (sigaction(sig, &sa, NULL) == 0)
        ps_exitpaths_noted(sig, &sa);
}

void ps_exitpaths_init(void (*finish)(const char *why), void (*resume)(void))
{
    finish_fn = finish;
    resume_fn = resume;
    real__exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    real_quick_exit = (exit_fn)dlsym(RTLD_NEXT, "quick_exit");
    find_mask_fns();
}

/* The fatal signals' actions, where the process must write its report
 * itself when one kills it: no collector runs, or the kernel does not tell
 * the collector how the process ended, or (counting with psrun -p and room
 * above the descriptor limit) the running threads' counters are in the
 * process and go with it.  Otherwise a fatal signal
 * ends the process as it would bare, and the collector writes the report. */
void ps_exitpaths_hook_fatal(void)
{
    if (__atomic_exchange_n(&fatal_hooked, 1, __ATOMIC_SEQ_CST))
        return;
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        hook_fatal(fatal[i].sig);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        hook_fatal(sig);
    /* No alternate signal stack is installed: the program sees none at
     * main, as bare, and code that sets one only where none exists (Rust's
     * runtime does) sets its own.  A stack overflow then ends the process
     * by SIGSEGV without the handler (it runs on the program's alternate
     * stack if the program has one, SA_ONSTACK). */
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

/* quick_exit() runs the at_quick_exit handlers, then ends with the C
 * library's own _exit, which does not come through the one above: the
 * report first, then the real quick_exit (its handlers run as they would). */
PS_API __attribute__((noreturn)) void quick_exit(int status)
{
    if (!real_quick_exit)
        real_quick_exit = (exit_fn)dlsym(RTLD_NEXT, "quick_exit");
    if (finish_fn)
        finish_fn("the program ended with quick_exit()");
    if (real_quick_exit)
        real_quick_exit(status);
    syscall(SYS_exit_group, status);
    for (;;)
        ;
}

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

/* The environment an image psrun -f measures gets (environ.c): built on
 * the stack when small, else in mapped memory; never malloc, as exec may
 * come in a child after fork or vfork.  NAME is envp itself when nothing
 * is to be added. */
#define SMALL_ENV_SLOTS 4096
#define SMALL_ENV_BYTES 16384
#define FOLLOW_ENV(NAME, ENVP)                                                                                         \
    int NAME##_on = ps_environ_following();                                                                            \
    size_t NAME##_slots = NAME##_on ? ps_environ_follow_slots(ENVP) : 1;                                               \
    size_t NAME##_bytes = NAME##_on ? ps_environ_follow_bytes(ENVP) : 1;                                               \
    int NAME##_small = NAME##_slots <= SMALL_ENV_SLOTS && NAME##_bytes <= SMALL_ENV_BYTES;                             \
    char *NAME##_vec[NAME##_small ? NAME##_slots : 1];                                                                 \
    char NAME##_buf[NAME##_small ? NAME##_bytes : 1];                                                                  \
    size_t NAME##_maplen = NAME##_on && !NAME##_small ? NAME##_slots * sizeof(char *) + NAME##_bytes : 0;              \
    char *NAME##_map = NAME##_maplen ? map_env(NAME##_maplen) : NULL;                                                  \
    char *const *NAME = !NAME##_on               ? (ENVP)                                                              \
                        : NAME##_small           ? ps_environ_follow(ENVP, NAME##_vec, NAME##_buf)                     \
                        : NAME##_map             ? ps_environ_follow(ENVP, (char **)(void *)NAME##_map,                \
                                                                     NAME##_map + NAME##_slots * sizeof(char *))       \
                                                 : (ENVP)

static char *map_env(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static void unmap_env(char *map, size_t len)
{
    if (map) {
        int saved = errno;
        munmap(map, len);
        errno = saved;
    }
}

#define REAL(type, name)                                                                                               \
    static type real;                                                                                                  \
    if (!real)                                                                                                         \
        real = (type)dlsym(RTLD_NEXT, name);                                                                           \
    if (!real) {                                                                                                       \
        errno = ENOSYS;                                                                                                \
        return -1;                                                                                                     \
    }

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*execv_fn)(const char *, char *const[]);

/* The exec functions of the C library: the report first, then the real
 * call (with psrun's variables back under -f); they return only when the
 * exec failed. */
static int exec_env(const char *name, const char *path, char *const argv[], char *const envp[])
{
    static execve_fn real_execve, real_execvpe;
    execve_fn *slot = name[5] == 'p' ? &real_execvpe : &real_execve;
    if (!*slot)
        *slot = (execve_fn)dlsym(RTLD_NEXT, name);
    if (!*slot) {
        errno = ENOSYS;
        return -1;
    }
    FOLLOW_ENV(env, envp);
    before_exec();
    int rc = (*slot)(path, argv, env);
    exec_failed();
    unmap_env(env_map, env_maplen);
    return rc;
}

PS_API int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_env("execve", path, argv, envp);
}

PS_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return exec_env("execvpe", file, argv, envp);
}

/* execv and execvp take environ: under -f they become execve and execvpe
 * with the followed environment. */
static int exec_environ(const char *name, const char *file, char *const argv[])
{
    if (ps_environ_following())
        return exec_env(name[5] == 'p' ? "execvpe" : "execve", file, argv, environ);
    static execv_fn real_execv, real_execvp;
    execv_fn *slot = name[5] == 'p' ? &real_execvp : &real_execv;
    if (!*slot)
        *slot = (execv_fn)dlsym(RTLD_NEXT, name);
    if (!*slot) {
        errno = ENOSYS;
        return -1;
    }
    before_exec();
    int rc = (*slot)(file, argv);
    exec_failed();
    return rc;
}

PS_API int execv(const char *path, char *const argv[]) { return exec_environ("execv", path, argv); }

PS_API int execvp(const char *file, char *const argv[]) { return exec_environ("execvp", file, argv); }

PS_API int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL(fexecve_fn, "fexecve");
    FOLLOW_ENV(env, envp);
    before_exec();
    int rc = real(fd, argv, env);
    exec_failed();
    unmap_env(env_map, env_maplen);
    return rc;
}

PS_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    REAL(execveat_fn, "execveat");
    FOLLOW_ENV(env, envp);
    before_exec();
    int rc = real(dirfd, path, argv, env, flags);
    exec_failed();
    unmap_env(env_map, env_maplen);
    return rc;
}

/* The C library's other ways to start a program, under -f: the new
 * image gets psrun's variables back (not the program's own exec: no
 * report is written for them).  posix_spawn takes an environment; system
 * and popen use environ, which is the followed one while any of them is
 * starting its child. */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

static int spawn_env(const char *name, pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                     const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    static spawn_fn real_spawn, real_spawnp;
    spawn_fn *slot = name[11] == 'p' ? &real_spawnp : &real_spawn;
    if (!*slot)
        *slot = (spawn_fn)dlsym(RTLD_NEXT, name);
    if (!*slot)
        return ENOSYS;
    FOLLOW_ENV(env, envp);
    int rc = (*slot)(pid, path, actions, attr, argv, env);
    unmap_env(env_map, env_maplen);
    return rc;
}

PS_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_env("posix_spawn", pid, path, actions, attr, argv, envp);
}

PS_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_env("posix_spawnp", pid, file, actions, attr, argv, envp);
}

/* environ as the children of system and popen get it: the followed array
 * while any call is starting one (counted), the program's otherwise. */
static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;
static int swapped;
static char **saved_environ, **followed_environ;

static void followed_on(void)
{
    pthread_mutex_lock(&swap_lock);
    if (!swapped++) {
        saved_environ = environ;
        size_t slots = ps_environ_follow_slots(environ), bytes = ps_environ_follow_bytes(environ);
        char *mem = malloc(slots * sizeof(char *) + bytes);
        if (mem) {
            followed_environ = ps_environ_follow(environ, (char **)(void *)mem, mem + slots * sizeof(char *));
            environ = followed_environ;
        }
    }
    pthread_mutex_unlock(&swap_lock);
}

static void followed_off(void)
{
    pthread_mutex_lock(&swap_lock);
    if (!--swapped && followed_environ) {
        /* a setenv meanwhile made environ an array of its own: it stays */
        if (environ == followed_environ)
            environ = saved_environ;
        free(followed_environ);
        followed_environ = NULL;
    }
    pthread_mutex_unlock(&swap_lock);
}

PS_API int system(const char *command)
{
    static int (*real)(const char *);
    if (!real)
        real = (int (*)(const char *))dlsym(RTLD_NEXT, "system");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!command || !ps_environ_following())
        return real(command);
    followed_on();
    int rc = real(command);
    int saved = errno;
    followed_off();
    errno = saved;
    return rc;
}

PS_API FILE *popen(const char *command, const char *mode)
{
    static FILE *(*real)(const char *, const char *);
    if (!real)
        real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "popen");
    if (!real) {
        errno = ENOSYS;
        return NULL;
    }
    if (!ps_environ_following())
        return real(command, mode);
    followed_on();
    FILE *f = real(command, mode);
    int saved = errno;
    followed_off();
    errno = saved;
    return f;
}

/* execl, execlp, execle: their arguments as a vector, then the v forms.
 * However many there are: counted first, then an array on the stack (a
 * VLA) or, past SMALL_ARGS, mapped memory; never malloc, as exec may come
 * in a child after fork or from a signal handler. */
#define SMALL_ARGS 4096

static size_t count_args(const char *arg0, va_list ap)
{
    size_t n = 1;
    va_list c;
    va_copy(c, ap);
    while (arg0 && va_arg(c, char *) != NULL)
        n++;
    va_end(c);
    return arg0 ? n : 0;
}

static void collect(const char *arg0, va_list ap, size_t n, char **argv, char ***envp)
{
    size_t k = 0;
    if (n)
        argv[k++] = (char *)arg0;
    while (k < n)
        argv[k++] = va_arg(ap, char *);
    if (n)
        (void)va_arg(ap, char *); /* the terminating NULL */
    argv[k] = NULL;
    if (envp)
        *envp = va_arg(ap, char **);
}

static char **map_args(size_t slots)
{
    void *mem = mmap(NULL, slots * sizeof(char *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        errno = E2BIG;
        return NULL;
    }
    return mem;
}

static int unmap_args(char **mem, size_t slots, int rc)
{
    if (mem) {
        int saved = errno;
        munmap(mem, slots * sizeof(char *));
        errno = saved;
    }
    return rc;
}

/* The body of execl (envp: execle's), calling the v form `call`. */
#define EXECL_BODY(first, envp, call)                                                                                  \
    va_list ap;                                                                                                        \
    va_start(ap, first);                                                                                               \
    size_t n = count_args(first, ap), slots = n + 1;                                                                   \
    char *small[slots <= SMALL_ARGS ? slots : 1], **mem = NULL;                                                        \
    char **argv = slots <= SMALL_ARGS ? small : (mem = map_args(slots));                                              \
    if (!argv) {                                                                                                       \
        va_end(ap);                                                                                                    \
        return -1;                                                                                                     \
    }                                                                                                                  \
    collect(first, ap, n, argv, envp);                                                                                 \
    va_end(ap);                                                                                                        \
    return unmap_args(mem, slots, call)

PS_API int execl(const char *path, const char *arg0, ...) { EXECL_BODY(arg0, NULL, execv(path, argv)); }

PS_API int execlp(const char *file, const char *arg0, ...) { EXECL_BODY(arg0, NULL, execvp(file, argv)); }

PS_API int execle(const char *path, const char *arg0, ...)
{
    char **envp;
    EXECL_BODY(arg0, &envp, execve(path, argv, envp));
}
