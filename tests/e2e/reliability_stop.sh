#!/usr/bin/env bash
# reliability_stop.sh - Ctrl-C in the commands that run many rows keeps
# what finished: `npurr hw --compare` prints the table of the rows that ran
# (the others say stopped) and exits 1 (an error, as an interrupted
# record or sweep), at -j 1 as at -j 2; `npurr
# calibrate` ends its runs, writes nothing and exits 1. No run's process
# is left behind. Two quick rows and one that takes seconds: the signal
# comes once two runs have said they ended ("[2/3]"), to the whole process
# group as a terminal's Ctrl-C is (job control on: a background job of a
# script would otherwise ignore SIGINT).
#
# Usage: bash reliability_stop.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"
set -m

cat >"$work/m.csv" <<'CSV'
id,use,kernel,options,phase,measured_us
Q1,train,fullmesh-dispatch-combine,"--npus-per-node 4 --tokens 32 --hidden 1024 --experts 16 --rounds 1",total,60
Q2,train,fullmesh-dispatch-combine,"--npus-per-node 2 --tokens 32 --hidden 1024 --experts 16 --rounds 1",total,50
SLOW,validate,dispatch-layered,"--nodes 2 --tokens 4096",dispatch,20000
CSV

# wait_for FILE TEXT: until FILE has TEXT (at most 120 s).
wait_for() {
    for _ in $(seq 1200); do grep -qF -- "$2" "$1" && return 0; sleep 0.1; done
    cat "$1" >&2
    fail "no '$2' in $1 after 120 s"
}

# no_children PID: the command left no process of its own running.
no_children() {
    sleep 0.5
    ! pgrep -P "$1" >/dev/null || fail "processes of $1 outlived it: $(pgrep -a -P "$1")"
}

# interrupted NAME TEXT CMD...: CMD in the background, Ctrl-C to its
# process group once its stderr has TEXT; it must exit 1 and leave no
# process behind. Its output is in $work/out and $work/err.
interrupted() {
    local name=$1 text=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err" &
    local pid=$!
    wait_for "$work/err" "$text"
    kill -INT -- -$pid
    wait $pid
    local rc=$?
    [ $rc = 1 ] || { cat "$work/out" "$work/err" >&2; fail "$name: exit $rc after Ctrl-C, not 1"; }
    no_children $pid
}

for j in 1 2; do
    interrupted "hw --compare -j $j" "[2/3]" "$npurr" hw --compare "$work/m.csv" -j $j
    grep -Eq '^Q1 .* [0-9.]+ +[0-9]\.[0-9]{3}  fullmesh' "$work/out" || { cat "$work/out" >&2; fail "-j $j: Q1's row is not printed"; }
    grep -Eq '^Q2 .* [0-9.]+ +[0-9]\.[0-9]{3}  fullmesh' "$work/out" || { cat "$work/out" >&2; fail "-j $j: Q2's row is not printed"; }
    grep -Eq '^SLOW .* stopped +-  dispatch-layered' "$work/out" || { cat "$work/out" >&2; fail "-j $j: the stopped row does not say so"; }
    grep -qF "interrupted: 2 of 3 rows finished" "$work/err" || { cat "$work/err" >&2; fail "-j $j: no word of the interruption"; }
done

# calibrate: every row trains so the fit runs the slow one too
sed 's/,validate,/,train,/' "$work/m.csv" >"$work/t.csv"
interrupted calibrate "[2/3]" "$npurr" calibrate "$work/t.csv" -o "$work/fit.hw" -j 2
grep -qF "interrupted: nothing written to $work/fit.hw" "$work/err" || { cat "$work/err" >&2; fail "calibrate: no word of the interruption"; }
[ ! -e "$work/fit.hw" ] || fail "calibrate wrote $work/fit.hw after Ctrl-C"
[ -z "$(ls -A "$work" | grep -v -e '^m.csv$' -e '^t.csv$' -e '^out$' -e '^err$')" ] ||
    fail "calibrate left files: $(ls -A "$work")"
echo "PASS"
