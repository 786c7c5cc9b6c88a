/* sigmask_loop.c - the cost of the program's signal-mask calls: N
 * pthread_sigmask(SIG_BLOCK)/(SIG_SETMASK) pairs (SIGSEGV and SIGUSR1 in the
 * set, so a wrapper that looks at fault signals has work to do), then the
 * time per call on stderr:  sigmask_loop [N] */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGSEGV);
    sigaddset(&set, SIGUSR1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        pthread_sigmask(SIG_BLOCK, &set, &old);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (2.0 * n);
    fprintf(stderr, "%.1f ns per pthread_sigmask\n", ns);
    return 0;
}
