/* rt_naps.c - counts interrupted sleeps:  rt_naps N
 * N iterations of nanosleep(1 ms) and of poll(no fds, 1 ms), each time a
 * call returns EINTR it is counted; prints "nanosleep EINTR A poll EINTR B".
 * Nothing here is ever signalled by the program itself, so any EINTR comes
 * from outside. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1500;
    int nano = 0, polled = 0;
    for (int i = 0; i < n; i++) {
        struct timespec ts = {0, 1000000};
        if (nanosleep(&ts, NULL) && errno == EINTR)
            nano++;
        volatile double x = 0; /* a little CPU between sleeps */
        for (int k = 0; k < 2000; k++)
            x += k;
    }
    for (int i = 0; i < n; i++) {
        if (poll(NULL, 0, 1) < 0 && errno == EINTR)
            polled++;
        volatile double x = 0;
        for (int k = 0; k < 2000; k++)
            x += k;
    }
    printf("nanosleep EINTR %d poll EINTR %d\n", nano, polled);
    return 0;
}
