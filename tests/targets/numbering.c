/* numbering.c - the main thread and two workers, each spinning in a
 * function of its own so that any document can tell which thread it holds:
 *   main: main_spin, worker 1: first_spin, worker 2: second_spin.
 * argv[1]: milliseconds of CPU time for each (default 300).  The workers
 * run one after the other, so that their numbers (creation order) are
 * known: first 2, second 3, main 1 (docs/formats/numbering.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long spin_ms = 300;
static volatile double sink;

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define SPINNER(name)                                          \
    __attribute__((noinline)) static void name(void)           \
    {                                                          \
        double end = cpu_ms() + spin_ms;                       \
        while (cpu_ms() < end)                                 \
            for (int i = 0; i < 10000; i++)                    \
                sink += i * 0.5;                               \
    }
SPINNER(main_spin)
SPINNER(first_spin)
SPINNER(second_spin)

static void *first(void *arg) { (void)arg; first_spin(); return NULL; }
static void *second(void *arg) { (void)arg; second_spin(); return NULL; }

int main(int argc, char **argv)
{
    if (argc > 1)
        spin_ms = atol(argv[1]);
    pthread_t a, b;
    /* created and joined one after the other: creation order is fixed */
    if (pthread_create(&a, NULL, first, NULL))
        return 1;
    pthread_join(a, NULL);
    if (pthread_create(&b, NULL, second, NULL))
        return 1;
    pthread_join(b, NULL);
    main_spin();
    printf("numbering done\n");
    return 0;
}
