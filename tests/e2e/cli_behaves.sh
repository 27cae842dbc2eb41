#!/usr/bin/env bash
# cli_behaves.sh - the CLI behaves like the tools people use (issue 15):
# --opt=value, value names that say what they are, routing kinds from the one
# table in every kernel's help, layout refusing options it does not use,
# stats --csv, the `npurr sql RUN` prompt on piped input, no phantom core,
# `npurr hw` and the --hw checks (units in the key names, old names still
# read, ranges, directories), `npurr info` marking values from --hw, and
# `npurr diff` of a run against a copy with half the RoCE bandwidth.
#
# Usage: bash cli_behaves.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {
    local want=$1
    shift
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    [ "$got" -eq "$want" ] || { cat "$work/out" "$work/err" >&2; fail "expected exit $want, got $got: $*"; }
}
has() { grep -qF -- "$1" "$work/out" || { cat "$work/out" >&2; fail "output lacks '$1'"; }; }
has_err() { grep -qF -- "$1" "$work/err" || { cat "$work/err" >&2; fail "stderr lacks '$1'"; }; }
small=(-k dispatch-layered --nodes 2 --tokens 16 --quiet)

# --- help: value names and routing kinds for every kernel
kernels=$("$npurr" record --help | awk '/^kernels:/{k=1; next} k && /^  [a-z]/{print $1}')
[ -n "$kernels" ] || fail "record --help lists no kernels"
for k in $kernels; do
    expect 0 "$npurr" record -k "$k" --help
    grep -qE -- '^  --[a-z-]+ V ' "$work/out" && fail "$k --help still shows a bare V"
    if grep -q -- '--routing' "$work/out"; then
        for kind in uniform 'zipf:S' 'group-limited[:M]' 'active-ranks:N' 'drop:P' 'npy:PATH'; do
            grep -- '--routing KIND' "$work/out" | grep -qF -- "$kind" || fail "$k --help: --routing lacks $kind"
        done
    fi
done
expect 0 "$npurr" record -k combine-sender --help
has "--ring-bytes BYTES"
has "--tokens N"
has "--data-seed SEED"

# --- layout refuses what only a run uses; takes --opt=value
for opt in "--seed 3" "--jitter 0.1" "--hw /dev/null" "--watchdog-us 5" "--quiet"; do
    # shellcheck disable=SC2086
    expect 2 "$npurr" layout -k dispatch-layered --nodes 2 $opt
    has_err "not an option of \`npurr layout\`"
done
expect 0 "$npurr" layout -k dispatch-layered --nodes=2 --tokens=16
has "cores per rank"

# --- record with --opt=value; the phantom core
expect 0 "$npurr" record -k dispatch-layered --nodes=2 --tokens=16 --quiet -o "$work/a"
expect 0 "$npurr" sql "$work/a" "SELECT count(*) AS n FROM cores WHERE role IS NULL" --csv
[ "$(tail -n 1 "$work/out")" = 0 ] || fail "a core without a role (phantom r0 AIC0?): $(cat "$work/out")"
expect 0 "$npurr" sql "$work/a" "SELECT count(*) FROM tracks WHERE name LIKE 'r0 AIC0 %'" --csv
[ "$(tail -n 1 "$work/out")" = 0 ] || fail "r0 AIC0 still has a track"

# --- stats --csv
expect 0 "$npurr" stats "$work/a" --by=cause --csv
head -n 1 "$work/out" | grep -qx "table,by,group,cores,count,total_ps,mean_ps,max_ps,share" ||
    fail "stats --csv header: $(head -n 1 "$work/out")"
awk -F, 'NR > 1 && ($2 != "cause" || $9 > 1 || $9 < 0) {bad=1} END {exit bad}' "$work/out" ||
    fail "stats --csv rows: $(cat "$work/out")"

# --- npurr sql RUN: a prompt, driven from a pipe
printf '.tables\n.schema wait_causes\nSELECT count(*)\n  AS n FROM events;\n.mode csv\nSELECT 7 AS x;\n.quit\nSELECT 99;\n' \
    >"$work/q.sql"
