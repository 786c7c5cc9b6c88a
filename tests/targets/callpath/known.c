/* Known call structure: of the iterations of work(),
 *   main -> a -> work        50 %
 *   main -> b -> work        30 %
 *   main -> b -> c -> work   20 %
 * argv[1]: millions of iterations in all (default 1000).  noipa keeps each
 * function a frame of its own at -O2, and the volatile store after each call
 * keeps the calls from becoming tail calls (a jump would drop the caller's
 * frame). */
#include <stdio.h>
#include <stdlib.h>
#include "work.h"

static volatile unsigned long sink;

__attribute__((noipa)) void c(unsigned long units)
{
    sink = work(2 * units, 3);
    sink += 1;
}

__attribute__((noipa)) void b(unsigned long units)
{
    sink = work(3 * units, 2);
    c(units);
    sink += 1;
}

__attribute__((noipa)) void a(unsigned long units)
{
    sink = work(5 * units, 1);
    sink += 1;
}

int main(int argc, char **argv)
{
    unsigned long millions = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    unsigned long units = millions * 100000;  /* a tenth of the iterations */
    /* in rounds: a change of speed during the run (another job, the host's
     * clock) then moves every path's share alike */
    for (int round = 0; round < 20; round++) {
        a(units / 20);
        b(units / 20);
    }
    printf("known done %lu\n", sink & 1);
    return 0;
}
