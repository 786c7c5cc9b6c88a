/* An MPI program for Score-P reference profiles: ranks compute unequal work, then reduce, exchange with a
   neighbour and wait at a barrier, so the profile has imbalance, collectives and point-to-point. */
#include <mpi.h>
#include <stdio.h>

static double work(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)i * 0.5;
    return s;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x = work(2000000L * (rank + 1)), y = 0, in = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, (rank + 1) % size, 0, &in, 1, MPI_DOUBLE, (rank + size - 1) % size, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("%g %g\n", y, in);
    MPI_Finalize();
    return 0;
}
