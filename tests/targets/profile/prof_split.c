/* prof_split.c - CPU work split in known proportions between functions in
 * the executable (heavy 60 %, medium 10 %) and one in a shared library
 * (lib_work 30 %, libprof_lib.so from prof_lib.c), then an optional sleep:
 *     prof_split UNITS [SLEEP_MS]
 * Every function runs the same loop body, so the shares are exact in loop
 * iterations; the rounds interleave them so that drift affects all alike. */
#include <stdlib.h>
#include <time.h>

#include "prof_loop.h"

void lib_work(long units);

__attribute__((noinline)) void heavy(long units) { PROF_LOOP(units); }
__attribute__((noinline)) void medium(long units) { PROF_LOOP(units); }

int main(int argc, char **argv)
{
    long units = argc > 1 ? atol(argv[1]) : 100;
    long sleep_ms = argc > 2 ? atol(argv[2]) : 0;
    for (int round = 0; round < 10; round++) {
        heavy(units * 6);
        lib_work(units * 3);
        medium(units);
    }
    if (sleep_ms > 0) {
        struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}
