/* own_sigprof.c - a program that profiles itself the classic way: its own
 * SIGPROF handler and ITIMER_PROF timer.  Prints how many of its signals
 * it got, so a test can check it keeps working under psrun --profile. */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

#include "prof_loop.h"

static volatile sig_atomic_t got;

static void on_prof(int sig) { (void)sig; got++; }

int main(void)
{
    signal(SIGPROF, on_prof);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &it, NULL);
    PROF_LOOP(4000); /* about 0.3 s */
    it.it_value.tv_usec = it.it_interval.tv_usec = 0;
    setitimer(ITIMER_PROF, &it, NULL);
    printf("own SIGPROF signals: %d\n", (int)got);
    return got > 0 ? 0 : 1;
}
