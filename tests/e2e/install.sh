#!/usr/bin/env bash
# install.sh - npurr installed like a library, and a user's kernels run on
# it, as issue 43 asks a user to see them: `cmake --install` into a
# temporary prefix; each example under examples/ configured against it
# (find_package(npurr), -DCMAKE_PREFIX_PATH), built, and recorded with the
# installed npurr on 2 nodes; the example's build folder deleted and the run
# replayed identically; gdb stopping at a line of the example's own source
# (a breakpoint by file:line, and --break-at) with `npurr when` under
# may-call-functions off; stats, sql, report and critical on the run; the
# example's injected fault reported as a deadlock with its rings; the man
# page covering every command; a plugin built with pkg-config alone.
# Also: a run recorded with --force --hw replays after the .hw file is gone.
set -u
npurr_build=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib/kernel_run.bash"
source "$here/lib/installed.bash"

install_npurr "$build"
for f in bin/npurr bin/npurr-gdb include/npurr/plugin.h include/npurr/device.h include/npurr/device_calls.h \
         include/npurr/types.h lib/cmake/npurr/npurrConfig.cmake lib/pkgconfig/npurr.pc \
         share/man/man1/npurr.1 share/npurr/npurr_gdb.py lib/libnpurr_sqlite.so; do
    [ -e "$prefix/$f" ] || fail "the install has no $f"
done

# --- every command npurr lists has a section in the man page
man_text=$(sed -n '/^\.SH COMMANDS/,/^\.SH ENGINE/p' "$prefix/share/man/man1/npurr.1")
"$npurr" --help >"$work/help" 2>&1
for cmd in $(awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' "$work/help"); do
    grep -q "^\.B $cmd\b" <<<"$man_text" || fail "the man page has no section for '$cmd'"
done

# --- each example, built out of tree against the installed npurr
example() {   # example DIR TARGET: $work/DIR-build/TARGET.so
    build_example "$root/examples/$1" "$work/$1-build" "$2"
}
example vector_add vector_add
example ring_allgather ring_allgather
mkdir -p "$work/runs"
cd "$work/runs" || exit 1
expect 0 "$npurr" record --plugin "$work/vector_add-build/vector_add.so" -k vector-add --nodes 2 \
    -o vadd --dump z@9=z9.npy --dump x@9=x9.npy --dump y@9=y9.npy
has "check     passed"
has "dump      z@9 -> z9.npy"
# what a user does with it: numpy reads the tensors, z = x + y on rank 9
numpy_python
"$py" - <<'PY' || fail "the dumped tensors are not z = x + y"
import numpy as np
x, y, z = (np.load(f"{n}9.npy") for n in "xyz")
assert x.dtype == np.float32 and x.shape == (65536,), (x.dtype, x.shape)
assert np.array_equal(z, x + y)
assert not np.array_equal(x, y)
PY
expect 0 "$npurr" record --plugin "$work/ring_allgather-build/ring_allgather.so" \
    -k ring-allgather --nodes 2 -o ag
has "check     passed"
events=$(sed -n 's/^virtual .*, \([0-9]*\) events,.*/\1/p' "$work/out")
rm -rf "$work/vector_add-build" "$work/ring_allgather-build"
expect 0 "$npurr" replay vadd
has "identical:"
expect 0 "$npurr" replay ag
has "identical: $events events, outcome completed, data check passed (as recorded)"

# --- analysis of a plugin's run
expect 0 "$npurr" stats ag --by cause
has "cause"
expect 0 "$npurr" sql ag "SELECT count(*) FROM rings WHERE name LIKE 'allgather[%'"
has "16"
expect 0 "$npurr" report ag -o ag.html
[ -s ag.html ] || fail "report wrote nothing"
expect 0 "$npurr" critical ag
has "critical path by resource"
expect 0 "$npurr" info ag
has "plugin       ring-allgather-example: ag/plugin/ring_allgather.so"

# --- gdb stops at the example's own lines, without calling into npurr
src="$root/examples/ring_allgather/ring_allgather.c"
recv_line=$(grep -n 'RingWaitData(ring, k)' "$src" | cut -d: -f1)
gdb -nx -batch -q -iex 'set may-call-functions off' -iex 'set breakpoint pending on' \
    -x "$prefix/share/npurr/npurr_gdb.py" -ex "break ring_allgather.c:$recv_line" -ex run \
    -ex 'npurr when' --args "$npurr" replay ag </dev/null >"$work/out" 2>&1
has "ring_allgather.c:$recv_line"
grep -qE "^Breakpoint 1, receive_piece \(.*\) at .*ring_allgather.c:$recv_line" "$work/out" ||
    { cat "$work/out" >&2; fail "gdb did not stop at the example's line $recv_line"; }
grep -qE '^seq [0-9]+ \(last executed\), virtual time' "$work/out" ||
    { cat "$work/out" >&2; fail "npurr when said nothing at the breakpoint"; }
! grep -qiE 'cannot call|Python Exception|Error occurred' "$work/out" ||
    { cat "$work/out" >&2; fail "an npurr gdb command failed"; }
# halfway, at an event a core issues (a transfer's completion is the
# scheduler's, and --break-at names it so)
target=$("$npurr" sql ag "SELECT min(seq) FROM events WHERE seq >= $((events / 2))
    AND kind NOT IN ('xfer_done', 'blocked', 'run_end')" --csv 2>/dev/null | tail -1)
[ -n "$target" ] && [ "$target" -ge $((events / 2)) ] || fail "no core event after half the run: '$target'"
"$prefix/bin/npurr-gdb" -batch -iex 'set may-call-functions off' \
    -ex run -ex 'npurr when' --args "$npurr" replay ag --break-at "$target" </dev/null \
    >"$work/out" 2>&1   # the installed wrapper finds the installed extension
has "seq $target (about to execute)"
grep -qE "issued by .* at ring_allgather\.c:[0-9]+" "$work/out" ||
    { cat "$work/out" >&2; fail "--break-at did not stop in the example's code"; }

# --- the injected fault: a deadlock with the example's rings
example ring_allgather ring_allgather
expect 3 "$npurr" record --plugin "$work/ring_allgather-build/ring_allgather.so" \
    -k ring-allgather --nodes 2 --inject lost-credit -o hang
has "outcome   deadlock"
has "blocked on allgather["
has "].head >= "
expect 3 "$npurr" replay hang
expect 0 "$npurr" sql hang "SELECT count(*) FROM waits WHERE end_seq IS NULL"

# --- a plugin built with pkg-config alone
cc $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags npurr) -std=c11 -shared \
    -o "$work/vadd_pc.so" "$root/examples/vector_add/vector_add.c" ||
    fail "pkg-config --cflags npurr does not build a plugin"
expect 0 "$npurr" record --plugin "$work/vadd_pc.so" -k vector-add --no-trace --quiet
has "check     passed"

# --- a run does not depend on the --hw file it was recorded with
printf 'roce_gbytes_per_s=20\n' >my.hw
expect 0 "$npurr" record -k combine-sender --tokens 16 --force --hw my.hw -o hw_run --quiet
rm my.hw
expect 0 "$npurr" replay hw_run
has "identical:"
echo "install: ok"