expect 0 "$npurr" sql "$work/a" <"$work/q.sql"
has "wait_causes"
has "events"
has "CREATE VIEW wait_causes"
grep -qx "7" "$work/out" || { cat "$work/out" >&2; fail ".mode csv did not switch"; }
grep -q "99" "$work/out" && fail ".quit did not stop the session"
grep -q "npurr>" "$work/out" && fail "a prompt was printed on piped input"
printf 'SELECT nope FROM nowhere;\nSELECT 5;\n' | "$npurr" sql "$work/a" >"$work/out" 2>"$work/err"
[ $? -eq 1 ] || fail "a failed statement on piped input must give exit 1"
has "5"
has_err "no such table: nowhere"

# --- npurr hw, --hw checks, info
expect 0 "$npurr" hw
has "roce_gbytes_per_s = $("$npurr" hw --file | sed -n 's/^roce_gbytes_per_s=//p') GB/s"
has "old name roce_gbps"
has "source:"
mkdir "$work/hwdir"
expect 2 "$npurr" record "${small[@]}" --hw "$work/hwdir" -o "$work/x"
has_err "not a regular file"
printf 'hccs_link_gbytes_per_s=1e-300\n' >"$work/tiny.hw"
expect 2 "$npurr" record "${small[@]}" --hw "$work/tiny.hw" -o "$work/x"
has_err "hccs_link_gbytes_per_s: 1e-300 GB/s is outside"
printf 'roce_gbytes_per_s=inf\n' >"$work/inf.hw"
expect 2 "$npurr" record "${small[@]}" --hw "$work/inf.hw" -o "$work/x"
has_err "is not a positive number"
printf 'roce_gbps=12.5\n' >"$work/old.hw"
expect 0 "$npurr" record "${small[@]}" --hw "$work/old.hw" -o "$work/old"
has_err "'roce_gbps' is the old name of roce_gbytes_per_s"
printf 'roce_gbytes_per_s=12.5\n' >"$work/half.hw"
expect 0 "$npurr" record "${small[@]}" --hw "$work/half.hw" -o "$work/b"
expect 0 "$npurr" info "$work/b"
grep -E '^  roce_gbytes_per_s +12.5 GB/s +from --hw$' "$work/out" >/dev/null || { cat "$work/out" >&2; fail "info does not mark roce from --hw"; }
grep -E '^  hbm_gbytes_per_s +1600 GB/s +default$' "$work/out" >/dev/null || fail "info does not mark hbm as default"
keys=$("$npurr" hw --file | grep -c '^[a-z_]*=')
has "1 of $keys from --hw"
expect 0 "$npurr" replay "$work/old"
has "identical"

# --- diff: half the RoCE bandwidth makes the RDMA links slower and the run longer
expect 0 "$npurr" diff "$work/a" "$work/b" --by link --csv
python3 - "$work/out" <<'PY' || fail "diff --by link: $(cat "$work/out")"
import csv, sys
rows = {r["group"]: r for r in csv.DictReader(open(sys.argv[1]))}
run, rdma = rows["(run)"], rows["rdma *"]
assert float(run["b_busy_ps"]) > float(run["a_busy_ps"]), "the total time is not longer"
assert float(rdma["b_gbps"]) < float(rdma["a_gbps"]), "the RDMA links are not slower"
assert rdma["a_bytes"] == rdma["b_bytes"], "the same run should move the same bytes"
PY
expect 0 "$npurr" diff "$work/a" "$work/b" --by=role
has "virtual time: A "
has "RDMASender"
expect 0 "$npurr" record -k combine-sender --npus-per-node 2 --tokens 16 --hidden 256 --experts 8 \
    --topk 2 --quiet -o "$work/c"
