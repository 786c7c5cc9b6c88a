/* ctor_hello.c - prints from a constructor (before main) and from main, so
 * a test can tell whether any of the program's own code ran. */
#include <stdio.h>

__attribute__((constructor)) static void before_main(void)
{
    printf("constructor ran\n");
}

int main(void)
{
    printf("main ran\n");
    return 0;
}
