#!/usr/bin/env bash
# ascendc.sh - Ascend C kernels as a user brings them (issue 44): npurr
# installed into a temporary prefix; examples/ascendc/{add, combine_sender,
# combine_normal} built out of tree with g++ against its headers; the Add
# recorded on 2 nodes x 8, its dump read by numpy, replayed identically
# after its build is deleted, and stopped under gdb at a line of
# add_custom.cpp with `npurr when`; each MoE example against npurr's C
# kernel under the same options: the same `out` byte for byte, virtual
# time within 5 %, and `npurr diff` lining the two runs up; a variant of
# the combine-sender with one WaitFlag removed found by --check races at
# the example's own lines; a CANN CPU Debug program built as the cpu-debug
# kernel, recorded, replayed, its main's verdict the check.
set -u
npurr_build=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib/kernel_run.bash"
source "$here/lib/installed.bash"

install_npurr "$build"
for f in kernel_operator.h kernel_tiling/kernel_tiling.h lib/matmul_intf.h; do
    [ -f "$prefix/include/npurr/ascendc/$f" ] || fail "the install has no include/npurr/ascendc/$f"
done

build_example "$root/examples/ascendc/add" "$work/add-build" ascendc_add
build_example "$root/examples/ascendc/combine_sender" "$work/cs-build" ascendc_combine_sender
build_example "$root/examples/ascendc/combine_normal" "$work/cn-build" ascendc_combine_normal
mkdir -p "$work/runs"
cd "$work/runs" || exit 1

# --- the Add on 2 nodes x 8 NPUs, its output read by numpy
expect 0 "$npurr" record --plugin "$work/add-build/ascendc_add.so" -k ascendc-add --nodes 2 \
    -o add --dump z@11=z11.npy
has "check     passed"
has "on 2 nodes x 8 NPUs (16 ranks)"
events=$(sed -n 's/^virtual .*, \([0-9]*\) events,.*/\1/p' "$work/out")
numpy_python
"$py" - <<'PY' || fail "z on rank 11 is not x + y"
import numpy as np
z = np.load("z11.npy")
i = np.arange(z.size, dtype=np.uint64)
inp = lambda t: ((i * 7 + 11 * 13 + t * 101) % 1000).astype(np.float32) * 0.25 - 100
assert z.dtype == np.float32 and z.shape == (65536,), (z.dtype, z.shape)
assert np.array_equal(z, inp(0) + inp(1))
PY
rm -rf "$work/add-build"
expect 0 "$npurr" replay add
has "identical: $events events, outcome completed, data check passed (as recorded)"

# --- gdb stops at the kernel's own line, npurr when says where the run is
src="$root/examples/ascendc/add/add_custom.cpp"
line=$(grep -n 'Add(zLocal, xLocal, yLocal, tileLength_);' "$src" | cut -d: -f1)
gdb -nx -batch -q -iex 'set may-call-functions off' -iex 'set breakpoint pending on' \
    -x "$prefix/share/npurr/npurr_gdb.py" -ex "break add_custom.cpp:$line" -ex run \
    -ex 'npurr when' --args "$npurr" replay add </dev/null >"$work/out" 2>&1
grep -qE "^Breakpoint 1, .*Compute.* at .*add_custom.cpp:$line" "$work/out" ||
    { cat "$work/out" >&2; fail "gdb did not stop at add_custom.cpp:$line"; }
grep -qE '^seq [0-9]+ \(last executed\), virtual time' "$work/out" ||
    { cat "$work/out" >&2; fail "npurr when said nothing at the breakpoint"; }
! grep -qiE 'cannot call|Python Exception|Error occurred' "$work/out" ||
    { cat "$work/out" >&2; fail "an npurr gdb command failed"; }