# two kernels: compared by the names their groups share, said so
expect 0 "$npurr" diff "$work/a" "$work/c"
has "two kernels: groups line up by name"
expect 2 "$npurr" diff "$work/a"
expect 2 "$npurr" diff "$work/a" "$work/b" --by nothing
# --- progress: phase, share of the expected tokens, ETA (a line at every
# check here instead of every 2 s, so the test does not depend on timing)
NPURR_PROGRESS_EVERY=0 "$npurr" record -k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 \
    --hidden 64 --topk 2 --experts 8 --progress -o "$work/prog" >/dev/null 2>"$work/prog.err" ||
    fail "record --progress failed"
grep -q "phase dispatch_layered dispatch 0, " "$work/prog.err" || fail "no phase in the progress line"
grep -qE "% done \(tokens received [0-9]+ of [0-9]+\)" "$work/prog.err" ||
    fail "the progress line has no share of the expected tokens"
grep -qE "ETA [0-9]+ s" "$work/prog.err" || fail "the progress line has no ETA"
python3 - "$work/prog.err" <<'PY' || fail "progress went backwards or past its total"
import re, sys
seen = [tuple(map(int, m)) for m in re.findall(r"tokens received (\d+) of (\d+)", open(sys.argv[1]).read())]
assert seen, "no progress line"
assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:])), "not monotonic"
assert all(d <= t for d, t in seen), "more than the total"
PY
NPURR_PROGRESS_EVERY=0 "$npurr" record -k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 \
    --hidden 64 --topk 2 --experts 8 --progress --quiet -o "$work/prog2" >/dev/null 2>"$work/prog.err" ||
    fail "record --progress --quiet failed"
grep -q "% done" "$work/prog.err" && fail "--quiet still printed progress"
# --- explore checks -o before exploring: onto an existing run it stops at
# once, explores nothing, and never calls the run irreproducible
expect 0 "$npurr" record -k fullmesh-dispatch-combine --tokens 16 --quiet -o "$work/taken"
expect 2 "$npurr" explore -k fullmesh-dispatch-combine --tokens 16 --runs 50 -o "$work/taken"
has_err "already holds a run"
! grep -q "clean run\|not reproducible" "$work/err" "$work/out" || fail "explore explored onto an existing -o"
# --- record's summary line in human units ("stalls 1.06 s", never
# "stalls 1060620.566 us")
expect 0 "$npurr" record -k dispatch-layered --nodes 2 --tokens 64 -o "$work/units"
grep -qE '^virtual +[0-9.]{1,6} (ns|us|ms|s), [0-9]+ events, stalls [0-9.]{1,6} (ns|us|ms|s) summed over cores$' \
    "$work/out" || { cat "$work/out" >&2; fail "record's summary is not in human units"; }

# --- --help everywhere: every command `npurr --help` lists, as --help and
# -h, alone or where an option expects a value (never read as a file name)
cmds=$("$npurr" --help | awk '/^commands:/{c=1; next} c && /^  [a-z]/{print $1} c && /^$/{c=0}')
[ "$(echo "$cmds" | wc -w)" -ge 16 ] || fail "npurr --help lists too few commands: $cmds"
for c in $cmds; do
    for h in --help -h; do
        expect 0 "$npurr" "$c" "$h"
        has "usage: npurr $c"
    done
done
( cd "$work" && for args in "hw --compare --help" "export RUN --perfetto --help" "report RUN -o --help" \
                  "calibrate m.csv -o --help" "sweep -k combine-sender --vary --tokens=8 -o --help" \
                  "replay RUN --break-at -h" "record -k fullmesh-dispatch-combine -o --help"; do
    read -r -a a <<<"$args"
    "$npurr" "${a[@]}" >"$work/out" 2>&1 || fail "npurr $args: exit $?"
    grep -q "^usage: npurr ${a[0]}" "$work/out" || { cat "$work/out" >&2; fail "npurr $args printed no help"; }
    [ ! -e "$work/--help" ] && [ ! -e "$work/-h" ] || fail "npurr $args wrote a file named after the help flag"
done ) || exit 1
expect 0 "$npurr" record -k fullmesh-dispatch-combine -o --help
has "options of -k fullmesh-dispatch-combine"   # -k still chooses the kernel whose options show
echo "cli_behaves: ok"
