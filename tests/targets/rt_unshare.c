/* rt_unshare.c - unshare(CLONE_NEWUSER) from a constructor of the
 * executable (RT_UNSHARE=ctor in the environment), from a child main
 * forks (=child) or from main (any other value), and what it returned:
 * "ctor 0 ok", "main -1 EINVAL", "child 0 ok" ...
 *   rt_unshare SPIN_MS: main first spends SPIN_MS of wall time running,
 *   and after the call sleeps SPIN_MS (so a profile has samples of both). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char ctor_result[64];

static void result(char *out, size_t len)
{
    int rc = unshare(CLONE_NEWUSER);
    snprintf(out, len, "%d %s", rc, rc ? strerrorname_np(errno) : "ok");
}

__attribute__((constructor)) static void ctor(void)
{
    const char *where = getenv("RT_UNSHARE");
    if (where && strcmp(where, "ctor") == 0)
        result(ctor_result, sizeof ctor_result);
}

int main(int argc, char **argv)
{
    long spin_ms = argc > 1 ? atol(argv[1]) : 100;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 0;
    do {
        for (int k = 0; k < 10000; k++)
            x += k;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < spin_ms);
    char main_result[64] = "";
    const char *where = getenv("RT_UNSHARE");
    int in_child = where && strcmp(where, "child") == 0;
    if (in_child) {
        int fds[2];
        if (pipe(fds))
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            result(main_result, sizeof main_result);
            if (write(fds[1], main_result, strlen(main_result) + 1) < 0)
                _exit(1);
            _exit(0);
        }
        close(fds[1]);
        if (read(fds[0], main_result, sizeof main_result - 1) <= 0)
            strcpy(main_result, "no answer");
        waitpid(pid, NULL, 0);
    } else if (!ctor_result[0])
        result(main_result, sizeof main_result);
    struct timespec nap = {spin_ms / 1000, (spin_ms % 1000) * 1000000L};
    while (nanosleep(&nap, &nap))
        ;
    if (ctor_result[0])
        printf("ctor %s\n", ctor_result);
    else
        printf("%s %s\n", in_child ? "child" : "main", main_result);
    return 0;
}
