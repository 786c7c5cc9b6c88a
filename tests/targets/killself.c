/* killself.c - dies of the signal named by its argument number. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int sig = argc > 1 ? atoi(argv[1]) : SIGTERM;
    raise(sig);
    pause();
    return 0;
}
