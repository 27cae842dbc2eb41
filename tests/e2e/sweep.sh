#!/usr/bin/env bash
# sweep.sh - `npurr sweep` as a user runs it on a small two-node dispatch:
# a 2x2 grid over --tokens and a hw key writes 4 rows whose end times are
# exactly what `npurr record` gives at those points; points that hang or
# whose options the kernel refuses are rows with their exit code (3, 2),
# not an abort; the page renders in headless Chromium with its plots;
# Ctrl-C keeps the finished rows; bad --vary keys and values are usage
# errors naming them.
#
# Usage: bash sweep.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
here=$(dirname "$0")
. "$here/lib/kernel_run.bash"

roles=(--rdma-senders 2 --rdma-coordinators 1 --forwarders 2 --forwarder-coordinators 1
       --hccs-receivers 2)
dl=(-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 --hidden 64 --topk 2 --experts 8
    "${roles[@]}" --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4
    --hccs-send-chunk 2)

expect 0 "$npurr" sweep "${dl[@]}" --vary --tokens=16,48 --vary hw.roce_gbytes_per_s=12.5,25 \
    -o "$work/sw" -j 2
has "4 of 4 points ran, 4 completed"
has "4/4 points done"
has "ETA"
csv="$work/sw/sweep.csv"
[ -f "$csv" ] && [ -f "$work/sw/sweep.html" ] || fail "sweep wrote no csv or html"
[ "$(wc -l <"$csv")" = 5 ] || { cat "$csv" >&2; fail "expected a header and 4 rows"; }
head -n 1 "$csv" | grep -q '^point,--tokens,hw.roce_gbytes_per_s,exit_code,outcome,check,end_ps,stall_share,events,wall_s,end_.*_ps,.*message$' ||
    { head -n 1 "$csv" >&2; fail "CSV header"; }
# the grid in order, the first --vary slowest
[ "$(cut -d, -f2,3 "$csv" | tail -n +2 | tr '\n' ' ')" = "16,12.5 16,25 48,12.5 48,25 " ] ||
    { cat "$csv" >&2; fail "grid order"; }
awk -F, 'NR > 1 && ($4 != 0 || $5 != "completed" || $6 != "passed" || $7 <= 0) { exit 1 }' "$csv" ||
    { cat "$csv" >&2; fail "a clean point did not complete"; }
# exact: point 3 (--tokens 48, roce 12.5) is `npurr record` of the same
printf 'roce_gbytes_per_s=12.5\n' >"$work/half.hw"
expect 0 "$npurr" record "${dl[@]}" --tokens 48 --hw "$work/half.hw" -o "$work/p3"
expect 0 "$npurr" sql "$work/p3" --csv "SELECT value FROM meta WHERE key = 'end_time_ps'"
want=$(tail -n 1 "$work/out")
got=$(awk -F, 'NR == 4 { print $7 }' "$csv")
[ "$got" = "$want" ] || fail "point 3 ends at $got ps in the sweep, $want ps recorded"

# Failed points are rows: a hang (3) and a shape the kernel refuses (2:
# 7 experts over 4 ranks).
expect 0 "$npurr" sweep "${dl[@]}" --vary inject=none,credit-leak --vary --experts=7,8 -o "$work/bad" -j 2
has "4 of 4 points ran, 1 completed"
codes=$(awk -F, 'NR > 1 { printf "%s ", $4 }' "$work/bad/sweep.csv")
[ "$codes" = "2 0 2 3 " ] || { cat "$work/bad/sweep.csv" >&2; fail "exit codes '$codes', want '2 0 2 3 '"; }
grep -q 'multiple of the 4 ranks' "$work/bad/sweep.csv" || fail "the refused point's message is not in its row"
grep -q 'exit 3' "$work/bad/sweep.html" || fail "the page does not mark the hung point"

