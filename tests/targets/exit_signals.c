/* exit_signals.c - signal and exit cases beyond exit_paths.c, each
 * printing what a test compares between a bare run and one under psrun:
 *   quick_exit N          at_quick_exit handler, then quick_exit(N)
 *   execveat | execveat_fail
 *   execl_many | execlp_many | execle_many   5,000 arguments to /bin/sh
 *   itimer_prof           its own ITIMER_PROF, SIGPROF left at its default
 *   prof_handler FLAGS    its own SIGPROF handler, raised twice; FLAGS of
 *                         m (sa_mask: SIGUSR1), n (SA_NODEFER),
 *                         r (SA_RESETHAND), o (SA_ONSTACK, an alternate
 *                         stack), i (SA_SIGINFO); prints the mask, the
 *                         stack and the action as the handler sees them
 *   own_segv_blocked sigaction|signal   its own SIGSEGV handler, SIGSEGV
 *                         blocked and sent: it stays pending
 *   restore_default sigaction|signal|sysv_signal|bsd_signal SIGNUM   a handler of its own, then
 *                         the action it replaced put back, then raise() */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "prof_loop_small.h"

/* exported by glibc, declared by <signal.h> only for older X/Open levels */
extern __sighandler_t bsd_signal(int sig, __sighandler_t handler);

extern char **environ;

#define A10 "a", "a", "a", "a", "a", "a", "a", "a", "a", "a"
#define A100 A10, A10, A10, A10, A10, A10, A10, A10, A10, A10
#define A1000 A100, A100, A100, A100, A100, A100, A100, A100, A100, A100
#define A5000 A1000, A1000, A1000, A1000, A1000

static void on_quick_exit(void)
{
    printf("at_quick_exit handler ran\n");
    fflush(stdout);
}

static void on_atexit(void) { printf("atexit handler ran (it should not)\n"); }

static char altstack[64 * 1024];
static const char *flags = "";
static int deliveries;

static void say(const char *text) { (void)!write(1, text, strlen(text)); }

static void report_in_handler(int sig)
{
    char local, line[160];
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    stack_t ss;
    sigaltstack(NULL, &ss);
    int on_alt = &local >= altstack && &local < altstack + sizeof altstack;
    snprintf(line, sizeof line, "handler %d: SIGPROF blocked %d, SIGUSR1 blocked %d, on its stack %d, SS_ONSTACK %d\n",
             ++deliveries, sigismember(&now, sig), sigismember(&now, SIGUSR1), on_alt,
             (ss.ss_flags & SS_ONSTACK) != 0);
    say(line);
}

static void on_prof(int sig) { report_in_handler(sig); }

static void on_prof_info(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    report_in_handler(sig);
    if (si->si_signo != sig)
        say("bad siginfo\n");
}

static void print_action(void)
{
    struct sigaction sa;
    sigaction(SIGPROF, NULL, &sa);
    int keep = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK | SA_RESTART;
    printf("action: %s, flags %#x\n",
           sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignored" : "handler",
           (unsigned)sa.sa_flags & keep);
    fflush(stdout);
}

