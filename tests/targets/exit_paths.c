/* exit_paths.c - ends in the way its argument names, so a test can check
 * each writes its report and keeps its exit status or signal:
 *   return N | exit N | _exit N | _Exit N | thread_exit N | exec | exec_fail
 *   | exec_fail_after N (N more threads, running through the failed exec;
 *     then each thread, main too, spends 0.3 s of CPU time)
 *   | segv | fpe | abort | bus | raise SIGNUM | ignored_int | own_term | query
 * Prints a line first, so output pass-through is visible too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prof_loop_small.h"

static int code;

static void *exiting_thread(void *arg)
{
    (void)arg;
    exit(code);
}

/* Spin until the calling thread has used `seconds` of CPU time more. */
static void spin_cpu(double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile double x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += i * 0.5;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

static pthread_barrier_t after_exec;

static void *working_after_exec(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&after_exec); /* running, blocked, through the failed exec */
    spin_cpu(0.3);
    return NULL;
}

static void on_term(int sig)
{
    (void)sig;
    printf("own handler ran\n");
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "return";
    code = argc > 2 ? atoi(argv[2]) : 0;
    printf("ending by %s\n", how);
    fflush(stdout);
    SMALL_WORK();
    if (!strcmp(how, "exit"))
        exit(code);
    if (!strcmp(how, "_exit"))
        _exit(code);
    if (!strcmp(how, "_Exit"))
        _Exit(code);
    if (!strcmp(how, "thread_exit")) {
        pthread_t t;
        pthread_create(&t, NULL, exiting_thread, NULL);
        pthread_join(t, NULL);
    }
    if (!strcmp(how, "exec"))
        execl("/bin/sh", "sh", "-c", "exit 4", (char *)NULL);
    if (!strcmp(how, "exec_fail")) { /* the caller sees the exec's errno */
        execl("/nonexistent/program", "program", (char *)NULL);
        printf("exec failed: %s\n", strerror(errno));
        return 5;
    }
    if (!strcmp(how, "exec_fail_after")) { /* work after the failed exec, in every thread */
        pthread_t t[16];
        int n = code < 0 ? 0 : code > 16 ? 16 : code;
        pthread_barrier_init(&after_exec, NULL, (unsigned)n + 1);
        for (int i = 0; i < n; i++)
            pthread_create(&t[i], NULL, working_after_exec, NULL);
        execl("/nonexistent/program", "program", (char *)NULL);
        printf("exec failed: %s\n", strerror(errno));
        fflush(stdout);
        pthread_barrier_wait(&after_exec);
        spin_cpu(0.3);
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        return 5;
    }
    if (!strcmp(how, "segv")) {
        volatile int *p = NULL;
        return *p;
    }
    if (!strcmp(how, "fpe")) {
        volatile int zero = 0;
        volatile int r = 7 / zero; /* (1 / x is folded into compares by gcc) */
        return r;
    }
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "raise"))
        raise(code);
    if (!strcmp(how, "ignored_int")) {
        signal(SIGINT, SIG_IGN);
        raise(SIGINT);
        return 0;
    }
    if (!strcmp(how, "own_term")) {
        signal(SIGTERM, on_term);
        raise(SIGTERM);
        return 9;
    }
    if (!strcmp(how, "query")) { /* the program sees the default it started with */
        struct sigaction sa;
        sigaction(SIGSEGV, NULL, &sa);
        return sa.sa_handler == SIG_DFL ? 0 : 8;
    }
    return code;
}
