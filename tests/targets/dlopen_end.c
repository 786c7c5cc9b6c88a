/* dlopen_end.c - a program ended while one of its threads loads and
 * unloads a plugin in a loop (the dynamic loader's lock held most of the
 * time: the plugin's constructor and destructor run under it):
 *   dlopen_end PLUGIN MS   SIGALRM's default action after MS ms, delivered
 *                          to the main thread (the loading thread blocks
 *                          it), while the other thread is in dlopen or
 *                          dlclose
 * The report writer must not need the loader's lock (dl_iterate_phdr). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static const char *plugin;
static int loading; /* the loop has loaded the plugin once: the alarm is armed only then */

static void *load_loop(void *arg)
{
    (void)arg;
    for (;;) {
        void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen_end: %s\n", dlerror());
            _exit(4);
        }
        int (*work)(int) = (int (*)(int))dlsym(h, "plugin_work");
        if (work)
            work(100);
        __atomic_store_n(&loading, 1, __ATOMIC_RELEASE);
        dlclose(h);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dlopen_end PLUGIN MS\n");
        return 2;
    }
    plugin = argv[1];
    long ms = atol(argv[2]);
    sigset_t alrm, old;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, &old); /* the new thread inherits the mask */
    pthread_t t;
    if (pthread_create(&t, NULL, load_loop, NULL))
        return 3;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    while (!__atomic_load_n(&loading, __ATOMIC_ACQUIRE))
        usleep(100);
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (volatile unsigned long i = 0;; i++) /* the signal ends the program here */
        ;
    return 0;
}
