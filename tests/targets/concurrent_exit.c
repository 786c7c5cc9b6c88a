/* concurrent_exit.c - N threads (argv[1], default 2, main included) call
 * exit() at the same moment, released by a barrier: the report must be
 * written once and whole whichever thread wins. */
#include <pthread.h>
#include <stdlib.h>

static pthread_barrier_t go;

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    exit(0);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (n < 2)
        n = 2;
    pthread_barrier_init(&go, NULL, (unsigned)n);
    for (int i = 1; i < n; i++) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
    }
    pthread_barrier_wait(&go);
    exit(0);
}
