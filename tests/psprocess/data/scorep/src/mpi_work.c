/* An MPI program for Score-P reference profiles: ranks compute unequal work, then reduce, exchange with a
   neighbour in a Cartesian topology (so the profile carries CUBE's <cart>) and wait at a barrier, so the
   profile has imbalance, collectives and point-to-point. The region `work` is reached by three call paths
   (from main, from phase, and at the bottom of a recursion), so cutting at `work` makes several roots and the
   recursion makes a deep call path. */
#include <mpi.h>
#include <stdio.h>

__attribute__((noinline)) static double work(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)i * 0.5;
    return s;
}

__attribute__((noinline)) static double phase(long n)
{
    return work(n) + 1;
}

__attribute__((noinline)) static double recurse(int depth, long n)
{
    if (depth == 0)
        return work(n);
    return recurse(depth - 1, n) + depth;
}

int main(int argc, char **argv)
{
    int rank, size, dims[2] = {0, 0}, periods[2] = {1, 0}, left, right;
    MPI_Comm cart;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_shift(cart, 0, 1, &left, &right);
    double x = work(1000000L * (rank + 1)), y = 0, in = 0;
    x += phase(500000L * (rank + 1));
    x += recurse(6, 300000L * (rank + 1));
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, cart);
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, right, 0, &in, 1, MPI_DOUBLE, left, 0, cart, MPI_STATUS_IGNORE);
    MPI_Barrier(cart);
    if (rank == 0)
        printf("%g %g\n", y, in);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
