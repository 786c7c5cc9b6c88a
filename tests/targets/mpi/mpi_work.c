/* mpi_work.c - each rank does work proportional to rank + 1 and touches
 * (rank + 1) * 100 pages, so the combined report has a known imbalance. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long psz = sysconf(_SC_PAGESIZE), pages = (rank + 1) * 100L;
    char *p = malloc((size_t)(pages * psz));
    for (long i = 0; p && i < pages; i++)
        p[i * psz] = 1;
    volatile double x = 0;
    for (long i = 0; i < (rank + 1) * 5000000L; i++)
        x += i * 0.5;
    double local = x, total = 0;
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks %d done\n", size);
    free(p);
    MPI_Finalize();
    return 0;
}
