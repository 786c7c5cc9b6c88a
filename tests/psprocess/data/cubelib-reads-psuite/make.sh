#!/bin/sh
# What the real CubeLib reads in cubes psuite writes, for psprocess's tests (test_cube_write_*.py): psuite
# writes cubes from inputs/ (psrun's reports of a 4-rank counting run of tests/targets/work.c; inputs/run1.cubex
# and run2.cubex, psuite's cubes of two call-path profiles of tests/targets/callpath/threads.c, made here with
# psrun: a profile's document holds addresses that only its executable resolves) and from topology.py;
# CubeLib's tools then read them, and what they print is kept here:
#   NAME.values.tsv   every metric x call path x location, and over the whole system, at full precision
#                     (cube_values.cpp, built here against CubeLib's library)
#   NAME.stat-t5.txt  cube_stat -t 5 (with its exit status: CubeLib lists regions by "time" and "visits")
#   NAME.dump-w.txt   cube_dump -w -d (metrics with their CubePL, call tree, system tree, topologies with coordinates)
#   diff.values.tsv, merge.values.tsv   cube_diff run1 run2 and cube_merge run1 run2 (two runs of one program)
# The tools are not part of psuite or its CI: build CubeLib (Score-P's vendor/cubelib) outside the project and
# give its bin directory (with cubelib-config):
#     CUBELIB_BIN=/path/to/cubelib/bin sh tests/psprocess/data/cubelib-reads-psuite/make.sh
# psprocess is the one installed for the Python on PATH.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${CUBELIB_BIN:?give CUBELIB_BIN, the bin directory of a CubeLib installation (cube_* tools, cubelib-config)}"
PATH=$CUBELIB_BIN:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

prefix=$(cd "$CUBELIB_BIN/.." && pwd)
g++ -std=c++11 -O1 -o "$work/cube_values" "$here/cube_values.cpp" $(cubelib-config --cppflags) \
    -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" $(cubelib-config --ldflags) $(cubelib-config --libs)

root=$(cd "$here/../../../.." && pwd)
cd "$work"
if [ "${NEW_PROFILES:-}" ] || [ ! -f "$here/inputs/run1.cubex" ]; then  # two runs of one program, psrun on PATH
    (cd "$root" && gcc -O2 -g -fdebug-prefix-map="$root"=. -o "$work/threads" tests/targets/callpath/threads.c \
        tests/targets/callpath/work.c -lpthread -lm)  # source files named relative to the repository
    for run in run1 run2; do
        psrun -q --callpath --period 1000 -o $run ./threads 100 >/dev/null
        rm -f "$here/inputs/$run.cubex"
        python3 -m psuite.psprocess --cube "$here/inputs/$run.cubex" $(ls $run.*.xml | grep -v callpaths) 2>/dev/null
        rm -f "$here/inputs/$run.stat"
    done
fi
cd "$here"  # the documents named as the cubes' source relative to here
python3 -m psuite.psprocess -c --cube "$work/counts.cubex" inputs/counts/*.xml 2>/dev/null
for run in run1 run2; do  # psuite's cube read and written again
    python3 -c 'import sys; from psuite.psprocess import experiments; from psuite.formats.exporters import cube
cube.write(experiments.load(sys.argv[1]), sys.argv[2])' inputs/$run.cubex "$work/$run.cubex"
done
cd "$work"
python3 "$here/topology.py" topology.cubex
cube_diff -o diff.cubex run1.cubex run2.cubex >/dev/null
cube_merge -o merge.cubex run1.cubex run2.cubex >/dev/null

for c in counts run1 run2 topology diff merge; do
    ./cube_values $c.cubex > "$here/$c.values.tsv"
done
for c in counts run1 run2 topology; do
    { cube_stat -t 5 $c.cubex 2>&1 && echo "exit 0" || echo "exit $?"; } > "$here/$c.stat-t5.txt"
    cube_dump -w -d $c.cubex > "$here/$c.dump-w.txt"
done
cubelib-config --version > "$here/VERSIONS.txt"
