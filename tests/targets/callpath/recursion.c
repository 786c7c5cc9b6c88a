/* Deep recursion: rec() calls itself to depth argv[1] (default 1000) and
 * does argv[2] millions of iterations of work at the bottom (default 300).
 * The volatile store after the recursive call keeps gcc from turning the
 * recursion into a loop. */
#include <stdio.h>
#include <stdlib.h>
#include "work.h"

static volatile unsigned long sink;

__attribute__((noipa)) unsigned long rec(unsigned long depth, unsigned long iterations)
{
    unsigned long r;
    if (depth <= 1)
        r = work(iterations, depth);
    else
        r = rec(depth - 1, iterations);
    sink = r;
    return r + depth;
}

int main(int argc, char **argv)
{
    unsigned long depth = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    unsigned long millions = argc > 2 ? strtoul(argv[2], NULL, 10) : 300;
    unsigned long r = rec(depth, millions * 1000000);
    printf("recursion done %lu\n", r & 1);
    return 0;
}