static void on_segv(int sig) { say("SIGSEGV handler ran\n"); }

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "quick_exit";
    const char *arg = argc > 2 ? argv[2] : "";
    printf("ending by %s %s\n", how, arg);
    fflush(stdout);
    SMALL_WORK();
    if (!strcmp(how, "quick_exit")) {
        atexit(on_atexit);
        at_quick_exit(on_quick_exit);
        quick_exit(atoi(arg));
    }
    if (!strcmp(how, "execveat") || !strcmp(how, "execveat_fail")) {
        char *args[] = {"sh", "-c", "exit 4", NULL};
        execveat(AT_FDCWD, !strcmp(how, "execveat") ? "/bin/sh" : "/nonexistent/program", args, environ, 0);
        printf("execveat failed: %s\n", strerror(errno));
        return 5;
    }
    if (!strcmp(how, "execl_many"))
        execl("/bin/sh", "sh", "-c", "echo \"$# arguments, the last ${5001}\"", "sh", A5000, "last", (char *)NULL);
    if (!strcmp(how, "execlp_many"))
        execlp("sh", "sh", "-c", "echo \"$# arguments, the last ${5001}\"", "sh", A5000, "last", (char *)NULL);
    if (!strcmp(how, "execle_many")) {
        char *env[] = {"PS_TEST_VALUE=kept", NULL};
        execle("/bin/sh", "sh", "-c", "echo \"$# arguments, the last ${5001}, $PS_TEST_VALUE\"", "sh", A5000, "last",
               (char *)NULL, env);
    }
    if (!strncmp(how, "exec", 4)) {
        printf("%s failed: %s\n", how, strerror(errno));
        return 5;
    }
    if (!strcmp(how, "itimer_prof")) {
        struct itimerval it = {{0, 10000}, {0, 10000}};
        setitimer(ITIMER_PROF, &it, NULL);
        for (;;)
            SMALL_WORK();
    }
    if (!strcmp(how, "prof_handler")) {
        flags = arg;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sigemptyset(&sa.sa_mask);
        if (strchr(flags, 'm'))
            sigaddset(&sa.sa_mask, SIGUSR1);
        if (strchr(flags, 'n'))
            sa.sa_flags |= SA_NODEFER;
        if (strchr(flags, 'r'))
            sa.sa_flags |= SA_RESETHAND;
        if (strchr(flags, 'o')) {
            sa.sa_flags |= SA_ONSTACK;
            stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
            sigaltstack(&ss, NULL);
        }
        if (strchr(flags, 'i')) {
            sa.sa_flags |= SA_SIGINFO;
            sa.sa_sigaction = on_prof_info;
        } else
            sa.sa_handler = on_prof;
        sigaction(SIGPROF, &sa, NULL);
        print_action();
        raise(SIGPROF);
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        printf("after: SIGPROF blocked %d, SIGUSR1 blocked %d\n", sigismember(&now, SIGPROF),
               sigismember(&now, SIGUSR1));
        print_action();
        raise(SIGPROF); /* the default action, after SA_RESETHAND */
        printf("survived %d deliveries\n", deliveries);
        return 0;
    }
    if (!strcmp(how, "own_segv_blocked")) {
        if (!strcmp(arg, "signal"))
            signal(SIGSEGV, on_segv);
        else {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_segv;
            sigaction(SIGSEGV, &sa, NULL);
        }
        sigset_t one, pending;
        sigemptyset(&one);
        sigaddset(&one, SIGSEGV);
        pthread_sigmask(SIG_BLOCK, &one, NULL);
        kill(getpid(), SIGSEGV);
        sigpending(&pending);
        printf("SIGSEGV pending %d\n", sigismember(&pending, SIGSEGV));
        fflush(stdout);
        signal(SIGSEGV, SIG_IGN); /* discards it */
        return 0;
    }
    if (!strcmp(how, "restore_default")) {
        int sig = argc > 3 ? atoi(argv[3]) : SIGILL;
        if (!strcmp(arg, "signal")) {
            sighandler_t before = signal(sig, on_segv);
            signal(sig, before);
        } else if (!strcmp(arg, "sysv_signal")) { /* what signal() is in strict C (-std=c99) */
            printf("was default: %d\n", sysv_signal(sig, on_segv) == SIG_DFL);
            fflush(stdout);
            sysv_signal(sig, SIG_DFL);
        } else if (!strcmp(arg, "bsd_signal")) {
            printf("was default: %d\n", bsd_signal(sig, on_segv) == SIG_DFL);
            fflush(stdout);
            bsd_signal(sig, SIG_DFL);
        } else {
            struct sigaction sa, before;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_segv;
            sigaction(sig, &sa, &before);
            sigaction(sig, &before, NULL);
        }
        raise(sig);
        return 0;
    }
    return 3;
}
