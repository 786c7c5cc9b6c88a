/* plugin_a.c - a plugin that burns CPU in plugin_a_burn (same size as
 * its sibling, so the loader tends to map it where the other one was).
 * Its destructor opens and closes a library, as plugins' destructors may:
 * a dlclose within dlclose. */
#include <dlfcn.h>
#include <time.h>

static double process_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void plugin_a_burn(double seconds)
{
    double end = process_cpu() + seconds;
    volatile double x = 0;
    while (process_cpu() < end)
        for (int k = 0; k < 100000; k++)
            x += k * 0.5;
}

void plugin_run(double seconds) { plugin_a_burn(seconds); }

__attribute__((destructor)) static void unload(void)
{
    void *m = dlopen("libm.so.6", RTLD_NOW);
    if (m)
        dlclose(m);
}
