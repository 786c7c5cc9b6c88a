/* blocked_segv.c - every signal blocked, then:
 *   blocked_segv fault   a null pointer dereference (the kernel forces SIGSEGV)
 *   blocked_segv kill    kill(getpid(), SIGSEGV): stays pending, exit 0
 * Prints whether SIGSEGV shows as blocked (and pending). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "fault";
    sigset_t all, now, pending;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("SIGSEGV blocked: %d\n", sigismember(&now, SIGSEGV));
    fflush(stdout);
    if (!strcmp(how, "kill")) {
        kill(getpid(), SIGSEGV);
        sigpending(&pending);
        sigprocmask(SIG_BLOCK, NULL, &now);
        printf("pending: %d, blocked: %d\n", sigismember(&pending, SIGSEGV), sigismember(&now, SIGSEGV));
        return 0;
    }
    volatile int *p = NULL;
    return *p;
}
