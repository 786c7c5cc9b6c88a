#!/bin/sh
# Reference data from the real Score-P and CubeLib tools, for psprocess's tests: Score-P profiles of an MPI
# and an OpenMP program (Score-P's default metrics), CubeLib's algebra and other tools on them, and the values
# CubeLib computes for them (README.md beside this script describes every file).
# The tools are not part of psuite or its CI: build Score-P (GitHub msmania/Score-P, which carries CubeLib in
# vendor/cubelib; it needs Open MPI and binutils-dev) outside the project and give its bin directory:
#     SCOREP_BIN=/path/to/scorep/bin sh tests/psprocess/data/scorep/make.sh [path/to/summary.cubex]
# summary.cubex is CubeLib's example (vendor/cubelib/examples/cube/summary.cubex); without it the committed
# derivative of it (summary/summary-cut.cubex) is kept as it is.
# Everything is written beside this script; the outputs are small and committed with it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${SCOREP_BIN:?give SCOREP_BIN, the bin directory of a Score-P installation (with CubeLib's cube_* tools)}"
summary=${1:-}
if [ -n "$summary" ]; then
    summary=$(cd "$(dirname "$summary")" && pwd)/$(basename "$summary")
    [ -f "$summary" ] || { echo "make.sh: $summary is not a file; give the path of CubeLib's summary.cubex" >&2; exit 2; }
fi
PATH=$SCOREP_BIN:$PATH
spec=$SCOREP_BIN/../share/scorep/scorep.spec   # Score-P's metric remapping, as Score-P installs it
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the full-precision value printer, against CubeLib's own library
# shellcheck disable=SC2046
$(cubelib-config --cxx) -O1 $(cubelib-config --cppflags) -o "$work/cube_values" "$here/src/cube_values.cpp" \
    $(cubelib-config --ldflags) $(cubelib-config --libs)

cd "$work"
scorep mpicc -O1 -o mpi_work "$here/src/mpi_work.c"
scorep gcc -fopenmp -O1 -o omp_work "$here/src/omp_work.c"
# two 2-rank runs of one program, a 3-rank run (a different system tree), a 2-thread OpenMP run
for run in mpi1:2 mpi2:2 mpi3r:3; do
    name=${run%:*}
    SCOREP_EXPERIMENT_DIRECTORY=$name mpirun --allow-run-as-root --oversubscribe -np "${run#*:}" ./mpi_work >/dev/null
    cp "$name/profile.cubex" "$here/$name.cubex"
done
OMP_NUM_THREADS=2 SCOREP_EXPERIMENT_DIRECTORY=omp ./omp_work >/dev/null
cp omp/profile.cubex "$here/omp.cubex"

cd "$here"
for f in *.cubex; do
    case "${f%.cubex}" in mpi1 | mpi2 | mpi3r | omp) ;; *) rm -f "$f" ;; esac