# --- each MoE example against npurr's C kernel, the same options
virtual_us() { sed -n 's/^virtual *\([0-9.]*\) us,.*/\1/p' "$work/out"; }
against() {   # against C_KERNEL PLUGIN ASCENDC_KERNEL C_OUT_TENSOR OPTIONS...
    local ck=$1 so=$2 ak=$3 cout=$4
    shift 4
    expect 0 "$npurr" record -k "$ck" "$@" -o "c-$ck" --dump "$cout@3=c-$ck.npy"
    has "check     passed"
    local tc
    tc=$(virtual_us)
    expect 0 "$npurr" record --plugin "$so" -k "$ak" "$@" -o "a-$ck" --dump "out@3=a-$ck.npy"
    has "check     passed"
    local ta
    ta=$(virtual_us)
    cmp -s "c-$ck.npy" "a-$ck.npy" || fail "$ak's out differs from $ck's"
    awk -v a="$ta" -v c="$tc" 'BEGIN { d = (a - c) / c; exit !(d < 0.05 && d > -0.05) }' ||
        fail "$ak takes $ta us, $ck $tc us: more than 5 % apart"
    echo "ascendc: $ak $ta us, $ck $tc us, out identical"
    expect 0 "$npurr" diff "c-$ck" "a-$ck"
    has "two kernels: groups line up by name"
    has "virtual time: A $tc us, B $ta us"
}
against combine-sender "$work/cs-build/ascendc_combine_sender.so" ascendc-combine-sender combine.out
expect 0 "$npurr" diff c-combine-sender a-combine-sender --by kind
has "ring_data"
against combine-normal "$work/cn-build/ascendc_combine_normal.so" ascendc-combine-normal combine.out
expect 0 "$npurr" replay a-combine-normal
has "identical:"

# --- a CANN CPU Debug program, its include changed, as the cpu-debug kernel
mkdir "$work/cpudbg"
cp "$root/tests/data/cpu_debug_add.cpp" "$work/cpudbg/"
printf '%s\n' 'cmake_minimum_required(VERSION 3.20)' 'project(cpudbg CXX)' \
    'find_package(npurr REQUIRED)' 'npurr_add_kernel(cpu_debug_add SOURCES cpu_debug_add.cpp)' \
    >"$work/cpudbg/CMakeLists.txt"
build_example "$work/cpudbg" "$work/cpudbg-build" cpu_debug_add
expect 0 "$npurr" record --plugin "$work/cpudbg-build/cpu_debug_add.so" -k cpu-debug --nodes 2 \
    --args "8 2048" -o cpudbg
has "check     passed"
expect 0 "$npurr" replay cpudbg
has "identical:"
expect 4 "$npurr" record --plugin "$work/cpudbg-build/cpu_debug_add.so" -k cpu-debug \
    --args "8 2048 wrong" --no-trace
has "cpu-debug: the program returned 3"

# --- a variant with one WaitFlag removed: the crop reads read_temp before
# MTE2 has filled it, and --check races names the example's lines
cp -r "$root/examples/ascendc/combine_sender" "$root/examples/ascendc/common" "$work/"
mv "$work/combine_sender" "$work/racy"
wait_line=$(grep -n 'WaitFlag<HardEvent::MTE2_V>(buf);' "$work/racy/combine_send.cpp" | cut -d: -f1)
[ -n "$wait_line" ] || fail "combine_send.cpp has no WaitFlag<MTE2_V> to remove"
sed -i "${wait_line}d" "$work/racy/combine_send.cpp"
build_example "$work/racy" "$work/racy-build" ascendc_combine_sender
small=(--npus-per-node 4 --tokens 32 --hidden 256 --topk 4 --experts 16)
expect 0 "$npurr" record --plugin "$work/cs-build/ascendc_combine_sender.so" \
    -k ascendc-combine-sender "${small[@]}" --check races --no-trace
has "0 races, 0 sync errors"
# (its SetFlag, never waited now, also faults the run at the kernel's end)
expect 1 "$npurr" record --plugin "$work/racy-build/ascendc_combine_sender.so" \
    -k ascendc-combine-sender "${small[@]}" --check races --no-trace
has "write by MTE2 not ordered before read by V"
read_line=$(grep -n 'DataCopy(readTempUb_\[buf\]' "$work/racy/combine_send.cpp" | cut -d: -f1)
crop_line=$(grep -n 'DataCopy(staging\[at\], src\[from\], bytes);' "$work/racy/combine_send.cpp" | cut -d: -f1)
grep -qE "first +rank [0-9]+ AIV[0-9]+ MTE2 +write +combine_send.cpp:$read_line " "$work/out" &&
    grep -qE "second +rank [0-9]+ AIV[0-9]+ V +read +combine_send.cpp:$crop_line " "$work/out" ||
    { cat "$work/out" >&2; fail "the race is not at combine_send.cpp:$read_line and :$crop_line"; }
echo "ascendc: ok"
