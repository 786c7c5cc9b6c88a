/* prof_threads.c - two worker threads running different functions:
 * thread 1 runs work_a, thread 2 runs work_b (twice as long). */
#include <pthread.h>

#include "prof_loop.h"

__attribute__((noinline)) static void work_a(void) { PROF_LOOP(300); }
__attribute__((noinline)) static void work_b(void) { PROF_LOOP(600); }

static void *run_a(void *arg) { (void)arg; work_a(); return NULL; }
static void *run_b(void *arg) { (void)arg; work_b(); return NULL; }

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, run_a, NULL);
    pthread_join(a, NULL); /* one after the other: each gets a CPU to itself */
    pthread_create(&b, NULL, run_b, NULL);
    pthread_join(b, NULL);
    return 0;
}
