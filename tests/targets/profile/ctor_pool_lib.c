/* ctor_pool_lib.c - a library whose constructor starts a worker thread, as
 * OpenBLAS starts its thread pool: the thread exists before the program's
 * main (and before psuite starts sampling).  The worker spends
 * CTOR_POOL_CPU_MS (default 500) ms of its own CPU time in pool_work;
 * ctor_pool_join() waits for it. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static pthread_t worker;
static int started;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void pool_work(double seconds)
{
    volatile double x = 0;
    while (thread_cpu() < seconds)
        for (int k = 0; k < 100000; k++)
            x += k * 0.5;
}

static void *run(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 20000000}; /* let the program start first */
    nanosleep(&ts, NULL);
    const char *ms = getenv("CTOR_POOL_CPU_MS");
    pool_work((ms ? atof(ms) : 500) / 1000);
    return NULL;
}

__attribute__((constructor)) static void start_pool(void) { started = pthread_create(&worker, NULL, run, NULL) == 0; }

void ctor_pool_join(void)
{
    if (started)
        pthread_join(worker, NULL);
}
