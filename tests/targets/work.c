/* work.c - test target with known behaviour, driven by its arguments:
 *   work PAGES WORK EXIT_CODE [echo]
 * touches PAGES fresh pages, does WORK million loop iterations (a fixed
 * amount of computation, so separate runs compare), copies stdin to
 * stdout when "echo" is given, prints one line, exits with EXIT_CODE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long pages = argc > 1 ? atol(argv[1]) : 0;
    long work = argc > 2 ? atol(argv[2]) : 0;
    int code = argc > 3 ? atoi(argv[3]) : 0;
    long psz = sysconf(_SC_PAGESIZE);
    if (pages > 0) {
        char *p = mmap(NULL, (size_t)pages * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 99;
        for (long i = 0; i < pages; i++)
            p[i * psz] = 1;
    }
    volatile double x = 0;
    for (long i = 0; i < work * 1000000; i++)
        x += i * 0.5;
    if (argc > 4 && strcmp(argv[4], "echo") == 0) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
            fwrite(buf, 1, n, stdout);
    }
    printf("work done: %ld pages\n", pages);
    return code;
}
