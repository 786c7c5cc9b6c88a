/* collector_view.c - what a program can see of psuite's collector, driven
 * by its arguments:
 *   collector_view children        wait() and the kernel's list of this
 *                                  process's children, printed
 *   collector_view spin SECONDS    SECONDS of CPU time, then "spun"
 *   collector_view forkexec FILE   a child with stderr on FILE execs
 *                                  /bin/true; its status printed */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    if (!strcmp(how, "children")) {
        int status;
        pid_t w = waitpid(-1, &status, WNOHANG);
        printf("waitpid: %d %s\n", (int)w, w < 0 ? strerror(errno) : "");
        char path[64], list[4096] = "";
        snprintf(path, sizeof path, "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(list, sizeof list, f))
                list[0] = '\0';
            fclose(f);
        }
        printf("children: [%s]\n", list);
        return 0;
    }
    if (!strcmp(how, "spin")) {
        double until = cpu_seconds() + (argc > 2 ? atof(argv[2]) : 1.0);
        volatile double x = 0;
        while (cpu_seconds() < until)
            for (int i = 0; i < 100000; i++)
                x += i * 0.5;
        printf("spun\n");
        return 0;
    }
    if (!strcmp(how, "forkexec") && argc > 2) {
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(126);
            close(fd);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        printf("child: %d\n", status);
        return 0;
    }
    fprintf(stderr, "usage: collector_view children | spin SECONDS | forkexec FILE\n");
    return 2;
}
