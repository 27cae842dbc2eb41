#!/usr/bin/env bash
# recorder.sh - the recorder through the CLI, as a user drives it.
#
# Records a run, checks `zstd -t`, `npurr info`, `npurr reindex` (the
# rebuilt index equals the recorded one), a trace cut inside a frame
# (info and reindex say how far it is complete, exit 1), and the errors
# and usage of info/reindex (missing dir, foreign dir, bad arguments), and
# a bad NPURR_CHUNK_EVENTS refused before anything is written.
# usage: recorder.sh /path/to/npurr [build-dir]
set -u
NPURR=${1:?usage: recorder.sh /path/to/npurr [build-dir]}
tmp=$(mktemp -d /tmp/npurr_e2e_recorder.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# chunks of 65536 events: the small runs here must span several chunks
export NPURR_CHUNK_EVENTS=65536
expect_exit() { # expected-code description command...
    local want=$1 what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    [ "$got" -eq "$want" ] || fail "$what: exit $got, expected $want; stderr: $(cat "$tmp/err")"
}

run=$tmp/run
expect_exit 0 "record" "$NPURR" record -k combine-sender -o "$run"
[ -s "$run/trace.zst" ] && [ -s "$run/index.db" ] || fail "record did not write trace.zst and index.db"
zstd -q -t "$run/trace.zst" || fail "zstd -t rejects $run/trace.zst"
[ "$(zstd -q -d -c "$run/trace.zst" | head -c 4)" = "NPRH" ] || fail "zstd -d does not start with the header frame"

expect_exit 0 "info" "$NPURR" info "$run"
cp "$tmp/out" "$tmp/info1"
grep -q '^kernel       combine-sender$' "$tmp/info1" || fail "info: no kernel line: $(cat "$tmp/info1")"
grep -q '^command      .*record.*-k combine-sender' "$tmp/info1" || fail "info: no command line"
grep -q '^outcome      completed' "$tmp/info1" || fail "info: outcome is not completed"
grep -q '^check        passed' "$tmp/info1" || fail "info: check is not passed"
grep -q 'bytes/event' "$tmp/info1" || fail "info: no bytes per event"
grep -q '^compression  .*x' "$tmp/info1" || fail "info: no compression ratio"
grep -q '^duration     ' "$tmp/info1" || fail "info: no duration"
grep -q '^  xfer_issue ' "$tmp/info1" || fail "info: no per-kind counts"
events=$(sed -n 's/^events *\([0-9][0-9]*\) in \([0-9][0-9]*\) chunks$/\1/p' "$tmp/info1")
chunks=$(sed -n 's/^events *\([0-9][0-9]*\) in \([0-9][0-9]*\) chunks$/\2/p' "$tmp/info1")
[ -n "$events" ] && [ "$events" -gt 0 ] || fail "info: no event count: $(cat "$tmp/info1")"
[ "$chunks" -ge 2 ] || fail "info: expected at least 2 chunks, got '$chunks'"

# reindex from the trace alone gives the same index.
if command -v sqlite3 >/dev/null; then
    for t in meta strings tracks sites objects rings chunks waits; do
        sqlite3 "$run/index.db" "SELECT * FROM $t ORDER BY 1" >>"$tmp/dump1" || fail "sqlite3 $t"
    done
fi
rm "$run/index.db"
expect_exit 1 "info without index.db" "$NPURR" info "$run"
grep -q 'index.db is missing' "$tmp/err" || fail "info without index: $(cat "$tmp/err")"
expect_exit 0 "reindex" "$NPURR" reindex "$run"
expect_exit 0 "info after reindex" "$NPURR" info "$run"
grep -v '^index ' "$tmp/info1" >"$tmp/a"
grep -v '^index ' "$tmp/out" >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || fail "info differs after reindex: $(diff "$tmp/a" "$tmp/b")"
if command -v sqlite3 >/dev/null; then
    for t in meta strings tracks sites objects rings chunks waits; do
        sqlite3 "$run/index.db" "SELECT * FROM $t ORDER BY 1" >>"$tmp/dump2"
    done
    cmp -s "$tmp/dump1" "$tmp/dump2" || fail "reindex changed the index tables"
fi

# A trace cut in the middle of a frame still opens and says how far it is complete.
cut=$tmp/cut
mkdir "$cut"
size=$(stat -c %s "$run/trace.zst")
head -c $((size / 2)) "$run/trace.zst" >"$cut/trace.zst"
expect_exit 1 "info on a truncated trace" "$NPURR" info "$cut"
grep -q 'complete up to seq [0-9]' "$tmp/err" || fail "info: no completeness: $(cat "$tmp/err")"
expect_exit 1 "reindex of a truncated trace" "$NPURR" reindex "$cut"
grep -q 'truncated.*complete up to seq [1-9][0-9]*' "$tmp/err" || fail "reindex: $(cat "$tmp/err")"
[ -s "$cut/index.db" ] || fail "reindex of a truncated trace wrote no index"
expect_exit 1 "info on a reindexed truncated trace" "$NPURR" info "$cut"
grep -q '^outcome      truncated' "$tmp/out" || fail "info: outcome is not truncated"

# Errors and usage.
expect_exit 1 "info on a missing dir" "$NPURR" info "$tmp/nope"
grep -q 'no such run directory' "$tmp/err" || fail "info missing dir: $(cat "$tmp/err")"
mkdir "$tmp/foreign" && echo notes >"$tmp/foreign/notes.txt"
expect_exit 1 "info on a foreign dir" "$NPURR" info "$tmp/foreign"
grep -q 'not an npurr run' "$tmp/err" || fail "info foreign: $(cat "$tmp/err")"
expect_exit 1 "reindex of a foreign dir" "$NPURR" reindex "$tmp/foreign"
grep -q 'not an npurr run' "$tmp/err" || fail "reindex foreign: $(cat "$tmp/err")"
"$NPURR" record -k combine-sender -o "$tmp/foreign" >/dev/null 2>&1 && fail "record into a foreign dir succeeded"
[ -e "$tmp/foreign/trace.zst" ] && fail "record wrote into a foreign dir"
expect_exit 2 "info without RUN" "$NPURR" info
expect_exit 2 "reindex with two RUNs" "$NPURR" reindex "$run" "$cut"
expect_exit 2 "info with a bad option" "$NPURR" info --frobnicate "$run"
expect_exit 0 "info --help" "$NPURR" info --help
grep -q '^usage: npurr info RUN' "$tmp/out" || fail "info --help"
expect_exit 0 "reindex --help" "$NPURR" reindex --help
grep -q '^usage: npurr reindex RUN' "$tmp/out" || fail "reindex --help"
# call sites name files relative to the repository, so a run replays in any
# checkout of the same source
expect_exit 0 "sites" "$NPURR" sql "$run" "select count(*), sum(file like '/%') from sites"
grep -qE '^ *[1-9][0-9]* +0 *$' "$tmp/out" || fail "sites with absolute paths: $(cat "$tmp/out")"
NPURR_CHUNK_EVENTS=12x expect_exit 1 "bad NPURR_CHUNK_EVENTS" "$NPURR" record -k combine-sender -o "$tmp/badchunk"
grep -q 'NPURR_CHUNK_EVENTS=12x: expected a number of events from 1024 to' "$tmp/err" ||
    fail "bad NPURR_CHUNK_EVENTS: $(cat "$tmp/err")"
[ ! -e "$tmp/badchunk" ] || fail "bad NPURR_CHUNK_EVENTS left $tmp/badchunk behind"
echo "recorder e2e: ok ($events events, $chunks chunks)"
