/* fini_main.c - fini_main PLUGIN SECONDS: loads PLUGIN, has its destructor
 * burn SECONDS of CPU and dlcloses it from main (through close_plugin, a
 * frame of the program's own below dlclose). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int close_plugin(void *h)
{
    int rc = dlclose(h);
    __asm__ volatile("" ::: "memory"); /* not a tail call: close_plugin stays on the stack */
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*set)(double) = (void (*)(double))dlsym(h, "plugin_seconds");
    set(atof(argv[2]));
    return close_plugin(h) ? 3 : 0;
}