# The page: one plot per key, rendered by a browser.
[ "$(grep -c '<svg' "$work/sw/sweep.html")" = 2 ] || fail "expected two plots"
[ "$(grep -c '<polyline' "$work/sw/sweep.html")" = 4 ] || fail "expected two lines per plot"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$browser" ]; then
    flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
           --disable-background-networking --disable-component-update --disable-sync
           --hide-scrollbars --enable-logging=stderr --v=0)
    timeout 120 "$browser" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" \
        --window-size=800,1000 --screenshot="$work/shot.png" "file://$work/sw/sweep.html" \
        >/dev/null 2>"$work/chrome.err" || { tail -20 "$work/chrome.err" >&2; fail "chromium --screenshot"; }
    grep -E 'CONSOLE|Uncaught' "$work/chrome.err" && fail "the browser logged console errors"
    read -r w h ink colors < <(python3 "$here/lib/png_ink.py" "$work/shot.png") || fail "screenshot unreadable"
    echo "screenshot ${w}x${h}: ink $ink, $colors colours"
    python3 -c "import sys; sys.exit(0 if float('$ink') > 0.02 and int('$colors') > 8 else 1)" ||
        fail "the screenshot is blank (ink $ink, $colors colours)"
else
    echo "SKIP: chromium is not installed; the browser check did not run"
fi

# Ctrl-C: the finished rows are kept. Points of a tenth of a second or more,
# so the signal, sent once the first is done, lands before the last.
"$npurr" sweep "${dl[@]}" --vary --tokens=1024,2048,3072,4096,5120,6144,7168,8192 -o "$work/int" -j 1 \
    >"$work/int.out" 2>"$work/int.err" &
pid=$!
for _ in $(seq 1 600); do
    grep -q '^npurr sweep: [1-9]/8 points done' "$work/int.err" 2>/dev/null && break
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 1 ] || { cat "$work/int.err" >&2; fail "interrupted sweep exited $rc, want 1"; }
grep -q 'interrupted' "$work/int.err" || fail "no word of the interruption"
rows=$(($(wc -l <"$work/int/sweep.csv") - 1))
[ "$rows" -ge 1 ] && [ "$rows" -lt 8 ] || { cat "$work/int.err" >&2; fail "$rows rows kept after Ctrl-C"; }

# Usage errors, named.
expect 2 "$npurr" sweep "${dl[@]}" --vary hw.nope=1,2 -o "$work/u1"
has "hw.nope"
expect 2 "$npurr" sweep "${dl[@]}" --vary --tokenz=1,2 -o "$work/u2"
has "--tokenz"
expect 2 "$npurr" sweep "${dl[@]}" --vary hw.roce_gbytes_per_s=fast -o "$work/u3"
has "fast"
expect 2 "$npurr" sweep "${dl[@]}" --vary tokens -o "$work/u4"
has "KEY=V1,V2"
expect 2 "$npurr" sweep "${dl[@]}" -o "$work/u5"
has "--vary"
expect 2 "$npurr" sweep "${dl[@]}" --vary --tokens=16
has "-o DIR is required"
expect 2 "$npurr" sweep --vary --tokens=16 -o "$work/u6"
has "-k"
expect 0 "$npurr" sweep --help
has "usage: npurr sweep"

# --- kill -9 part-way: the finished points are in sweep.partial.csv and
# no point process runs on; a sweep that ends removes the partial file
tag=killtest$$
mkdir "$work/$tag"
"$npurr" sweep -k combine-sender --npus-per-node 8 --tokens 256 -j 1 -o "$work/$tag" \
    --vary --tokens=16,32,48,64,80,96,112,128,144,160,176,192,208,224,240 >/dev/null 2>&1 &
sweep_pid=$!
for _ in $(seq 1 300); do
    [ "$(wc -l < "$work/$tag/sweep.partial.csv" 2>/dev/null || echo 0)" -ge 3 ] && break
    sleep 0.1
done
kill -9 "$sweep_pid"
wait "$sweep_pid" 2>/dev/null
sleep 0.5
rows=$(($(wc -l < "$work/$tag/sweep.partial.csv") - 1))
[ "$rows" -ge 2 ] || fail "a killed sweep kept $rows finished points"
grep -q '^1,16,0,completed,passed,' "$work/$tag/sweep.partial.csv" || fail "the first point's row is not kept"
if pgrep -f -- "-o $work/$tag" >/dev/null; then
    pkill -9 -f -- "-o $work/$tag"
    fail "a sweep killed with kill -9 left its point processes running"
fi
expect 0 "$npurr" sweep -k combine-sender --npus-per-node 2 --tokens 16 --vary --tokens=8,16 -o "$work/$tag"
[ ! -e "$work/$tag/sweep.partial.csv" ] || fail "a finished sweep left sweep.partial.csv"
echo "sweep: ok"
