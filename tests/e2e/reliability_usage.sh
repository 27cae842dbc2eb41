#!/bin/bash
# Usage errors are exit 2 with a message that says what is wrong: a run
# inside a run, values a parser used to wrap or saturate, options that
# only fail once the run has started, and messages that named the wrong
# thing. Nothing is recorded or derived by a refused command.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"

small_run "$work/run"
expect 0 "$npurr" stats "$work/run"     # derived once: from here the index must not change
index_sum=$(sum_of "$work/run/index.db")

# --- record -o inside an existing run (a new or an existing subfolder)
expect 2 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 -o "$work/run/sub" --quiet
has "inside the run folder"
expect 2 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 -o "$work/run/a/b" --quiet
has "inside the run folder"
[ "$(ls -A "$work/run" | tr '\n' ' ')" = "index.db trace.zst " ] || { ls -A "$work/run"; fail "record wrote into the run"; }

# --- values found wrong only after the run started (exit 1 before)
expect 2 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 --routing active-ranks:99 \
    -o "$work/r1"; has "active-ranks:99"; has "8 ranks"
expect 2 "$npurr" layout -k fullmesh-dispatch-combine --routing active-ranks:99; has "8 ranks"
expect 2 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 --pct-points 2 --pct-span 100 \
    -o "$work/r1"; has "--pct-delay-us"
expect 2 "$npurr" export "$work/run" --chrome "$work/o.json" --from 5us --to 1us
has "before --from"
[ ! -e "$work/o.json" ] && [ ! -e "$work/r1" ] || fail "a refused command wrote its output"

# --- numbers past what the option can hold
for top in 18446744073709551616 9223372036854775808 -1 0 1x; do
    expect 2 "$npurr" stats "$work/run" --top "$top"; has "--top"
    expect 2 "$npurr" diff "$work/run" "$work/run" --top "$top"; has "--top"
done
expect 0 "$npurr" stats "$work/run" --top 9223372036854775807
expect 2 "$npurr" replay "$work/run" --break-at 18446744073709551616; has "--break-at"

# --- messages that name the right thing
expect 2 "$npurr" export "$work/run" --chrome "$work/o.json" --ranks 0-999999999999
has "the run has 8 ranks"
expect 2 "$npurr" layout -k fullmesh-dispatch-combine --no-trace; has "not an option of this command"
expect 2 "$npurr" record -k=dispatch-layered -o "$work/r1"; has "-k dispatch-layered"
expect 2 "$npurr" layout -k dispatch-layered --nodes 2 --rdma-coordinators 0
has "--rdma-coordinators 0"; has "between 1 and"
expect 0 "$npurr" layout -k dispatch-layered --nodes 2 --rdma-coordinators 1
[ "$(sum_of "$work/run/index.db")" = "$index_sum" ] || fail "a refused command changed the run"
echo "reliability_usage: all checks passed"
