#!/usr/bin/env bash
# replay_builds.sh - a run recorded by one build of npurr replays
# identically under another: the -Werror build (build/) and the
# sanitizer build (build-asan/) of the same sources, each way.
#
# Call sites are ids of (file, line): a build whose linker keeps several
# copies of one header's __FILE__ text (the sanitizer build) once gave
# one line two ids, and replay across builds failed with "site differ".
# The other build is found beside this one in the source tree; where it
# has not been built (the first build of a fresh clone) the test is
# skipped (77), so in CI the sanitizer pass runs it against build/.
#
# Usage: bash replay_builds.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
build=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

other=
for b in "$root/build" "$root/build-asan"; do
    [ -x "$b/npurr" ] && [ "$(cd "$b" && pwd)" != "$build" ] && other=$b/npurr && break
done
[ -n "$other" ] || { echo "SKIP: no second build of npurr beside $build"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Shapes that reach the device calls of headers (dispatch_device.h) from
# several kernel files, and a deadlock, whose report names sites too.
runs=("-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 32 --hidden 256 --topk 2 --experts 8"
      "-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 32 --hidden 256 --topk 2 --experts 8 --inject credit-leak"
      "-k fullmesh-dispatch-combine --npus-per-node 4 --tokens 16 --hidden 256"
      "-k combine-normal --npus-per-node 2 --tokens 16 --hidden 256 --topk 2 --experts 8")
i=0
for args in "${runs[@]}"; do
    read -r -a a <<<"$args"
    for pair in "$npurr $other" "$other $npurr"; do
        read -r rec rep <<<"$pair"
        i=$((i + 1))
        "$rec" record "${a[@]}" --quiet -o "$work/r$i" >"$work/out" 2>&1
        code=$?
        [ "$code" = 0 ] || [ "$code" = 3 ] || fail "record by $rec: exit $code: $(cat "$work/out")"
        "$rep" replay "$work/r$i" >"$work/replay" 2>&1
        got=$?
        [ "$got" = "$code" ] || fail "recorded by $rec, replayed by $rep: exit $got, not $code: $(head -5 "$work/replay")"
        grep -q '^identical: ' "$work/replay" || fail "recorded by $rec, replayed by $rep: $(head -5 "$work/replay")"
    done
done
echo "replay_builds: $i runs replayed identically across $npurr and $other"
