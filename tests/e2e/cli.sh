#!/bin/bash
# The CLI contract of DESIGN.md, tried as a user would: every command has
# --help, usage errors exit 2 and name the option, bad values name the option
# and value, record writes RUN/trace.zst (accepted by zstd -t) and
# RUN/index.db and prints the outcome and the stall table.
set -u
npurr=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_exit() {  # expected_code description command...
    local want=$1 what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    [ "$got" = "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "$what: exit $got, expected $want"; }
}

expect_exit 2 "no command" "$npurr"
expect_exit 2 "unknown command" "$npurr" frobnicate
grep -q "'frobnicate' is not a command" "$tmp/err" || fail "unknown command not named"
expect_exit 0 "--help" "$npurr" --help
for cmd in record layout info reindex stats sql export; do
    expect_exit 0 "$cmd --help" "$npurr" "$cmd" --help
    grep -qi "usage" "$tmp/out" || fail "$cmd --help prints no usage"
done

expect_exit 2 "record without -k" "$npurr" record -o "$tmp/r"
grep -q -- "-k KERNEL is required" "$tmp/err" || fail "missing -k not explained"
expect_exit 2 "unknown kernel" "$npurr" record -k nope -o "$tmp/r"
grep -q -- "-k nope: no such kernel" "$tmp/err" || fail "unknown kernel not named"
expect_exit 2 "record without -o" "$npurr" record -k combine-sender
expect_exit 2 "bad --nodes" "$npurr" record -k combine-sender --nodes zero -o "$tmp/r"
grep -q -- "--nodes: 'zero'" "$tmp/err" || fail "bad --nodes not named"
expect_exit 2 "unknown kernel option" "$npurr" record -k combine-sender --frob 3 -o "$tmp/r"
grep -q -- "--frob: not an option of -k combine-sender" "$tmp/err" || fail "unknown option not named"
expect_exit 2 "missing --hw file" "$npurr" record -k combine-sender --hw "$tmp/none.hw" -o "$tmp/r"
grep -q "none.hw: cannot open" "$tmp/err" || fail "missing hw file not named"
printf 'hbm_gbps=fast\n' > "$tmp/bad.hw"
expect_exit 2 "bad --hw value" "$npurr" record -k combine-sender --hw "$tmp/bad.hw" -o "$tmp/r"
grep -q "bad.hw:1: hardware parameter hbm_gbps: 'fast'" "$tmp/err" || fail "bad hw value not named"

# a small healthy run
printf '# faster HBM\nhbm_gbytes_per_s = 3200\n' > "$tmp/fast.hw"
expect_exit 0 "record" "$npurr" record -k combine-sender --npus-per-node 2 --tokens 16 --hidden 256 \
    --experts 8 --topk 2 --hw "$tmp/fast.hw" -o "$tmp/run"
grep -q "^outcome   completed" "$tmp/out" || fail "record did not report completion"
grep -q "^check     passed" "$tmp/out" || fail "record did not report the check"
grep -q "stalls by role" "$tmp/out" || fail "record printed no stall summary"
[ -s "$tmp/run/trace.zst" ] || fail "no trace.zst"
[ -s "$tmp/run/index.db" ] || fail "no index.db"
zstd -q -t "$tmp/run/trace.zst" || fail "zstd -t rejects the trace"
"$npurr" sql "$tmp/run" "SELECT value FROM meta WHERE key='hw.hbm_gbytes_per_s'" > "$tmp/hw"
grep -q 3200 "$tmp/hw" || fail "the --hw value is not recorded in meta"

# `npurr hw --file` is a --hw file as it is; with a comment line longer
# than a line buffer would hold (as a parameter's source may be)
"$npurr" hw --file > "$tmp/defaults.hw"
awk 'BEGIN { printf "# "; for (i = 0; i < 600; i++) printf "s"; print "" }' >> "$tmp/defaults.hw"
[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$tmp/defaults.hw")" -gt 512 ] ||
    fail "hw --file has no line longer than 512 bytes: this check no longer tries one"
expect_exit 0 "record --hw (hw --file)" "$npurr" record -k combine-sender --npus-per-node 2 \
    --tokens 16 --hidden 256 --experts 8 --topk 2 --no-trace --hw "$tmp/defaults.hw"
awk 'BEGIN { printf "# "; for (i = 0; i < 70000; i++) printf "x"; print "" }' > "$tmp/long.hw"
expect_exit 2 "a 70 kB line in --hw" "$npurr" record -k combine-sender --hw "$tmp/long.hw" -o "$tmp/r"
grep -q "long.hw:1: a line of 70003 bytes" "$tmp/err" || fail "an endless line is not named"

# --no-trace runs the same emulation and writes nothing
expect_exit 0 "record --no-trace" "$npurr" record -k combine-sender --npus-per-node 2 --tokens 16 \
    --hidden 256 --experts 8 --topk 2 --no-trace
grep -q "^outcome   completed" "$tmp/out" || fail "--no-trace did not complete"
echo "cli: all checks passed"
