#!/bin/sh
# Small cubes for the model's tests (model/), made by the real CubeLib outside psuite and its CI, with the
# values libcube4 computes for them (model/NAME.tsv.gz, as values/ beside make.sh: src/cube_values.cpp):
#   tau.cubex          src/model_cubes.cpp through libcube4: a TAU_ATOMIC metric, attributes everywhere
#   aggr.cubex         src/model_cubes.cpp: derived metrics with CubePL aggregation operators (<cubeplaggr>)
#   composite.cubex    src/model_cubes.cpp: RATE and COMPLEX metrics
#   derive-while.cubex cube_derive of mpi1.cubex: a POSTDERIVED metric whose CubePL loops over a metric's value
#   derive-fixed.cubex cube_derive of mpi1.cubex: a POSTDERIVED metric over metric::fixed::
#   derive-ticks.cubex cube_derive of mpi1.cubex: a loop that runs up to 110,000 times for a time of 1 s, some
#                      35,000 times for the longest time here (a trial evaluation at 1 s stops at 100,000)
# Only model/ is written; make.sh's outputs are not touched.
#     SCOREP_BIN=/path/to/scorep/bin sh tests/psprocess/data/scorep/make-model.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${SCOREP_BIN:?give SCOREP_BIN, the bin directory of a Score-P installation (with CubeLib's cube_* tools)}"
PATH=$SCOREP_BIN:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for prog in cube_values model_cubes; do
    # shellcheck disable=SC2046
    $(cubelib-config --cxx) -O1 $(cubelib-config --cppflags) -o "$work/$prog" "$here/src/$prog.cpp" \
        $(cubelib-config --ldflags) $(cubelib-config --libs)
done

cd "$here"
rm -rf model
mkdir model
"$work/model_cubes" model
# the number of binary digits of each call path's visits: a loop as long as the value asks
cube_derive -t postderived -r inclusive \
    -e '{ ${n} = 0; ${v} = metric::visits(); while (${v} >= 1) { ${v} = ${v} / 2; ${n} = ${n} + 1; }; return ${n}; }' \
    -p visits visit_digits mpi1.cubex -o model/derive-while.cubex > /dev/null
# each call path's share of the whole run's time
cube_derive -t postderived -r inclusive -e 'metric::time() / metric::fixed::time()' \
    -p time time_share mpi1.cubex -o model/derive-fixed.cubex > /dev/null
# time in ticks of 1/110000 s, counted one by one
cube_derive -t postderived -r inclusive \
    -e '{ ${n} = 0; while (${n} < metric::time() * 110000) { ${n} = ${n} + 1; }; return ${n}; }' \
    -p time ticks mpi1.cubex -o model/derive-ticks.cubex > /dev/null
for f in model/*.cubex; do
    "$work/cube_values" "$f" > "$work/values.tsv"
    gzip -n -9 < "$work/values.tsv" > "${f%.cubex}.tsv.gz"
done
