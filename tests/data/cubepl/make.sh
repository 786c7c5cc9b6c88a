#!/bin/sh
# CubeLib's own values of the CubePL expressions in expressions.tsv, on the
# Score-P profiles under tests/psprocess/data/scorep: <cube>.csv here
# (the cube, then derived,name,cnode,location,excl,incl; derived,name,error
# for what CubeLib refuses; see cubepl_eval.cpp).
# Needs CubeLib (CUBELIB=its prefix, default /work/tools/cubelib) and g++;
# never run in CI.  Regenerate after changing expressions.tsv.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cube=${CUBELIB:-/work/tools/cubelib}
cfg="$cube/bin/cubelib-config"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O1 -o "$tmp/cubepl_eval" "$here/cubepl_eval.cpp" $("$cfg" --cflags) $("$cfg" --ldflags) $("$cfg" --libs)
for c in mpi1 mpi2 omp; do
    LD_LIBRARY_PATH="$cube/lib" "$tmp/cubepl_eval" "$here/../../psprocess/data/scorep/$c.cubex" \
        "$here/expressions.tsv" > "$here/$c.csv"
done
"$cube/bin/cube_info" -V 2>/dev/null | head -1 > "$here/VERSION.txt" || true
