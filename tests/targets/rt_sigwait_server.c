/* rt_sigwait_server.c - the common server layout:  rt_sigwait_server CPU_S
 * main blocks every signal before starting two workers (they inherit the
 * mask), then waits in sigwait() for SIGUSR1, which the last worker to
 * finish sends it.  Each worker spends CPU_S seconds of its own CPU time. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double cpu_s = 0.4;
static int done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    (void)arg;
    volatile double x = 0;
    while (thread_cpu() < cpu_s)
        for (int k = 0; k < 100000; k++)
            x += k * 0.5;
    pthread_mutex_lock(&lock);
    int last = ++done == 2;
    pthread_mutex_unlock(&lock);
    if (last)
        kill(getpid(), SIGUSR1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cpu_s = atof(argv[1]);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    sigset_t wait_for;
    sigemptyset(&wait_for);
    sigaddset(&wait_for, SIGUSR1);
    int sig = 0;
    sigwait(&wait_for, &sig);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("got signal %d\n", sig);
    return 0;
}
