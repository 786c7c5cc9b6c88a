/* plugin_main.c - plugin_main A.so B.so SECONDS: loads A, runs it for
 * SECONDS of CPU, dlcloses it, then loads B (often at the address A had)
 * and runs it as long; prints "A 0xADDR B 0xADDR", the address of each
 * one's plugin_run. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *run(const char *path, double seconds)
{
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    void (*fn)(double) = (void (*)(double))dlsym(lib, "plugin_run");
    fn(seconds);
    return lib;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    double seconds = atof(argv[3]);
    void *a = run(argv[1], seconds);
    void *fa = dlsym(a, "plugin_run");
    if (dlclose(a))
        return 3;
    void *b = run(argv[2], seconds);
    printf("A %p B %p\n", fa, dlsym(b, "plugin_run"));
    return 0;
}
