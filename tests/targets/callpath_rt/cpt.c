/* Known call structure for the call-path capture tests:
 *   chain N            main -> a -> work (N), main -> b -> work (N/2), main -> b -> c -> work (N/4)
 *   threads K N        K threads: worker -> a -> work (N each); main joins
 *   recurse D N        main -> rec x D -> work, N iterations at the bottom, repeated
 *   dl LIB N           main -> via_lib -> LIB's lib_entry -> lib_work (dlopen'd)
 *   sleep MS N         main -> a -> work (N), then main -> nap -> nanosleep (MS)
 *   fork N             chain in the parent and in a forked child
 *   dlstress LIB N     chain while another thread dlopens and dlcloses LIB
 *                      in a loop (the loader's lock taken all the time)
 *   phdr               counts the objects dl_iterate_phdr shows, says if libc is one
 * then, by argv[3] or the last argument: "exit" (default), "_exit", "segv". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
/* keeps a call from becoming a jump (the caller's frame would vanish) */
#define KEEP(x) __asm__ volatile("" : "+x"(x))

NOINLINE double work(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++) {
        x += (double)i * 0.5;
        KEEP(x);
    }
    return x;
}

NOINLINE double c(long n)
{
    double r = work(n);
    KEEP(r);
    return r + 3;
}

NOINLINE double b(long n)
{
    double r = work(n);
    KEEP(r);
    r += c(n / 2);
    KEEP(r);
    return r + 2;
}

NOINLINE double a(long n)
{
    double r = work(n);
    KEEP(r);
    return r + 1;
}

NOINLINE double rec(int d, long n)
{
    double r = d <= 1 ? work(n) : rec(d - 1, n);
    KEEP(r);
    return r + 1;
}

NOINLINE double nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    double r = (double)ms;
    KEEP(r);
    return r;
}

static long iters;

NOINLINE static void *worker(void *arg)
{
    double r = a(iters);
    KEEP(r);
    *(double *)arg = r;
    return NULL;
}

NOINLINE double via_lib(double (*entry)(long), long n)
{
    double r = entry(n);
    KEEP(r);
    return r + 1;
}

static volatile double sink;
static volatile int stop;

static void *loader(void *arg)
{
    long rounds = 0;
    while (!stop) {
        void *h = dlopen((const char *)arg, RTLD_NOW);
        if (h)
            dlclose(h);
        rounds++;
    }
    return (void *)rounds;
}

static int seen(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    int *found = data;
    found[0]++;
    if (info->dlpi_name && strstr(info->dlpi_name, "libc.so"))
        found[1] = 1;
    return 0;
}

static void chain(long n)
{
    sink += a(n);
    sink += b(n / 2);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "chain";
    const char *end = argc > 2 ? argv[argc - 1] : "exit";
    if (!strcmp(mode, "chain")) {
        chain(atol(argv[2]));
    } else if (!strcmp(mode, "threads")) {
        int k = atoi(argv[2]);
        iters = atol(argv[3]);
        pthread_t t[16];
        double out[16];
        for (int i = 0; i < k && i < 16; i++)
            pthread_create(&t[i], NULL, worker, &out[i]);
        for (int i = 0; i < k && i < 16; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(mode, "recurse")) {
        int d = atoi(argv[2]);
        long n = atol(argv[3]);
        for (int rep = 0; rep < 200; rep++)
            sink += rec(d, n);
    } else if (!strcmp(mode, "dl")) {
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        double (*entry)(long) = (double (*)(long))dlsym(h, "lib_entry");
        sink += via_lib(entry, atol(argv[3]));
    } else if (!strcmp(mode, "sleep")) {
        sink += a(atol(argv[3]));
        sink += nap(atol(argv[2]));
    } else if (!strcmp(mode, "dlstress")) {
        pthread_t t;
        void *rounds;
        pthread_create(&t, NULL, loader, argv[2]);
        chain(atol(argv[3]));
        stop = 1;
        pthread_join(t, &rounds);
        printf("%ld loads\n", (long)rounds);
    } else if (!strcmp(mode, "phdr")) {
        int found[2] = {0, 0};
        dl_iterate_phdr(seen, found);
        printf("%d objects, libc %s\n", found[0], found[1] ? "found" : "missing");
    } else if (!strcmp(mode, "fork")) {
        pid_t pid = fork();
        chain(atol(argv[2]));
        if (pid == 0)
            exit(0);
        waitpid(pid, NULL, 0);
    }
    printf("done\n");
    fflush(stdout);
    if (!strcmp(end, "_exit"))
        _exit(0);
    if (!strcmp(end, "segv"))
        raise(SIGSEGV);
    return 0;
}
