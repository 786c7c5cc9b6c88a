/* fini.c - a plugin whose destructor burns CPU in fini_work, so that it
 * is sampled inside the dlclose that unloads it. */
#include <time.h>

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void fini_work(double seconds)
{
    double end = thread_cpu() + seconds;
    volatile double x = 0;
    while (thread_cpu() < end)
        for (int k = 0; k < 10000; k++)
            x += k * 0.5;
}

static double seconds = 0.5;

void plugin_seconds(double s) { seconds = s; }

__attribute__((destructor)) static void unload(void) { fini_work(seconds); }
