/* omp_work.c - an OpenMP parallel loop on 4 threads (libgomp). */
#include <omp.h>
#include <stdio.h>

__attribute__((noinline)) double omp_kernel(long n)
{
    double sum = 0;
#pragma omp parallel for num_threads(4) reduction(+ : sum) schedule(static)
    for (long i = 0; i < n; i++)
        sum += (double)i * 0.5;
    return sum;
}

int main(void)
{
    double s = omp_kernel(200000000L);
    printf("threads %d sum %g\n", omp_get_max_threads() > 0 ? 4 : 0, s);
    return 0;
}
