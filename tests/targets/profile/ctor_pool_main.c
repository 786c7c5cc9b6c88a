/* ctor_pool_main.c - linked with libctor_pool_lib.so: waits for the
 * thread the library's constructor started, doing nothing itself. */
#include <stdio.h>

void ctor_pool_join(void);

int main(void)
{
    ctor_pool_join();
    printf("pool done\n");
    return 0;
}
