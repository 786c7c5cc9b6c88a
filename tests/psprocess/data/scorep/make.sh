#!/bin/sh
# Reference data from the real Score-P and CubeLib tools, for psprocess's tests: Score-P profiles of an MPI
# and an OpenMP program (Score-P's default metrics), CubeLib's algebra on them, and the values its tools print.
# The tools are not part of psuite or its CI: build Score-P (GitHub msmania/Score-P, which carries CubeLib in
# vendor/cubelib; it needs Open MPI and binutils-dev) outside the project and give its bin directory:
#     SCOREP_BIN=/path/to/scorep/bin sh tests/psprocess/data/scorep/make.sh
# Everything is written beside this script; the outputs are small and committed with it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${SCOREP_BIN:?give SCOREP_BIN, the bin directory of a Score-P installation (with CubeLib's cube_* tools)}"
PATH=$SCOREP_BIN:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

scorep mpicc -O1 -o mpi_work "$here/src/mpi_work.c"
scorep gcc -fopenmp -O1 -o omp_work "$here/src/omp_work.c"
for run in 1 2; do
    SCOREP_EXPERIMENT_DIRECTORY=mpi$run mpirun --allow-run-as-root --oversubscribe -np 2 ./mpi_work >/dev/null
    cp mpi$run/profile.cubex "$here/mpi$run.cubex"
done
OMP_NUM_THREADS=2 SCOREP_EXPERIMENT_DIRECTORY=omp ./omp_work >/dev/null
cp omp/profile.cubex "$here/omp.cubex"

cd "$here"
cube_diff -o diff.cubex mpi2.cubex mpi1.cubex >/dev/null
cube_merge -o merge.cubex mpi1.cubex mpi2.cubex >/dev/null
cube_mean -o mean.cubex mpi1.cubex mpi2.cubex >/dev/null
cube_cut -r work -o cut.cubex mpi1.cubex >/dev/null
# per call path and location (cube_dump's csv layout: metric, cnode, then each location), the call tree
# inclusive and exclusive, the metric tree inclusive (CUBE's meaning of a stored value) and exclusive
for c in mpi1 mpi2 omp diff merge mean cut; do
    for z in incl excl; do
        for x in incl excl; do
            cube_dump -m all -x $x -z $z -c all -s csv "$c.cubex" > "$c.$x-metric.$z-call.csv"
        done
    done
    cube_info -l "$c.cubex" > "$c.metrics.txt"
done
{ scorep --version; cubelib-config --version; mpirun --version | head -1; gcc --version | head -1; } > VERSIONS.txt
