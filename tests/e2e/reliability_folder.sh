#!/bin/bash
# No run folder is lost: an export or report onto the run's own files is refused
# (exit 2) and leaves them untouched; `record -o` onto an existing run needs
# --force, and a failed, concurrent or killed (kill -9) record leaves the
# existing run as it was; what a killed record wrote is recoverable from its
# hidden folder, which the next record into the same -o names.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"

small_run "$work/run"
trace_sum=$(sum_of "$work/run/trace.zst")
index_sum=$(sum_of "$work/run/index.db")
untouched() {
    [ "$(sum_of "$work/run/trace.zst")" = "$trace_sum" ] || fail "$1: trace.zst changed"
    [ "$(sum_of "$work/run/index.db")" = "$index_sum" ] || fail "$1: index.db changed"
    [ -z "$(ls -A "$work" | grep '^\.run\.')" ] || { ls -A "$work"; fail "$1: left a hidden folder"; }
}

# --- export onto the run's own files
for out in "$work/run/trace.zst" "$work/run/index.db" "$work/run/timeline.json" \
           "$work/run/../run/trace.zst"; do
    expect 2 "$npurr" export "$work/run" --chrome "$out"; has "elsewhere"
    untouched "export --chrome $out"
done
expect 2 "$npurr" export "$work/run" --chrome "$work/run"; has "is a directory"
untouched "export --chrome RUN"
ln "$work/run/trace.zst" "$work/hardlink.json"
expect 2 "$npurr" export "$work/run" --chrome "$work/hardlink.json"; has "own files"
rm "$work/hardlink.json"
ln -s "$work/run" "$work/alias"
expect 2 "$npurr" export "$work/alias" --chrome "$work/run/x.json"; has "inside the run folder"
untouched "export through a symlink"
for out in "$work/run/index.db" "$work/run/report.html"; do
    expect 2 "$npurr" report "$work/run" -o "$out"; has "elsewhere"
    untouched "report -o $out"
done
expect 2 "$npurr" export "$work/run" --perfetto "$work/run/trace.zst"; has "--perfetto"
untouched "export --perfetto onto the trace"

# --- record -o onto an existing run
expect 2 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 -o "$work/run"
has "already holds a run"; has "--force"; has "-o $work/run-2"   # a fresh name to use
untouched "record without --force"
expect 1 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 --routing "npy:$work/none.npy" \
    -o "$work/run" --force
has "none.npy"
untouched "a failed record with --force"
mkdir "$work/junk" && echo keep > "$work/junk/notes.txt"
expect 2 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 -o "$work/junk" --force
has "not an npurr run"
[ "$(cat "$work/junk/notes.txt")" = keep ] || fail "record touched a folder that is not a run"

# --- two records into one new folder at once: one installs its run, the
# other keeps its own complete recording in its hidden folder
for rounds in 3 4; do
    "$npurr" record -k fullmesh-dispatch-combine --tokens 64 --rounds $rounds -o "$work/both" \
        --quiet >"$work/both.$rounds" 2>&1 &
done
wait %1; a=$?
wait %2; b=$?
[ $((a == 0)) -ne $((b == 0)) ] || { cat "$work"/both.*; fail "exits $a and $b: expected one success"; }
expect 0 "$npurr" info "$work/both"
loser=$(grep -l "is complete in\|already holds a run" "$work"/both.* | head -1)
[ -n "$loser" ] || { cat "$work"/both.*; fail "the second record did not say what happened"; }
if grep -q "is complete in" "$loser"; then
    kept=$(ls -d "$work"/.both.recording.* | head -1)
    expect 0 "$npurr" info "$kept"    # the second recording is whole too
fi

# --- --force replaces only once the new run is complete, and only the
# run's own files: the user's notes and folders in it stay
echo "why this run" > "$work/run/notes.txt"
mkdir "$work/run/mydir" && echo plot > "$work/run/mydir/plot.txt"
expect 0 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 --rounds 2 -o "$work/run" \
    --force --quiet
has "kept your files of the replaced run"
[ "$(cat "$work/run/notes.txt" 2>/dev/null)" = "why this run" ] || fail "--force removed the user's notes.txt"
[ "$(cat "$work/run/mydir/plot.txt" 2>/dev/null)" = plot ] || fail "--force removed the user's folder"
rm -r "$work/run/notes.txt" "$work/run/mydir"
expect 0 "$npurr" info "$work/run"; has "--rounds 2"
[ -z "$(ls -A "$work" | grep '^\.run\.')" ] || fail "--force left the old run behind"
trace_sum=$(sum_of "$work/run/trace.zst")
index_sum=$(sum_of "$work/run/index.db")

# --- "disk full" while recording with --force (a 200 KiB file size limit:
# writes fail with EFBIG): exit 1 naming the file, the old run untouched,
# the partial recording kept in its hidden folder and readable
(trap '' XFSZ; ulimit -f 200; exec "$npurr" record -k fullmesh-dispatch-combine --tokens 64 \
    --rounds 4 -o "$work/run" --force --quiet) >"$work/out" 2>&1
code=$?
[ $code = 1 ] || { cat "$work/out"; fail "record on a full disk exited $code, expected 1"; }
has "write failed"; has "the partial recording is in"
[ "$(sum_of "$work/run/trace.zst")" = "$trace_sum" ] || fail "disk full: trace.zst changed"
[ "$(sum_of "$work/run/index.db")" = "$index_sum" ] || fail "disk full: index.db changed"
partial=$(ls -d "$work"/.run.recording.* | head -1)
[ -n "$partial" ] || fail "disk full: no partial recording kept"
expect 1 "$npurr" reindex "$partial"; has "truncated"
rm -rf "$partial"

# --- kill -9 during a record with --force: the old run is untouched, the
# new one's trace is readable up to its last complete chunk
"$npurr" record -k combine-sender --tokens 8192 --hidden 256 --topk 8 -o "$work/run" --force \
    > "$work/kill.out" 2>&1 &
pid=$!
hidden="$work/.run.recording.$pid"
for _ in $(seq 1 600); do
    size=$(stat -c %s "$hidden/trace.zst" 2>/dev/null || echo 0)
    [ "$size" -gt 10000 ] && break   # the header frame and at least one chunk
    kill -0 $pid 2>/dev/null || fail "the record ended before it could be killed"
    sleep 0.1
done
kill -9 $pid
wait $pid 2>/dev/null
[ "$size" -gt 10000 ] || fail "no chunk was written within 60 s"
untouched_run() {
    [ "$(sum_of "$work/run/trace.zst")" = "$trace_sum" ] || fail "kill -9: trace.zst changed"
    [ "$(sum_of "$work/run/index.db")" = "$index_sum" ] || fail "kill -9: index.db changed"
}
untouched_run
expect 0 "$npurr" info "$work/run"
expect 1 "$npurr" info "$hidden"; has "index.db is missing"
expect 1 "$npurr" reindex "$hidden"; has "truncated"
expect 1 "$npurr" stats "$hidden"; has "truncated"
expect 1 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 -o "$work/run" --force \
    --routing "npy:$work/none.npy"
has ".run.recording.$pid is what an interrupted record"
untouched_run
echo "reliability_folder: all checks passed"
