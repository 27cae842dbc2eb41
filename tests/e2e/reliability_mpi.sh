#!/bin/bash
# Under mpirun a refused option is printed once, by process 0, as every
# other refusal of a split run is (tests/e2e/mpi.sh): all processes parse
# the same command line and exit 2, the others silently. Skipped (exit 77)
# without mpirun or when this npurr was built without MPI.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"

command -v mpirun >/dev/null || { echo "mpirun not installed: skipped"; exit 77; }
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")/../data" && pwd)/lsan_openmpi.supp"
case "${2:-}" in *asan*) export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" ;; esac
mpi() { mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }
mpi "$npurr" record -k dispatch-layered --nodes 2 --tokens 16 --no-trace >"$work/out" 2>&1
if grep -q "built without MPI" "$work/out"; then echo "npurr built without MPI: skipped"; exit 77; fi

for opt in "--nodes 0" "--jitter 0.6" "--hw $work/nonexistent" "--nodes 2 --routing active-ranks:99"; do
    # shellcheck disable=SC2086 # the option and its value are two words
    expect 2 mpi "$npurr" record -k dispatch-layered --nodes 2 --tokens 16 $opt -o "$work/r"
    n=$(grep -c "^npurr record:" "$work/out")
    [ "$n" = 1 ] || { cat "$work/out"; fail "'$opt' was refused $n times, not once"; }
    [ ! -e "$work/r" ] || fail "a refused record left a run folder"
done
echo "reliability_mpi: all checks passed"
