/* threads.c - N threads doing the same fixed work, ending in one of three
 * ways:  threads N join | exit | pthread_exit
 *   join          main joins them and returns
 *   exit          a worker calls exit() while the others still run
 *   pthread_exit  main calls pthread_exit; the process ends with the last
 *                 thread */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORK 40000000L

static const char *mode = "join";

static void *worker(void *arg)
{
    long id = (long)arg;
    volatile double x = 0;
    /* in "exit" mode thread 0 works a quarter and ends the process */
    long n = strcmp(mode, "exit") == 0 && id == 0 ? WORK / 4 : WORK;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
    if (strcmp(mode, "exit") == 0 && id == 0)
        exit(0);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    mode = argc > 2 ? argv[2] : "join";
    pthread_t t[256];
    for (long i = 0; i < n && i < 256; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    if (strcmp(mode, "pthread_exit") == 0)
        pthread_exit(NULL);
    for (int i = 0; i < n && i < 256; i++)
        pthread_join(t[i], NULL);
    return 0;
}
