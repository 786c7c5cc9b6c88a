/* stderr_reused - a program that puts its data file on descriptor 2 (as
 * daemons and some loggers do), writes a line to it, works a little and
 * exits: the file must hold exactly what the program wrote. */
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int fd = open(argc > 1 ? argv[1] : "data.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0)
        return 1;
    close(fd);
    static const char line[] = "data\n";
    if (write(2, line, strlen(line)) < 0)
        return 1;
    volatile double x = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    do {
        for (int i = 0; i < 100000; i++)
            x += i * 0.5;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) < 5e7);
    return 0;
}
