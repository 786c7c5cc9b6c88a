/* papi_user - a program that counts with PAPI itself, to check that psrun
 * (PAPI backend) stays out of its way.
 *
 * No papi.h is needed: libpapi is opened with RTLD_GLOBAL and its functions
 * looked up in the global scope (RTLD_DEFAULT), which finds them in the
 * order the dynamic linker binds a program linked with -lpapi: a preloaded
 * library (psuite's) first.  The constants are PAPI's (papi.h, PAPI 7).
 *
 * usage: papi_user [papi|fork|fork-papi]
 *   papi       (default) one event set on perf::TASK-CLOCK: start, work,
 *              read, stop; prints each result and the default domain
 *   fork       fork; parent and child work; no PAPI use by the program
 *   fork-papi  fork; the child re-initialises PAPI and counts as in papi
 *   papi-fork  count as in papi, then fork; the child works (no PAPI calls)
 *   papi-thread  count as in papi in a second thread (no PAPI_thread_init)
 *   papi-exec-fail  count as in papi, then an exec that fails, then work
 * Prints "name=value" lines on stdout. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAPI_VER_CURRENT 0x07000000
#define PAPI_NULL (-1)
#define PAPI_DEFDOM 4

static struct {
    int (*library_init)(int);
    int (*get_opt)(int, void *);
    int (*get_cmp_opt)(int, void *, int);
    int (*create_eventset)(int *);
    int (*event_name_to_code)(const char *, int *);
    int (*get_event_component)(int);
    int (*add_event)(int, int);
    int (*start)(int);
    int (*read)(int, long long *);
    int (*stop)(int, long long *);
} papi;

static volatile double sink;

static void work(double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        for (int i = 0; i < 100000; i++)
            sink += i * 0.5;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

static int load(void)
{
    if (!dlopen("libpapi.so.7.0", RTLD_NOW | RTLD_GLOBAL)) {
        printf("load=%s\n", dlerror());
        return 0;
    }
#define SYM(f, n) *(void **)&papi.f = dlsym(RTLD_DEFAULT, n)
    SYM(library_init, "PAPI_library_init");
    SYM(get_opt, "PAPI_get_opt");
    SYM(get_cmp_opt, "PAPI_get_cmp_opt");
    SYM(create_eventset, "PAPI_create_eventset");
    SYM(event_name_to_code, "PAPI_event_name_to_code");
    SYM(get_event_component, "PAPI_get_event_component");
    SYM(add_event, "PAPI_add_event");
    SYM(start, "PAPI_start");
    SYM(read, "PAPI_read");
    SYM(stop, "PAPI_stop");
#undef SYM
    return 1;
}

static void count(const char *who)
{
    int es = PAPI_NULL, code = 0;
    long long v[1] = {0}, w[1] = {0};
    printf("%s.init=%d\n", who, papi.library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT);
    printf("%s.defdom=%d\n", who, papi.get_opt(PAPI_DEFDOM, NULL));
    printf("%s.create=%d\n", who, papi.create_eventset(&es));
    printf("%s.name=%d\n", who, papi.event_name_to_code("perf::TASK-CLOCK", &code));
    printf("%s.cmpdefdom=%d\n", who, papi.get_cmp_opt(PAPI_DEFDOM, NULL, papi.get_event_component(code)));
    printf("%s.add=%d\n", who, papi.add_event(es, code));
    fflush(stdout);
    printf("%s.start=%d\n", who, papi.start(es));
    work(0.05);
    printf("%s.read=%d\n", who, papi.read(es, v));
    printf("%s.counted=%d\n", who, v[0] > 0);
    work(0.02);
    printf("%s.stop=%d\n", who, papi.stop(es, w));
    printf("%s.grew=%d\n", who, w[0] > v[0]);
    printf("%s.defdom_after=%d\n", who, papi.get_opt(PAPI_DEFDOM, NULL));
}

static void *counting_thread(void *arg)
{
    count(arg);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "papi";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(mode, "papi") == 0) {
        if (!load())
            return 1;
        work(0.02);
        count("main");
        work(0.02);
        return 0;
    }
    if (strcmp(mode, "papi-exec-fail") == 0) { /* count as in papi, then an exec that fails */
        if (!load())
            return 1;
        work(0.02);
        count("main");
        execl("/nonexistent/psuite-test", "x", (char *)NULL);
        printf("exec.failed=1\n");
        work(0.05);
        return 0;
    }
    if (strcmp(mode, "papi-thread") == 0) {
        pthread_t t;
        if (!load())
            return 1;
        work(0.02);
        if (pthread_create(&t, NULL, counting_thread, "thread") != 0 || pthread_join(t, NULL) != 0)
            return 1;
        work(0.02);
        return 0;
    }
    int with_papi = strcmp(mode, "fork-papi") == 0, before = strcmp(mode, "papi-fork") == 0;
    if ((with_papi || before) && !load())
        return 1;
    if (before)
        count("main");
    work(0.03);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        if (with_papi)
            count("child");
        work(0.05);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    work(0.02);
    printf("child=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
