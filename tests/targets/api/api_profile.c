/* api_profile.c - profiling driven through the C API, as the PerfSuite
 * paper describes it: CPU work in spin_a, ps_hwpc_suspend, work in spin_b,
 * ps_hwpc_start again, work in spin_c, ps_hwpc_stop(NAME), shutdown.
 *     api_profile UNITS [NAME] [threads|twice|exec]
 * With "threads", two more threads do spin_b's work too while sampling is
 * suspended, one started before the suspend (it waits for it), one after
 * (suspend holds for every thread, those created meanwhile included), and
 * another does spin_c's after the resume.  With
 * "twice", a second measurement follows the shutdown: init, start, spin_b,
 * stop(NAME.again.xml), shutdown, its codes printed on a second line.  With
 * "exec", an exec that fails (no such program) comes right after the
 * suspend: sampling stays suspended through it.  Every
 * call's return code is printed ("init 0 start 0 ..."); linked against
 * libpshwpc.so, run with PS_HWPC_CONFIG naming a <ps_hwpc_profile>, or
 * under psrun --profile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pshwpc.h"
#include "../profile/prof_loop.h"

static long units;
static pthread_barrier_t suspended; /* the thread started before the suspend waits for it */

__attribute__((noinline)) void spin_a(long n) { PROF_LOOP(n); }
__attribute__((noinline)) void spin_b(long n) { PROF_LOOP(n); }
__attribute__((noinline)) void spin_c(long n) { PROF_LOOP(n); }

static void *worker_b(void *arg)
{
    if (arg)
        pthread_barrier_wait(&suspended);
    spin_b(units);
    return NULL;
}

static void *worker_c(void *arg)
{
    (void)arg;
    spin_c(units);
    return NULL;
}

int main(int argc, char **argv)
{
    units = argc > 1 ? atol(argv[1]) : 100;
    const char *name = argc > 2 ? argv[2] : "api_region";
    int threads = argc > 3 && strcmp(argv[3], "threads") == 0;
    int twice = argc > 3 && strcmp(argv[3], "twice") == 0;
    int exec = argc > 3 && strcmp(argv[3], "exec") == 0;
    pthread_t t, before;
    int rc[6];
    rc[0] = ps_hwpc_init();
    rc[1] = ps_hwpc_start();
    if (threads) {
        pthread_barrier_init(&suspended, NULL, 2);
        pthread_create(&before, NULL, worker_b, &suspended);
    }
    spin_a(units);
    rc[2] = ps_hwpc_suspend();
    if (threads)
        pthread_barrier_wait(&suspended);
    if (exec) {
        char *none[] = {"/nonexistent/program", NULL};
        execv(none[0], none);
    }
    if (threads)
        pthread_create(&t, NULL, worker_b, NULL);
    spin_b(units);
    if (threads) {
        pthread_join(t, NULL);
        pthread_join(before, NULL);
    }
    rc[3] = ps_hwpc_start();
    if (threads)
        pthread_create(&t, NULL, worker_c, NULL);
    spin_c(units);
    if (threads)
        pthread_join(t, NULL);
    rc[4] = ps_hwpc_stop(name);
    rc[5] = ps_hwpc_shutdown();
    printf("init %d start %d suspend %d start %d stop %d shutdown %d\n", rc[0], rc[1], rc[2], rc[3], rc[4], rc[5]);
    for (int i = 0; i < 6; i++)
        if (rc[i] != PS_HWPC_OK)
            return 1;
    if (twice) {
        char again[4096];
        snprintf(again, sizeof again, "%s.again.xml", name);
        rc[0] = ps_hwpc_init();
        rc[1] = ps_hwpc_start();
        spin_b(units);
        rc[2] = ps_hwpc_stop(again);
        rc[3] = ps_hwpc_shutdown();
        printf("init %d start %d stop %d shutdown %d\n", rc[0], rc[1], rc[2], rc[3]);
        for (int i = 0; i < 4; i++)
            if (rc[i] != PS_HWPC_OK)
                return 1;
    }
    return 0;
}
