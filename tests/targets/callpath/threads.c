/* Threads with different known structures; argv[1]: millions of iterations
 * per thread (default 500).
 *   thread one:  worker_one -> x -> work  70 %,  worker_one -> y -> work  30 %
 *   thread two:  worker_two -> y -> z -> work  100 %
 * main only waits (no CPU time of its own). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "work.h"

static volatile unsigned long sink;
static unsigned long per_thread;

__attribute__((noipa)) void x(unsigned long n)
{
    sink = work(n, 5);
    sink += 1;
}

__attribute__((noipa)) void y(unsigned long n)
{
    sink = work(n, 6);
    sink += 1;
}

__attribute__((noipa)) void z(unsigned long n)
{
    y(n);
    sink += 1;
}

__attribute__((noipa)) void *worker_one(void *arg)
{
    (void)arg;
    for (int round = 0; round < 10; round++) { /* in rounds, as known.c */
        x(per_thread / 100 * 7);
        y(per_thread / 100 * 3);
    }
    sink += 1;
    return NULL;
}

__attribute__((noipa)) void *worker_two(void *arg)
{
    (void)arg;
    z(per_thread);
    sink += 1;
    return NULL;
}

int main(int argc, char **argv)
{
    per_thread = (argc > 1 ? strtoul(argv[1], NULL, 10) : 500) * 1000000;
    pthread_t one, two;
    if (pthread_create(&one, NULL, worker_one, NULL) || pthread_create(&two, NULL, worker_two, NULL))
        return 1;
    pthread_join(one, NULL);
    pthread_join(two, NULL);
    printf("threads done %lu\n", sink & 1);
    return 0;
}
