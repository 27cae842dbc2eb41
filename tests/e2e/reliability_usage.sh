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

# --- strict inputs: --hw and measured CSVs say what is wrong, where
cs=(-k combine-sender --npus-per-node 2 --tokens 8 --hidden 256 --topk 2 --experts 8 --quiet)
printf 'roce_gbytes_per_s=10\nroce_gbps=12\n' > "$work/dup.hw"
expect 2 "$npurr" record "${cs[@]}" --hw "$work/dup.hw" -o "$work/r_dup"; has "dup.hw:2"; has "set again (first at line 1)"
printf '\xef\xbb\xbfroce_gbytes_per_s=10\n' > "$work/bom.hw"   # a byte order mark, as the CSVs accept it
expect 0 "$npurr" record "${cs[@]}" --hw "$work/bom.hw" -o "$work/r_bom"
printf 'roce_gbytes_per_s=1\0\n' > "$work/nul.hw"
expect 2 "$npurr" record "${cs[@]}" --hw "$work/nul.hw" -o "$work/r_nul"; has "NUL byte"
row='fullmesh-dispatch-combine,"--tokens 16 --npus-per-node 2 --experts 8",dispatch,10'
printf 'kernel,options,phase,measured_us\n%s\n' "$row" > "$work/ok.csv"
# a bad --hw is a usage error in hw --compare and calibrate too
expect 2 "$npurr" hw --compare "$work/ok.csv" --hw "$work/dup.hw"; has "set again"
expect 2 "$npurr" calibrate "$work/ok.csv" --hw "$work/dup.hw" -o "$work/f.hw"; has "set again"
# a NUL inside a line is named as such, not as a long line, and nothing after it is dropped
printf 'kernel,options,phase,measured_us\nfullmesh-dispatch-combine,"--tokens 16",dis\0patch,10\n%s\n' \
    "$row" > "$work/nul.csv"
expect 1 "$npurr" hw --compare "$work/nul.csv"; has "nul.csv:2: a NUL byte"
! grep -q "longer than" "$work/out" || fail "a NUL byte reported as a long line"
printf 'kernel,options,phase,measured_us,phase\n%s,combine\n' "$row" > "$work/twice.csv"
expect 1 "$npurr" hw --compare "$work/twice.csv"; has "names the column 'phase' twice"
# msprof rows whose mean overflows: named, not "inf" and a ratio of 0
printf 'Op Name,OP Type,Task Duration(us)\nMoeDistributeDispatch_1,MoeDistributeDispatch,1e308\nMoeDistributeDispatch_2,MoeDistributeDispatch,1e308\n' \
    > "$work/op_summary.csv"
expect 1 "$npurr" hw --compare "$work/op_summary.csv" --kernel-options "-k fullmesh-dispatch-combine --tokens 16"
has "past the largest number"
! grep -q "inf" "$work/out" || fail "an overflowing msprof mean printed as inf"
# -j beyond what is sane is refused, not wrapped round to one at a time
expect 2 "$npurr" sweep "${cs[@]}" --vary --tokens=4,8 -j 2147483648 -o "$work/sj"; has "1..256"
expect 2 "$npurr" whatif "$work/run" -j 2147483648; has "1..256"
echo "reliability_usage: all checks passed"
