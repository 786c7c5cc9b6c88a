/* naps.c - threads that sleep a known time and time themselves:
 *   naps THREADS MS
 * main starts THREADS threads; each works a little (about 20 ms of CPU,
 * so a profile has samples) and sleeps MS milliseconds; main sleeps MS
 * too and joins them.  Prints "main SECONDS": the wall time main measured
 * on CLOCK_MONOTONIC from its first instruction to after the joins, a
 * sub-interval of what psrun measures for the process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long ms = 100;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(void)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts))
        ;
}

static void *worker(void *arg)
{
    (void)arg;
    volatile double x = 0;
    double until = now() + 0.02;
    while (now() < until)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    nap();
    return NULL;
}

int main(int argc, char **argv)
{
    double start = now();
    int n = argc > 1 ? atoi(argv[1]) : 2;
    ms = argc > 2 ? atol(argv[2]) : 100;
    pthread_t t[64];
    if (n > 64)
        n = 64;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    nap();
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("main %.9f\n", now() - start);
    return 0;
}
