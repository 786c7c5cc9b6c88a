/* signal_end.c - programs ended while their threads allocate (the report
 * writer must not need malloc, locks or the caller's stack):
 *   alarm_exit MS     SIGALRM handler calls _exit(0) after MS ms while two
 *                     threads malloc and free in a loop
 *   alarm_die MS      the same without a handler: SIGALRM's default action
 *   alarm_exec MS     SIGALRM handler re-execs the program (mode after_exec,
 *                     which returns 0) while two threads malloc and free
 *   tiny_stack_thread a thread with a 16 KiB stack does a little work
 *   small_stack_exit  exit(3) from a thread created with a 64 KiB stack
 *   alarm_in_read MS  SIGALRM's default action while two threads call
 *                     ps_hwpc_read (psuite's, found at run time under psrun)
 *                     in a loop: the signal lands while one holds its lock */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* Blocks of 2 to 66 KiB, eight alive at a time: past the thread cache,
 * so malloc and free take the arena's lock nearly every call. */
static int churning; /* the second thread runs: the alarm is armed only then */

static void *churn(void *arg)
{
    char *live[8] = {0};
    (void)arg;
    __atomic_store_n(&churning, 1, __ATOMIC_RELEASE);
    for (unsigned long i = 0;; i++) {
        unsigned k = (unsigned)(i * 2654435761u >> 7) % 8;
        free(live[k]);
        live[k] = malloc(2048 + (i * 7919) % 65536);
        if (live[k])
            live[k][0] = (char)i;
    }
    return NULL;
}

static int (*hwpc_read)(long long *);

static void *reading(void *arg)
{
    long long v[64];
    (void)arg;
    for (;;)
        hwpc_read(v);
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    _exit(0);
}

static void arm(long ms)
{
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void *exiting(void *arg)
{
    (void)arg;
    exit(3);
}

static char *self_path;

/* re-exec to "reload", as daemons do from a signal handler */
static void on_alarm_exec(int sig)
{
    (void)sig;
    char *argv[] = {self_path, "after_exec", NULL};
    execv("/proc/self/exe", argv);
    _exit(5);
}

static void *small_work(void *arg)
{
    volatile double x = 0;
    (void)arg;
    for (int i = 0; i < 200000; i++)
        x += i * 0.5;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    long ms = argc > 2 ? atol(argv[2]) : 30;
    pthread_t t;
    if (strcmp(mode, "after_exec") == 0)
        return 0;
    if (strcmp(mode, "tiny_stack_thread") == 0) { /* the smallest stack POSIX allows */
        pthread_attr_t a;
        pthread_attr_init(&a);
        if (pthread_attr_setstacksize(&a, 16384) || pthread_create(&t, &a, small_work, NULL))
            return 9;
        pthread_join(t, NULL);
        return 0;
    }
    if (strcmp(mode, "small_stack_exit") == 0) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        if (pthread_create(&t, &a, exiting, NULL))
            return 9;
        pthread_join(t, NULL);
        return 8;
    }
    if (strcmp(mode, "alarm_in_read") == 0) {
        hwpc_read = (int (*)(long long *))dlsym(RTLD_DEFAULT, "ps_hwpc_read");
        if (!hwpc_read)
            return 7; /* not under psrun */
        pthread_create(&t, NULL, reading, NULL);
        arm(ms);
        reading(NULL);
    }
    self_path = argv[0];
    if (strcmp(mode, "alarm_exit") == 0)
        signal(SIGALRM, on_alarm);
    else if (strcmp(mode, "alarm_exec") == 0)
        signal(SIGALRM, on_alarm_exec);
    else if (strcmp(mode, "alarm_die") != 0)
        return 2;
    pthread_create(&t, NULL, churn, NULL);
    while (!__atomic_load_n(&churning, __ATOMIC_ACQUIRE))
        sched_yield();
    arm(ms);
    churn(NULL);
    return 1;
}
