/* An OpenMP program for Score-P reference profiles: threads compute unequal work in a parallel region
   and meet at a barrier. */
#include <omp.h>
#include <stdio.h>

static double work(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)i * 0.5;
    return s;
}

int main(void)
{
    double t = 0;
#pragma omp parallel reduction(+ : t)
    {
        t += work(1000000L * (omp_get_thread_num() + 1));
#pragma omp barrier
    }
    printf("%g\n", t);
    return 0;
}
