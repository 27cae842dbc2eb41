#!/bin/bash
# Shapes that cannot fit, and bad options, are refused before anything is
# built: a clear message naming the option, exit 2 (the one rule for option
# errors, engine or kernel). The oversize cases run under a 2 GiB address
# space limit: a command that started to build what it was asked would die
# of it instead of giving the message. (Not in the sanitizer build, whose
# shadow memory needs terabytes of address space.)
set -u
npurr=$1
build=${2:-}
. "$(dirname "$0")/lib/reliability.bash"

if [ -n "$build" ] && grep -q "NPURR_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
    limited() { "$@"; }
else
    limited() { (ulimit -v 2097152; "$@"); }
fi

expect 2 limited "$npurr" record -k matmul-reduce-scatter --nodes 1024 -o "$work/r"
has "--nodes must be 1"
expect 2 limited "$npurr" record -k fullmesh-dispatch-combine --nodes 1024 -o "$work/r"
has "--nodes 1024"
expect 2 limited "$npurr" record -k combine-sender --nodes 1024 -o "$work/r"
has "--nodes must be 1"
expect 2 limited "$npurr" record -k dispatch-layered --nodes 1024 -o "$work/r"
has "--nodes 1024"
expect 2 limited "$npurr" record -k dispatch-layered --nodes 2 --tokens 16777216 -o "$work/r"
has "--tokens 16777216"; has "needs at least"; has "this machine has"
expect 2 limited "$npurr" record -k matmul-reduce-scatter --m 65536 --n 65536 --k 65536 \
    -o "$work/r"
has "--m 65536 --n 65536 --k 65536"; has "needs at least"
expect 2 limited "$npurr" layout -k dispatch-layered --nodes 2 --tokens 16777216
has "needs at least"; has "routing plan"
[ -e "$work/r" ] && fail "a refused record created its run folder"
ls -A "$work" | grep -q '^\.r\.' && fail "a refused record left a hidden folder"

# Option errors, engine or kernel: exit 2, naming the option as typed.
expect 2 "$npurr" record -k combine-sender --tokens 3g -o "$work/r"; has "--tokens 3g"
expect 2 "$npurr" record -k combine-sender --tokens abc -o "$work/r"; has "--tokens"
expect 2 "$npurr" record -k combine-sender --no-such-option 1 -o "$work/r"
has "--no-such-option"
expect 2 "$npurr" record -k combine-sender --nodes 0 -o "$work/r"; has "--nodes"
expect 2 "$npurr" record -k combine-sender --hw "$work/none.hw" -o "$work/r"; has "none.hw"
expect 2 "$npurr" layout -k combine-sender --topk 999; has "--topk"
expect 0 "$npurr" record --help; has "0 turns the watchdog off"

# export --ranks 5-3 is a usage error found before anything is derived.
small_run "$work/run"
expect 2 "$npurr" export "$work/run" --ranks 5-3 --chrome "$work/t.json"; has "5-3"
grep -q "deriving" "$work/out" && fail "export derived the tables before refusing --ranks"
# so is a rank the run does not have (from the index's meta, still before deriving)
expect 2 "$npurr" export "$work/run" --ranks 0,99 --chrome "$work/t.json"; has "rank 99"
grep -q "deriving" "$work/out" && fail "export derived the tables before refusing rank 99"
expect 0 "$npurr" sql "$work/run" "SELECT 1"   # derives here, not before
has "deriving"
expect 2 "$npurr" export "$work/run" --ranks 0,99 --chrome "$work/t.json"; has "rank 99"
[ -e "$work/t.json" ] && fail "export with a rank the run lacks wrote a file"
# A measured file too large for the table that folds equal rows into one
# run says so, rather than running each of 100 000 rows on its own (which
# took minutes); under the limit only (the sanitizer build has none).
if ! grep -q "NPURR_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
    awk 'BEGIN { print "id,use,kernel,options,phase,measured_us"
                 for (i = 0; i < 100000; i++)
                     printf "R%d,train,fullmesh-dispatch-combine,\"--npus-per-node 2 --tokens 32 --hidden 1024 --experts 16 --rounds 1\",total,50\n", i }' \
        >"$work/big.csv"
    under_1g() { in_time 120 bash -c 'ulimit -v 1000000; exec "$@"' - "$@"; }
    expect 1 under_1g "$npurr" hw --compare "$work/big.csv"
    has "out of memory for the table of 100000 rows to run"
    expect 1 under_1g "$npurr" calibrate "$work/big.csv" -o "$work/big.hw"
    has "out of memory for the"; has "100000 rows"
    [ -e "$work/big.hw" ] && fail "calibrate wrote a file when its rows could not run"
fi
echo "reliability_limits: all checks passed"