done
[ -z "$summary" ] || rm -f summary/summary-cut.cubex
summary_row=$(grep '^summary/' commands.tsv 2>/dev/null || true)   # kept with the cube when not remade
rm -rf text commands.tsv ./*.csv ./*.metrics.txt
find values -name '*.tsv*' ! -name summary-cut.tsv.gz -exec rm -f {} +
mkdir -p text values summary
printf 'output\texit\tcommand\n' > commands.tsv

# cube NAME COMMAND...: a command that writes NAME.cubex; its exit status is recorded (124: killed after 20 s),
# its chatter dropped
cube() {
    out=$1
    shift
    rc=0
    timeout 20 "$@" < /dev/null > "$work/tool.log" 2>&1 || rc=$?
    printf '%s\t%s\t%s\n' "$out.cubex" "$rc" "$*" >> commands.tsv
    [ "$rc" -eq 0 ] || rm -f "$out.cubex"
}
# text NAME COMMAND...: a command whose stdout (text/NAME.txt) and stderr (text/NAME.err, if any) are the result;
# its exit status is recorded (124: killed after 10 s)
text() {
    out=$1
    shift
    rc=0
    timeout 10 "$@" < /dev/null > "text/$out.txt" 2> "text/$out.err" || rc=$?
    [ -s "text/$out.err" ] || rm -f "text/$out.err"
    printf '%s\t%s\t%s\n' "text/$out.txt" "$rc" "$*" >> commands.tsv
}

# the algebra: plain, reduced (-c) and collapsed (-C) system trees; two runs alike, then 2 ranks against 3
for opt in "" -c -C; do
    cube "diff$opt" cube_diff $opt -o "diff$opt.cubex" mpi2.cubex mpi1.cubex
    cube "merge$opt" cube_merge $opt -o "merge$opt.cubex" mpi1.cubex mpi2.cubex
    cube "mean$opt" cube_mean $opt -o "mean$opt.cubex" mpi1.cubex mpi2.cubex
    cube "diff-3r$opt" cube_diff $opt -o "diff-3r$opt.cubex" mpi3r.cubex mpi1.cubex
    cube "merge-3r$opt" cube_merge $opt -o "merge-3r$opt.cubex" mpi1.cubex mpi3r.cubex
    cube "mean-3r$opt" cube_mean $opt -o "mean-3r$opt.cubex" mpi1.cubex mpi3r.cubex
done
cube diff-omp cube_diff -o diff-omp.cubex omp.cubex omp.cubex
# cut: work has three call paths (three roots); several roots; prunes; both; a region on nested call paths
cube cut cube_cut -r work -o cut.cubex mpi1.cubex
cube cut-roots cube_cut -r phase -r MPI_Allreduce -o cut-roots.cubex mpi1.cubex
cube cut-prune cube_cut -p phase -p MPI_Init -o cut-prune.cubex mpi1.cubex
cube cut-both cube_cut -r main -p phase -o cut-both.cubex mpi1.cubex
cube cut-recurse cube_cut -p recurse -o cut-recurse.cubex mpi1.cubex
cube cut-omp cube_cut -r work -o cut-omp.cubex omp.cubex
# the other tools
cube clean cube_clean -o clean.cubex mpi1.cubex
cube inclusify cube_inclusify -o inclusify.cubex mpi1.cubex
cube exclusify cube_exclusify -o exclusify.cubex mpi1.cubex
cube remap cube_remap2 -r "$spec" -o remap.cubex mpi1.cubex
cube remap-omp cube_remap2 -r "$spec" -o remap-omp.cubex omp.cubex
cube remap-small cube_remap2 -r src/remap-small.spec -o remap-small.cubex mpi1.cubex
# psuite's own specification with every construct of Score-P's (cubeplinit masks, metric::set VOID, <val>VOID,
# prederived inclusive and exclusive, postderived, ghost, a metric no profile has, profile metrics it does not name)
cube remap-full cube_remap2 -r src/remap-full.spec -o remap-full.cubex mpi1.cubex
cube remap-full-omp cube_remap2 -r src/remap-full.spec -o remap-full-omp.cubex omp.cubex
# -d: every metric stored, derived ones computed; without -r the specification the profile holds (Score-P's)
cube remap-d cube_remap2 -d -o remap-d.cubex mpi1.cubex
cube remap-full-d cube_remap2 -d -r src/remap-full.spec -o remap-full-d.cubex mpi1.cubex
# derived metrics with CubePL aggregation operators (<cubeplaggr> plus, minus, aggr)
cube remap-aggr cube_remap2 -r src/remap-aggr.spec -o remap-aggr.cubex mpi1.cubex
cube inclusify-small cube_inclusify -o inclusify-small.cubex remap-small.cubex
cube derive-post cube_derive -t postderived -r inclusive -e 'metric::time(i)/metric::visits(e)' -p time \
    time_per_visit mpi1.cubex -o derive-post.cubex
cube derive-pre-excl cube_derive -t prederived -r exclusive -e 'metric::time(e)*metric::visits(e)' -p time \
    time_x_visits mpi1.cubex -o derive-pre-excl.cubex
cube derive-pre-incl cube_derive -t prederived -r inclusive -e 'sqrt(metric::time(i))' -p time \
    sqrt_time mpi1.cubex -o derive-pre-incl.cubex
cube derive-stored cube_derive -r exclusive -e 'metric::time()*2' -p time time2 mpi1.cubex -o derive-stored.cubex
# cube_commoncalltree writes <input>_commoncalltree.cubex next to each input: run it on copies
cp mpi1.cubex "$work/cct-a.cubex"
cp mpi3r.cubex "$work/cct-b.cubex"
cube commoncalltree cube_commoncalltree "$work/cct-a.cubex" "$work/cct-b.cubex"
sed -i "s|$work/||g; s|^commoncalltree.cubex|commoncalltree-a.cubex,commoncalltree-b.cubex|" commands.tsv
for x in a b; do
    if [ -f "$work/cct-${x}_commoncalltree.cubex" ]; then
        cp "$work/cct-${x}_commoncalltree.cubex" "commoncalltree-$x.cubex"
    fi
done
if [ -n "$summary" ]; then
    # CubeLib's example is too large to commit: its subtree under one region, cut by the real tool
    cube summary/summary-cut cube_cut -r setup_mpi_ -o summary/summary-cut.cubex "$summary"
    sed -i "s|$summary|summary.cubex|" commands.tsv
elif [ -n "$summary_row" ]; then
    printf '%s\n' "$summary_row" >> commands.tsv
fi

# text results: cube_cmp (equal and unequal pairs), cube_stat, cube_info
cp mpi1.cubex "$work/mpi1-copy.cubex"
text cmp-same cube_cmp mpi1.cubex mpi1.cubex
text cmp-copy cube_cmp mpi1.cubex "$work/mpi1-copy.cubex"
text cmp-runs cube_cmp mpi1.cubex mpi2.cubex
text cmp-ranks cube_cmp mpi1.cubex mpi3r.cubex
text cmp-omp cube_cmp omp.cubex omp.cubex
sed -i "s|$work/||g" commands.tsv
for c in mpi1 mpi3r omp remap; do
    text "stat-$c" cube_stat "$c.cubex"
    text "stat-p-$c" cube_stat -p "$c.cubex"
    text "stat-t5-$c" cube_stat -t 5 "$c.cubex"
    text "stat-m-$c" cube_stat -m time,visits -r work "$c.cubex"
    text "stat-pct-$c" cube_stat -% -m time,visits -r main,work "$c.cubex"
    text "info-$c" cube_info "$c.cubex"
    text "info-b-$c" cube_info -b "$c.cubex"
done
text stat-tinf-mpi1 cube_stat -t inf mpi1.cubex
text stat-pct-p-mpi1 cube_stat -p -% -r work mpi1.cubex
# cube_dump of CubePL expressions (per location and -t aggr; csv, call tree exclusive (cube_dump's default))
while IFS= read -r expr; do
    name=${expr%%:*}
    text "dump-$name" cube_dump -m "$expr" -c all -s csv mpi1.cubex
    text "dump-$name-aggr" cube_dump -m "$expr" -c all -t aggr -s csv mpi1.cubex
    text "dump-$name-incl" cube_dump -m "$expr" -c all -z incl -s csv mpi1.cubex
done < src/expressions.txt
# an expression read from a file (cube_dump -m FILE), and expressions CubeLib refuses
text dump-file cube_dump -m src/expression.cubepl -c all -s csv mpi1.cubex
text dump-file-aggr cube_dump -m src/expression.cubepl -c all -t aggr -s csv mpi1.cubex
text dump-bad-syntax cube_dump -m 'bad:sqrt(metric::time()' -c all -s csv mpi1.cubex
text dump-bad-compare cube_dump -m 'bad:metric::time() > 0.001' -c all -s csv mpi1.cubex
text dump-bad-metric cube_dump -m 'bad:metric::nosuchmetric()' -c all -s csv mpi1.cubex

# full-precision values of every cube, and of the expressions as metrics of mpi1, gzipped (-n: no name or
# time in the header, so equal values give equal bytes); through a file, so that set -e sees cube_values fail
values() {
    out=$1
    shift
    "$work/cube_values" "$@" > "$work/values.tsv"
    gzip -n -9 < "$work/values.tsv" > "values/$out.tsv.gz"
}
for f in *.cubex; do
    values "${f%.cubex}" "$f"
done
if [ -n "$summary" ]; then
    values summary-cut summary/summary-cut.cubex
fi
tr '\n' '\0' < src/expressions.txt | xargs -0 "$work/cube_values" mpi1.cubex > "$work/values.tsv"
gzip -n -9 < "$work/values.tsv" > values/mpi1.expressions.tsv.gz

# the metric names of every cube here, in its order (cube_info -l)
for f in *.cubex; do
    cube_info -l "$f" > "${f%.cubex}.metrics.txt"
done
{ scorep --version; cubelib-config --version; mpirun --version | head -1; gcc --version | head -1; } > VERSIONS.txt
# values/*.tsv.gz against what cube_dump prints (per location and -t aggr, every view)
python3 src/check_values.py
