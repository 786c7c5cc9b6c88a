/* rt_seq_threads.c - N threads one after another (each joined before the
 * next starts), each doing a little work, then a 512 MiB allocation, as a
 * program going on after them would need:  rt_seq_threads N
 * (prints "N threads done, 512 MiB allocated" or what failed) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *work(void *arg)
{
    (void)arg;
    volatile double x = 0;
    for (long i = 0; i < 100000; i++)
        x += i * 0.5;
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3000;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        int rc = pthread_create(&t, NULL, work, NULL);
        if (rc) {
            printf("pthread_create failed at thread %d: %s\n", i, strerror(rc));
            return 1;
        }
        pthread_join(t, NULL);
    }
    size_t size = (size_t)512 << 20;
    char *p = malloc(size);
    if (!p) {
        printf("%d threads done, 512 MiB allocation failed\n", n);
        return 1;
    }
    memset(p, 1, 4096);
    printf("%d threads done, 512 MiB allocated\n", n);
    free(p);
    return 0;
}
