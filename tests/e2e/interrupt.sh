#!/bin/bash
# Ctrl-C during `npurr record` stops the run at the next event and still
# leaves a finalised trace and index with the outcome "interrupted" (exit 1):
# nothing recorded is lost.
set -u
npurr=$1
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

"$npurr" record -k combine-sender --tokens 8192 --hidden 256 --topk 8 -o "$tmp/run" \
    > "$tmp/out" 2>&1 &
pid=$!
# wait until the run is under way: event chunks (not only the header) written
# into the hidden folder record writes before renaming it to -o
for _ in $(seq 1 600); do
    size=$(stat -c %s "$tmp/.run.recording.$pid/trace.zst" 2>/dev/null || echo 0)
    [ "$size" -gt 200000 ] && break
    kill -0 $pid 2>/dev/null || fail "the run ended before it could be interrupted"
    sleep 0.1
done
[ "$size" -gt 200000 ] || fail "no chunk was written within 60 s"
kill -INT $pid
wait $pid
code=$?
[ "$code" = 1 ] || fail "exit $code after Ctrl-C, expected 1"
grep -q "^outcome   interrupted" "$tmp/out" || fail "the outcome is not reported as interrupted"
zstd -q -t "$tmp/run/trace.zst" || fail "zstd -t rejects the interrupted trace"
"$npurr" info "$tmp/run" > "$tmp/info" || fail "info on the interrupted run failed"
grep -q "^outcome *interrupted" "$tmp/info" || fail "the index does not record the interruption"
"$npurr" sql "$tmp/run" "SELECT count(*) FROM events WHERE kind = 'run_end'" > "$tmp/sql" || fail "sql failed"
grep -qx " *1" "$tmp/sql" || { cat "$tmp/sql"; fail "the trace does not end with its run_end event"; }
echo "interrupt: all checks passed"
