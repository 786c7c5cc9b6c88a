/* hard_endings.c - ends in ways that give an in-process report writer no
 * chance, so a test can check the report is written all the same:
 *   exit_group N SECONDS  spin SECONDS of CPU time, then the raw exit_group
 *                         system call with status N (as Go's runtime ends)
 *   spin [TAG]            print "running PID" then spin until killed (TAG
 *                         only marks the command line)
 *   setuid SECONDS        spin, then setuid(nobody) and return 0
 *   chroot DIR SECONDS    spin, then chroot(DIR) and return 0
 *   close_stderr fclose|close  print a line, spin a little, close stderr
 *                         (as coreutils' close_stdout does) and return 0
 *   kill_children N [PIDFILE [SLOW MS]]  fork N children that spin; kill
 *                         each by SIGKILL 1 ms after fork (the first SLOW of
 *                         them MS ms after), waiting for it; their pids go
 *                         to PIDFILE, one a line
 *   say                   a line on stdout, a line on stderr
 *   quiet                 a little work, nothing printed
 * Returns 9 on a failed call, with the reason on stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Spin until the process has used `seconds` of CPU time more (forever if negative). */
static void spin_cpu(double seconds)
{
    double start = cpu_seconds();
    volatile double x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += i * 0.5;
    } while (seconds < 0 || cpu_seconds() - start < seconds);
}

static int failed(const char *what)
{
    printf("%s: %s\n", what, strerror(errno));
    return 9;
}

static int kill_children(int n, const char *pidfile, int slow, int slow_ms)
{
    FILE *pids = pidfile ? fopen(pidfile, "w") : NULL;
    if (pidfile && !pids)
        return failed(pidfile);
    int killed = 0;
    for (int i = 0; i < n; i++) {
        fflush(NULL); /* nothing buffered to be written twice */
        pid_t child = fork();
        if (child < 0)
            return failed("fork");
        if (child == 0) {
            spin_cpu(-1);
            _exit(0);
        }
        long ms = i < slow ? slow_ms : 1;
        struct timespec wait = {ms / 1000, ms % 1000 * 1000000};
        nanosleep(&wait, NULL);
        kill(child, SIGKILL);
        int status;
        if (waitpid(child, &status, 0) != child)
            return failed("waitpid");
        killed += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        if (pids)
            fprintf(pids, "%d\n", (int)child);
    }
    if (pids)
        fclose(pids);
    printf("%d of %d children killed by SIGKILL\n", killed, n);
    return 0;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    if (!strcmp(how, "exit_group") && argc > 3) {
        printf("ending by exit_group\n");
        fflush(stdout);
        spin_cpu(atof(argv[3]));
        syscall(SYS_exit_group, atoi(argv[2]));
        return 8; /* not reached */
    }
    if (!strcmp(how, "spin")) {
        printf("running %d\n", (int)getpid());
        fflush(stdout);
        spin_cpu(-1);
    }
    if (!strcmp(how, "setuid") && argc > 2) {
        spin_cpu(atof(argv[2]));
        if (setgid(NOBODY) || setuid(NOBODY))
            return failed("setuid");
        printf("now uid %d\n", (int)getuid());
        return 0;
    }
    if (!strcmp(how, "chroot") && argc > 3) {
        spin_cpu(atof(argv[3]));
        if (chroot(argv[2]) || chdir("/"))
            return failed("chroot");
        printf("now in %s\n", access("/etc/passwd", F_OK) ? "the new root" : "the old root");
        return 0;
    }
    if (!strcmp(how, "close_stderr") && argc > 2) {
        printf("closing stderr by %s\n", argv[2]);
        fflush(stdout);
        spin_cpu(0.05);
        if (!strcmp(argv[2], "fclose"))
            fclose(stderr);
        else
            close(2);
        return 0;
    }
    if (!strcmp(how, "kill_children") && argc > 2)
        return kill_children(atoi(argv[2]), argc > 3 ? argv[3] : NULL, argc > 5 ? atoi(argv[4]) : 0, argc > 5 ? atoi(argv[5]) : 0);
    if (!strcmp(how, "say")) {
        printf("to stdout\n");
        fflush(stdout);
        fprintf(stderr, "to stderr\n");
        return 0;
    }
    if (!strcmp(how, "quiet")) {
        spin_cpu(0.01);
        return 0;
    }
    fprintf(stderr, "usage: hard_endings exit_group N SECONDS | spin [TAG] | setuid SECONDS | chroot DIR SECONDS"
                    " | close_stderr fclose|close | kill_children N [PIDFILE] | say | quiet\n");
    return 2;
}
