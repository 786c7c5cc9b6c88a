/* rt_threads.c - threads, forks and descriptors in the measured program
 * (tests/psrun/test_threads_runtime.py):
 *   rt_threads forks N       N children forked while helper threads start and
 *                            end; each child creates and joins a thread and
 *                            exits with i % 5; prints the statuses seen
 *   rt_threads pfork         2 threads, then a child with 1 thread of its own;
 *                            the parent works 0.3 s of CPU after the child ended
 *   rt_threads c11 N         N C11 threads (thrd_create), 0.2 s of CPU each
 *   rt_threads ctor          joins the thread the library's constructor
 *                            started (built with -DCTOR_LIBRARY as a shared
 *                            library, linked in), prints the process's CPU time
 *   rt_threads closelog      closes 3..1023, opens log.txt (descriptor 3),
 *                            writes to it with stdio and returns without fclose
 *   rt_threads live N K      N threads alive at once while the program opens
 *                            K descriptors; prints how many it got
 *   rt_threads empty N       N empty threads, created and joined in waves of 50
 *   rt_threads childfds      a child forked by a threaded program prints how
 *                            many descriptors it has open
 *   rt_threads errno         prints errno as main starts
 *   rt_threads env           prints LD_PRELOAD
 *   rt_threads rfork MB      a child touches MB MiB and exits; the parent
 *                            waits for it, then is killed by SIGKILL */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void spin_cpu(double seconds)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile double x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += i * 0.5;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

#ifdef CTOR_LIBRARY
/* The library: a thread started by its constructor, before the program's
 * start (as OpenBLAS starts its pool). */
static pthread_t ctor_thread, idle_threads[1024];
static int nidle;

static void *ctor_work(void *arg)
{
    (void)arg;
    spin_cpu(0.5);
    return NULL;
}

static void *ctor_idle(void *arg)
{
    (void)arg;
    struct timespec t = {0, 300000000};
    nanosleep(&t, NULL);
    return NULL;
}

/* RT_CTOR_IDLE=N: N more threads that sleep 0.3 s (a large pool) */
__attribute__((constructor)) static void start_pool(void)
{
    pthread_create(&ctor_thread, NULL, ctor_work, NULL);
    const char *idle = getenv("RT_CTOR_IDLE");
    nidle = idle ? atoi(idle) : 0;
    if (nidle > 1024)
        nidle = 1024;
    for (int i = 0; i < nidle; i++)
        pthread_create(&idle_threads[i], NULL, ctor_idle, NULL);
}

void rt_ctor_join(void)
{
    pthread_join(ctor_thread, NULL);
    for (int i = 0; i < nidle; i++)
        pthread_join(idle_threads[i], NULL);
}

#else

void rt_ctor_join(void) __attribute__((weak));

static void *nothing(void *arg) { return arg; }

static volatile int churning = 1;

static void *churn(void *arg)
{
    (void)arg;
    while (churning) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

static int forks(int n)
{
    pthread_t helpers[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&helpers[i], NULL, churn, NULL);
    pid_t pids[n];
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL))
                _exit(99);
            exit(i % 5);
        }
    }
    int counts[256] = {0}, hung = 0;
    for (int i = 0; i < n; i++) {
        int st = 0;
        pid_t got = 0;
        for (int k = 0; k < 2000 && (got = waitpid(pids[i], &st, WNOHANG)) == 0; k++)
            usleep(10000);
        if (got == 0) { /* 20 s: it hangs */
            hung++;
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &st, 0);
            continue;
        }
        counts[WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)]++;
    }
    churning = 0;
    for (int i = 0; i < 3; i++)
        pthread_join(helpers[i], NULL);
    for (int s = 0; s < 256; s++)
        if (counts[s])
            printf("status %d: %d\n", s, counts[s]);
    printf("hung: %d\n", hung);
    return 0;
}

static void *work02(void *arg)
{
    spin_cpu(0.2);
    return arg;
}

