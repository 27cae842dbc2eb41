#!/usr/bin/env bash
# plugin.sh - plugins that go wrong never cost a run folder and are named
# in what npurr says: tests/data/bad_plugin.c built once per defect with
# the system's cc against include/ (as a user's build would), recorded with
# build/npurr. A plugin of another ABI major, a shared object that is no
# plugin, a kernel name a built-in has and a setup that refuses are refused
# before anything runs; a device fault and a never-ending wait are recorded
# runs like a built-in's (outcome fault / deadlock naming the plugin's
# line); a crash in the plugin's host or device code is reported with the
# plugin and the site, and leaves no run and no hidden folder behind.
# Also: the plugin lives in the run (replayed after the .so is deleted), a
# replaced copy is refused, --help lists the plugin's kernels.
set -u
npurr=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib/kernel_run.bash"

command -v cc >/dev/null || { echo "no cc: cannot build test plugins" >&2; exit 77; }
build() {   # build NAME DEFECT: $work/NAME.so
    cc -std=c11 -Wall -Wextra -Werror -g -shared -fPIC -fvisibility=hidden -I"$root/include" \
        -DBAD="$2" -o "$work/$1.so" "$root/tests/data/bad_plugin.c" ||
        fail "cannot build the $1 test plugin"
}
cd "$work" || exit 1
run=(-k bad-kernel --npus-per-node 2)
nothing_left() {   # nothing_left RUN: no run folder, no hidden recording beside it
    [ ! -e "$1" ] || fail "$1 was left behind"
    ! ls -a | grep -q '^\..*recording' || fail "a hidden recording folder was left: $(ls -a)"
}

# --- the control: records, checks, lists, replays without its .so
build good 0
expect 0 "$npurr" record --plugin ./good.so --help
has "  bad-kernel "
has "[plugin bad-plugin]"
expect 0 "$npurr" record --plugin ./good.so -k bad-kernel --help
has "options of -k bad-kernel:"
has "--bytes BYTES"
expect 0 "$npurr" record --plugin ./good.so "${run[@]}" -o good
has "check     passed"
[ -f good/plugin/good.so ] || fail "the run holds no copy of its plugin"
expect 0 "$npurr" info good
has "plugin       bad-plugin: good/plugin/good.so (copied from $work/good.so), sha256 "
rm good.so
expect 0 "$npurr" replay good
has "identical: 17 events"
# a replaced copy is no longer the run's evidence
build other 4
cp other.so good/plugin/good.so
expect 1 "$npurr" replay good
has "good/plugin/good.so is not the plugin this run recorded"
rm -rf good

# --- refused before anything runs, naming the plugin
build abi 1
expect 1 "$npurr" record --plugin ./abi.so "${run[@]}" -o r
has "plugin bad-abi ($work/abi.so) was built for plugin ABI 2.0; this npurr runs ABI 1.0"
nothing_left r
build noabi 2
expect 1 "$npurr" record --plugin ./noabi.so "${run[@]}" -o r
has "noabi.so is not an npurr plugin: it exports no npurr_plugin_abi"
nothing_left r
build collide 3
expect 1 "$npurr" record --plugin ./collide.so -k combine-sender -o r
has "kernel combine-sender is already a built-in kernel"
nothing_left r
printf 'not an ELF file\n' > text.so
expect 1 "$npurr" record --plugin ./text.so "${run[@]}" -o r
has "not a shared object"
expect 1 "$npurr" record --plugin ./missing.so "${run[@]}" -o r
has "--plugin ./missing.so: No such file or directory"
build option 10
expect 1 "$npurr" record --plugin ./option.so "${run[@]}" -o r
has "kernel bad-kernel's option --nodes is an engine option of npurr; rename it"
nothing_left r
build setup 4
expect 1 "$npurr" record --plugin ./setup.so "${run[@]}" -o r
has "-k bad-kernel (plugin bad-plugin, $work/setup.so): --bytes: this plugin refuses every shape"
nothing_left r

# --- device faults and hangs are runs, at the plugin's own line
line() { grep -n "$1" "$root/tests/data/bad_plugin.c" | head -1 | cut -d: -f1; }
build gm 5
expect 1 "$npurr" record --plugin ./gm.so "${run[@]}" -o gm
has "outcome   fault: fault at"
has "bad_plugin.c:$(line 'DataCopy(ub, src, 64)') (bad_kernel)"
has "GM out of bounds"
expect 1 "$npurr" replay gm
build ub 6
expect 1 "$npurr" record --plugin ./ub.so "${run[@]}" -o ub
has "bad_plugin.c:$(line 'local_t ub = AllocUB') (bad_kernel)"
has "UB overflow"
build wait 7
expect 3 "$npurr" record --plugin ./wait.so "${run[@]}" -o wait
has "outcome   deadlock"
has "blocked on bad.flag == 1"
has "bad_plugin.c:$(line 'WaitGM32')"
expect 3 "$npurr" replay wait

# --- crashes: the plugin and the site named, nothing left behind
crashes() {   # crashes SO WHERE: recording with SO dies of a signal, saying WHERE
    { "$npurr" record --plugin "./$1" "${run[@]}" -o crash >out 2>&1; } 2>/dev/null
    local rc=$?
    [ "$rc" -gt 128 ] || { cat out >&2; fail "a crash of $1 exited $rc"; }
    grep -qF "plugin bad-plugin ($work/$1) crashed with Segmentation fault in -k bad-kernel's $2" out ||
        { cat out >&2; fail "the crash of $1 was not reported in $2"; }
    nothing_left crash
}
build host 8
crashes host.so "setup hook"
build device 9
crashes device.so "device code on rank 0 AIV0"
grep -qF "the last device call was $root/tests/data/bad_plugin.c:$(line 'SetRole')" out ||
    { cat out >&2; fail "the device crash did not name the last device call"; }
grep -qF "no run was kept" out || { cat out >&2; fail "the crash did not say the run is gone"; }
echo "plugin: ok"
