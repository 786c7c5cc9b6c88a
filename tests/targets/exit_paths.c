/* exit_paths.c - ends in the way its argument names, so a test can check
 * each writes its report and keeps its exit status or signal:
 *   return N | exit N | _exit N | _Exit N | thread_exit N | exec | exec_fail
 *   | segv | fpe | abort | bus | raise SIGNUM | ignored_int | own_term | query
 * Prints a line first, so output pass-through is visible too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_loop_small.h"

static int code;

static void *exiting_thread(void *arg)
{
    (void)arg;
    exit(code);
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