static int pfork(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work02, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pid_t child = fork();
    if (child == 0) {
        pthread_t c;
        pthread_create(&c, NULL, work02, NULL);
        pthread_join(c, NULL);
        return 0;
    }
    int st;
    waitpid(child, &st, 0);
    spin_cpu(0.3);
    printf("child %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
    return 0;
}

static int c11_work(void *arg)
{
    spin_cpu(0.2);
    return (int)(long)arg;
}

static int c11(int n)
{
    thrd_t t[64];
    int sum = 0;
    for (int i = 0; i < n && i < 64; i++)
        if (thrd_create(&t[i], c11_work, (void *)(long)(i + 1)) != thrd_success)
            return 2;
    for (int i = 0; i < n && i < 64; i++) {
        int res = 0;
        thrd_join(t[i], &res);
        sum += res;
    }
    printf("c11 threads returned %d\n", sum);
    return 0;
}

static int ctor(void)
{
    if (!rt_ctor_join) {
        printf("no library\n");
        return 2;
    }
    double before = cpu_now();
    rt_ctor_join();
    printf("cpu %.6f (%.6f at main)\n", cpu_now(), before);
    return 0;
}

static int closelog(void)
{
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    FILE *log = fopen("log.txt", "w");
    if (!log)
        return 2;
    fprintf(log, "descriptor %d\n", fileno(log));
    for (int i = 0; i < 100; i++)
        fprintf(log, "line %d\n", i);
    return 0; /* the log is flushed by exit, after the atexit handlers */
}

static pthread_barrier_t all_up, done_opening;

static void *live_thread(void *arg)
{
    pthread_barrier_wait(&all_up);
    pthread_barrier_wait(&done_opening);
    spin_cpu(0.001);
    return arg;
}

static int live(int n, int k)
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_barrier_init(&all_up, NULL, (unsigned)n + 1);
    pthread_barrier_init(&done_opening, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, live_thread, NULL))
            return 2;
    pthread_barrier_wait(&all_up);
    int got = 0, err = 0;
    for (int i = 0; i < k; i++) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            err = errno;
            break;
        }
        got++;
    }
    pthread_barrier_wait(&done_opening);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("opened %d of %d%s%s\n", got, k, err ? ": " : "", err ? strerror(err) : "");
    return 0;
}

static int empty(int n)
{
    pthread_t t[50];
    for (int done = 0; done < n;) {
        int wave = n - done < 50 ? n - done : 50;
        for (int i = 0; i < wave; i++)
            if (pthread_create(&t[i], NULL, nothing, NULL))
                return 2;
        for (int i = 0; i < wave; i++)
            pthread_join(t[i], NULL);
        done += wave;
    }
    printf("%d threads done\n", n);
    return 0;
}

static int childfds(void)
{
    pthread_t t;
    pthread_create(&t, NULL, work02, NULL);
    pid_t child = fork();
    if (child == 0) {
        int n = 0;
        for (int fd = 0; fd < 65536; fd++)
            if (fcntl(fd, F_GETFD) >= 0)
                n++;
        printf("child has %d descriptors open\n", n);
        exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    pthread_join(t, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int rfork(int mb)
{
    pid_t child = fork();
    if (child == 0) {
        size_t len = (size_t)mb << 20;
        char *p = malloc(len);
        if (!p)
            _exit(2);
        for (size_t i = 0; i < len; i += 4096)
            p[i] = 1;
        exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 3;
}

int main(int argc, char **argv)
{
    int found = errno;
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    if (!strcmp(mode, "errno")) {
        printf("errno %d\n", found);
        return 0;
    }
    if (!strcmp(mode, "env")) {
        const char *v = getenv("LD_PRELOAD");
        printf("LD_PRELOAD=%s\n", v ? v : "(unset)");
        return 0;
    }
    if (!strcmp(mode, "forks"))
        return forks(n);
    if (!strcmp(mode, "pfork"))
        return pfork();
    if (!strcmp(mode, "c11"))
        return c11(n);
    if (!strcmp(mode, "ctor"))
        return ctor();
    if (!strcmp(mode, "closelog"))
        return closelog();
    if (!strcmp(mode, "live"))
        return live(n, argc > 3 ? atoi(argv[3]) : 1);
    if (!strcmp(mode, "childfds"))
        return childfds();
    if (!strcmp(mode, "empty"))
        return empty(n);
    if (!strcmp(mode, "rfork"))
        return rfork(n);
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
#endif
