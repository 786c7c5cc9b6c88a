/* stay.c - stay PLUGIN: loads PLUGIN, says "running" and calls its
 * plugin_step for ever (until it is killed). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    long (*step)(long) = h ? (long (*)(long))dlsym(h, "plugin_step") : NULL;
    if (!step) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    printf("running\n");
    fflush(stdout);
    volatile long sum = 0;
    for (long i = 0;; i++)
        sum += step(i);
}
