/* exit() from a constructor, before main: the program's code, measured. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void early(void)
{
    volatile double x = 0;
    for (long i = 0; i < 2000000; i++)
        x += i * 0.5;
    puts("constructor");
    exit(3);
}

int main(void)
{
    puts("main");
    return 0;
}
