/* closefds.c - a program that tidies descriptors before it ends:
 *   closefds close   closes 0 to 1023
 *   closefds devnull dup2s /dev/null over 3 to 1023
 *   closefds all     closes every descriptor up to its limit */
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "prof_loop_small.h"

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "close";
    SMALL_WORK();
    if (!strcmp(how, "close"))
        for (int fd = 0; fd < 1024; fd++)
            close(fd);
    if (!strcmp(how, "devnull")) {
        int null = open("/dev/null", O_RDWR);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != null)
                dup2(null, fd);
    }
    if (!strcmp(how, "all")) {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        for (long fd = 0; fd < (long)rl.rlim_cur; fd++)
            close((int)fd);
    }
    return 3;
}
