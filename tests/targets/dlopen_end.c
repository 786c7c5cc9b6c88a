/* dlopen_end.c - a program ended while one of its threads loads and
 * unloads a plugin in a loop (the dynamic loader's locks held most of the
 * time: the plugin's constructor and destructor run under them, and the
 * test's plugin allocates there, inside dl_iterate_phdr's callback):
 *   dlopen_end PLUGIN MS   SIGALRM's default action after MS ms, delivered
 *                          to the loading thread (the main thread blocks
 *                          it) while it is in dlopen or dlclose, most
 *                          likely in malloc with the loader's locks held
 * The report writer must need neither the loader's locks (dl_iterate_phdr)
 * nor malloc. */
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
    pthread_t t;
    if (pthread_create(&t, NULL, load_loop, NULL))
        return 3;
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL); /* the signal goes to the loading thread */
    while (!__atomic_load_n(&loading, __ATOMIC_ACQUIRE))
        usleep(100);
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    pthread_join(t, NULL); /* the signal ends the program meanwhile */
    return 0;
}
