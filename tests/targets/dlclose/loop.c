/* loop.c - loop PLUGIN N: dlopen and dlclose PLUGIN N times, calling its
 * plugin_step once each time (a plugin loaded and unloaded in a loop, as
 * plugin hosts and MPI's component framework do). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: loop PLUGIN N\n");
        return 2;
    }
    long n = atol(argv[2]), sum = 0;
    for (long i = 0; i < n; i++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "loop: %s\n", dlerror());
            return 1;
        }
        long (*step)(long) = (long (*)(long))dlsym(h, "plugin_step");
        if (step)
            sum += step(i);
        if (dlclose(h)) {
            fprintf(stderr, "loop: %s\n", dlerror());
            return 1;
        }
    }
    printf("%ld\n", sum);
    return 0;
}
