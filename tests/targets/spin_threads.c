/* spin_threads.c - N threads besides main spin on CPU until the process
 * is killed; prints "running PID" once they all run.  With ENDED, that many
 * threads first work 0.1 s of CPU each and end (joined) before the
 * spinners start.
 *   spin_threads N [ENDED] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static void *spin(void *arg)
{
    (void)arg;
    for (;;)
        for (int i = 0; i < 100000; i++)
            sink += i * 0.5;
    return NULL;
}

static void *work_and_end(void *arg)
{
    (void)arg;
    struct timespec t;
    do {
        for (int i = 0; i < 100000; i++)
            sink += i * 0.5;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while (t.tv_sec == 0 && t.tv_nsec < 100000000);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    int ended = argc > 2 ? atoi(argv[2]) : 0;
    for (int i = 0; i < ended; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, work_and_end, NULL) != 0 || pthread_join(t, NULL) != 0) {
            perror("pthread_create");
            return 9;
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, spin, NULL) != 0) {
            perror("pthread_create");
            return 9;
        }
    }
    printf("running %d\n", (int)getpid());
    fflush(stdout);
    spin(NULL);
    return 0;
}
