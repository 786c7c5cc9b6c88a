/* static_hello.c - built with -static: psrun must refuse it clearly. */
#include <stdio.h>

int main(void)
{
    puts("hello");
    return 0;
}
