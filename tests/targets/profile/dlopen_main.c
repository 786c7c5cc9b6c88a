/* dlopen_main.c - loads a library with dlopen during the run and spends
 * most of its time in it:  dlopen_main LIBRARY */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    void *lib = dlopen(argc > 1 ? argv[1] : "libprof_lib.so", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*work)(long) = (void (*)(long))dlsym(lib, "lib_work");
    work(400);
    return 0;
}
