/* overflow.c - unbounded recursion (a stack overflow), in main or in a
 * thread:  overflow main | thread | own
 * "own" sets its own alternate signal stack first and prints whether it is
 * still the one in place just before overflowing. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int deep(int n)
{
    volatile char frame[512];
    frame[0] = (char)n;
    return deep(n + 1) + frame[0];
}

static void *recurse(void *arg)
{
    (void)arg;
    deep(0);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "main";
    if (!strcmp(how, "own")) {
        static char mine[1 << 16];
        stack_t ss = {.ss_sp = mine, .ss_size = sizeof mine}, now;
        sigaltstack(&ss, NULL);
        sigaltstack(NULL, &now);
        printf("own alternate stack %s\n", now.ss_sp == mine && !(now.ss_flags & SS_DISABLE) ? "kept" : "replaced");
        fflush(stdout);
    }
    if (!strcmp(how, "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, recurse, NULL);
        pthread_join(t, NULL);
    }
    deep(0);
    return 0;
}
