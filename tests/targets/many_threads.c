/* many_threads.c - N short-lived threads, created in waves of 50, each
 * doing a little fixed work:  many_threads N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *work(void *arg)
{
    (void)arg;
    volatile double x = 0;
    for (long i = 0; i < 200000; i++)
        x += i * 0.5;
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    pthread_t t[50];
    for (int done = 0; done < n;) {
        int wave = n - done < 50 ? n - done : 50;
        for (int i = 0; i < wave; i++)
            if (pthread_create(&t[i], NULL, work, NULL))
                return 2;
        for (int i = 0; i < wave; i++)
            pthread_join(t[i], NULL);
        done += wave;
    }
    printf("%d threads done\n", n);
    return 0;
}
