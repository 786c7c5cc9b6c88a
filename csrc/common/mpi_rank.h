/* mpi_rank.h - the MPI rank from the launcher's environment (Open MPI,
 * MPICH/PMI, PMIx, Slurm), or -1 outside MPI: the runtime names its
 * reports with it, psrun -R its resource report, the same way. */
#ifndef PS_COMMON_MPI_RANK_H
#define PS_COMMON_MPI_RANK_H

#include <stdlib.h>

static inline int ps_common_mpi_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (!*end && r >= 0 && r < 1 << 30)
                return (int)r;
        }
    }
    return -1;
}

#endif
