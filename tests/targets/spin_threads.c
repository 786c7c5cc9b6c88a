/* spin_threads.c - N threads besides main spin on CPU until the process
 * is killed; prints "running PID" once they all run.
 *   spin_threads N */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
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
