/* fsize_writer.c - a program that meets the file size limit itself.
 * fsize_writer MODE FILE [SECONDS]: with MODE "ignore" it ignores SIGXFSZ,
 * with "default" it leaves the disposition alone, with "none" it writes
 * nothing (only the line and the CPU time); then it writes 4096 bytes to
 * FILE 512 at a time until a write fails, spins SECONDS of CPU time (default
 * 0), and prints what its writes did: the byte count and the failing
 * errno, so a run under psrun can be compared with a bare run. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 64;
    if (strcmp(argv[1], "ignore") == 0)
        signal(SIGXFSZ, SIG_IGN);
    long total = 0;
    int err = 0;
    if (strcmp(argv[1], "none") != 0) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return 65;
        char block[512];
        memset(block, 'x', sizeof block);
        while (total < 4096) {
            ssize_t w = write(fd, block, sizeof block);
            if (w < 0) {
                err = errno;
                break;
            }
            total += w;
        }
        close(fd);
    }
    double spin = argc > 3 ? atof(argv[3]) : 0, start = cpu_seconds();
    volatile unsigned long sink = 0;
    while (cpu_seconds() - start < spin)
        for (int k = 0; k < 100000; k++)
            sink += (unsigned long)k;
    printf("wrote %ld bytes, %s\n", total, err == EFBIG ? "then EFBIG" : err ? strerror(err) : "no error");
    return err == EFBIG ? 3 : 0;
}
