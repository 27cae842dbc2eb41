#!/usr/bin/env bash
# whatif.sh - `npurr whatif` as a user runs it on a small two-node dispatch:
# the recorded configuration re-runs to the recorded end time, the rows are
# the top resource classes of the critical path, best first, and a row's end
# time is exactly what `npurr record` gives with that resource's hw keys
# scaled by hand (exact, not an estimate). A hung run's what-ifs are rows
# with exit 3. Bad input is named with its exit code.
#
# Usage: bash whatif.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

roles=(--rdma-senders 2 --rdma-coordinators 1 --forwarders 2 --forwarder-coordinators 1
       --hccs-receivers 2)
dl=(-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 --hidden 64 --topk 2 --experts 8
    "${roles[@]}" --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4
    --hccs-send-chunk 2)
expect 0 "$npurr" record "${dl[@]}" -o "$work/dl"
expect 0 "$npurr" sql "$work/dl" --csv "SELECT value FROM meta WHERE key = 'end_time_ps'"
rec_end=$(tail -n 1 "$work/out")

expect 0 "$npurr" whatif "$work/dl" --top 3 -j 2 --csv
# (the first whatif derives critical_path, and says so on stderr: not CSV)
grep -v '^npurr: deriving' "$work/out" >"$work/whatif.csv"
grep -q '^class,share,change,end_ps,speedup,status$' "$work/whatif.csv" || fail "CSV header"
grep -q "^baseline,,,$rec_end,1.000000,0$" "$work/whatif.csv" ||
    { cat "$work/whatif.csv" >&2; fail "the re-run of the recorded configuration does not end at $rec_end"; }
rows=$(grep -vc -e '^class,' -e '^baseline,' "$work/whatif.csv")
[ "$rows" = 3 ] || { cat "$work/whatif.csv" >&2; fail "--top 3 gave $rows rows"; }
# the rows are the top three resource classes of the critical path
expect 0 "$npurr" critical "$work/dl" --by class --csv
want=$(awk -F, 'NR > 1 && $3 !~ /^(jitter|launch|blocked|idle)$/ { print $3 }' "$work/out" | head -n 3 | sort)
got=$(awk -F, 'NR > 2 { print $1 }' "$work/whatif.csv" | sort)
[ "$want" = "$got" ] || fail "what-if classes '$got' are not the top critical classes '$want'"
# best first
awk -F, 'NR > 2 { s = $(NF-1) + 0; if (prev != "" && s > prev + 1e-9) exit 1; prev = s }' "$work/whatif.csv" ||
    { cat "$work/whatif.csv" >&2; fail "rows not best first"; }

# Exact: every row against a recording with its keys scaled by hand.
n=0
while IFS= read -r row; do
    cls=${row%%,*}
    end=$(echo "$row" | awk -F, '{ print $(NF-2) }')
    change=$(echo "$row" | sed -e 's/^[^,]*,[^,]*,//' -e 's/,[^,]*,[^,]*,[^,]*$//' -e 's/"//g')
    : >"$work/scaled.hw"
    IFS=',' read -ra parts <<<"$change"
    for p in "${parts[@]}"; do
        p=${p# }
        printf '%s=%s\n' "${p%% *}" "${p##*->}" >>"$work/scaled.hw"
    done
    [ -s "$work/scaled.hw" ] || fail "no hw change in '$row'"
    n=$((n + 1))
    expect 0 "$npurr" record "${dl[@]}" --hw "$work/scaled.hw" -o "$work/scaled$n"
    expect 0 "$npurr" sql "$work/scaled$n" --csv "SELECT value FROM meta WHERE key = 'end_time_ps'"
    hand=$(tail -n 1 "$work/out")
    [ "$end" = "$hand" ] || fail "whatif $cls ends at $end ps, the same change by hand at $hand ps"
    [ "$end" != "$rec_end" ] || fail "whatif $cls changed nothing ($end ps)"
done < <(tail -n +3 "$work/whatif.csv")
[ "$n" = 3 ] || fail "checked $n rows by hand, expected 3"

# The table as people read it.
expect 0 "$npurr" whatif "$work/dl" --top 2 -j 1
has "recorded end time"
has "2x faster"
grep -q "differs" "$work/out" && fail "the baseline re-run differs from the recording"

# A hung run: the what-ifs hang too, and say so with exit 3 rows.
expect 3 "$npurr" record "${dl[@]}" --inject credit-leak -o "$work/leak"
expect 0 "$npurr" whatif "$work/leak" --top 2 --csv
grep -q '^baseline,,,[0-9]*,1.000000,3$' "$work/out" || { cat "$work/out" >&2; fail "hung baseline"; }

expect 2 "$npurr" whatif "$work/dl" --top 0
has "--top needs a positive number"
expect 2 "$npurr" whatif "$work/dl" -j x
has "is not a number of runs at once (1..256)"
expect 2 "$npurr" whatif
expect 1 "$npurr" whatif "$work/no-such-run"
has "no-such-run"
expect 0 "$npurr" whatif --help
has "usage: npurr whatif RUN"
echo "whatif: ok"
