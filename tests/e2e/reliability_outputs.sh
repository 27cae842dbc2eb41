#!/bin/bash
# What npurr writes and reads is only what it should: a failed export or
# report never removes its output path unless npurr created the file (a
# device node, a symlink to one, a pre-existing file all stay as they
# were); a FIFO where a file is read is refused at once, never waited on;
# a failed write to standard output exits 1 with a message.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"

small_run "$work/run"

# --- outputs: a device, a symlink to it, a pre-existing file on a full disk
mknod "$work/full" c 1 7 || fail "mknod (needs root)"          # as /dev/full
expect 1 "$npurr" export "$work/run" --perfetto "$work/full"; has "failed"
[ -c "$work/full" ] || fail "a failed export removed the device node it wrote to"
expect 1 "$npurr" report "$work/run" -o "$work/full"
[ -c "$work/full" ] || fail "a failed report removed the device node it wrote to"
ln -s "$work/full" "$work/full.json"
expect 1 "$npurr" export "$work/run" --chrome "$work/full.json"
[ -L "$work/full.json" ] && [ -c "$work/full" ] || fail "a failed export removed a symlink or its target"
# a symlink to a regular file: the link stays, the file it names is written
echo old > "$work/target.json"
ln -s target.json "$work/link.json"
expect 0 "$npurr" export "$work/run" --chrome "$work/link.json"
[ -L "$work/link.json" ] || fail "export replaced the symlink itself"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$work/target.json" \
    || fail "the symlink's target is not the exported JSON"
if tmpfs_at "$work/small" 64k; then
    printf 'precious\n' > "$work/small/keep.json"
    expect 1 "$npurr" export "$work/run" --chrome "$work/small/keep.json"; has "keep.json"
    [ "$(cat "$work/small/keep.json")" = precious ] || fail "a failed export damaged the file it was to replace"
    [ "$(ls -A "$work/small")" = keep.json ] || { ls -A "$work/small"; fail "a failed export left a temporary file"; }
    expect 1 "$npurr" export "$work/run" --chrome "$work/small/new.json"
    [ "$(ls -A "$work/small")" = keep.json ] || { ls -A "$work/small"; fail "a failed export left its new file"; }
    # a full disk under standard output: a cut file is not a success
    expect 1 bash -c "'$npurr' sql '$work/run' 'SELECT * FROM waits' --csv > '$work/small/q.csv'"
    has "standard output: write failed"
else
    echo "reliability_outputs: SKIP the full-disk cases (mount -t tmpfs not permitted)"
fi

# --- standard output: every command that prints, into /dev/full
"$npurr" record -k fullmesh-dispatch-combine --tokens 64 --rounds 4 -o "$work/run2" --quiet \
    >/dev/null 2>&1 || fail "second run"
while IFS= read -r cmd; do
    expect 1 bash -c "$cmd > /dev/full"; has "standard output: write failed"
done <<EOS
'$npurr' stats '$work/run'
'$npurr' sql '$work/run' 'SELECT count(*) FROM waits'
'$npurr' sql '$work/run' 'SELECT count(*) FROM waits' --csv
'$npurr' info '$work/run'
'$npurr' hw
'$npurr' diff '$work/run' '$work/run2'
'$npurr' layout -k fullmesh-dispatch-combine
'$npurr' replay '$work/run' --quiet
EOS

# --- FIFOs where npurr reads a file: refused before any read, never waited on
mkdir "$work/fifo"
cp "$work/run/index.db" "$work/fifo/"
mkfifo "$work/fifo/trace.zst"
expect 1 in_time 20 "$npurr" sql "$work/fifo" "SELECT 1"; has "FIFO"
for cmd in info stats replay "export --chrome $work/f.json" \
           "report -o $work/f.html" "diff $work/run"; do
    set -- $cmd
    sub=$1; shift
    expect 1 in_time 20 "$npurr" "$sub" "$work/fifo" "$@"; has "FIFO"
done
rm "$work/fifo/trace.zst" "$work/fifo/index.db"
cp "$work/run/trace.zst" "$work/fifo/"
mkfifo "$work/fifo/index.db"
for sub in info stats; do
    expect 1 in_time 20 "$npurr" "$sub" "$work/fifo"; has "FIFO"
done
mkfifo "$work/routing.npy" "$work/timing.hw"
expect 1 in_time 20 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 \
    --routing "npy:$work/routing.npy" -o "$work/r3"; has "FIFO"
expect 2 in_time 20 "$npurr" record -k fullmesh-dispatch-combine --tokens 64 \
    --hw "$work/timing.hw" -o "$work/r3"; has "FIFO"
[ ! -e "$work/r3" ] || fail "a refused record left a run folder"

# --- calibrate and sweep write through the same policy, checked before any work
printf 'kernel,options,phase,measured_us\nfullmesh-dispatch-combine,"--tokens 16 --npus-per-node 2 --experts 8",dispatch,10\n' \
    > "$work/m.csv"
cp "$work/run/trace.zst" "$work/trace.before"
expect 2 "$npurr" calibrate "$work/m.csv" -o "$work/run/trace.zst" --max-evals 3; has "inside the run folder"
cmp -s "$work/run/trace.zst" "$work/trace.before" || fail "calibrate -o RUN/trace.zst wrote over the trace"
expect 2 "$npurr" calibrate "$work/m.csv" -o "$work/run/inputs/fit.hw" --max-evals 3; has "inside the run folder"
echo old > "$work/real.hw"
chmod 600 "$work/real.hw"
ln -s real.hw "$work/link.hw"
expect 0 "$npurr" calibrate "$work/m.csv" -o "$work/link.hw" --max-evals 3
[ -L "$work/link.hw" ] || fail "calibrate replaced the symlink itself"
grep -q '^# npurr calibrate' "$work/real.hw" || fail "the symlink's target is not the fitted file"
[ "$(stat -c %a "$work/real.hw")" = 600 ] || fail "calibrate changed the mode of the file it replaced"
expect 1 "$npurr" calibrate "$work/m.csv" -o "$work/full" --max-evals 3
[ -c "$work/full" ] || fail "a failed calibrate removed the device node it wrote to"
( n=$(readlink -f "$npurr") && cd "$work" && "$n" calibrate m.csv -o - --max-evals 3 > "$work/stdout.hw" 2>/dev/null ) ||
    fail "calibrate -o - failed"
[ ! -e "$work/-" ] || fail "calibrate -o - made a file named -"
head -1 "$work/stdout.hw" | grep -q '^# npurr calibrate' || fail "calibrate -o - did not write the file to stdout"
! grep -q '^fitted parameter' "$work/stdout.hw" || fail "calibrate -o - mixed its report into the file"
sweep_args=(-k fullmesh-dispatch-combine --tokens 16 --npus-per-node 2 --experts 8 --vary --tokens=8,16)
expect 2 "$npurr" sweep "${sweep_args[@]}" -o "$work/run"; has "inside the run folder"
expect 2 "$npurr" sweep "${sweep_args[@]}" -o "$work/run/inputs/sw"; has "inside the run folder"
[ ! -e "$work/run/sweep.csv" ] && [ ! -e "$work/run/inputs/sw" ] || fail "a refused sweep wrote into the run"
mkdir -p "$work/sw/sweep.csv"
expect 1 "$npurr" sweep "${sweep_args[@]}" -o "$work/sw"; has "sweep.csv"
grep -q '^point,--tokens,exit_code' "$work/out" || fail "a sweep whose CSV could not be written lost its rows"
! grep -q "wrote $work/sw/sweep.csv" "$work/out" || fail "a sweep said it wrote a file it did not write"
# a temporary file a killed writer left (kill -9 between create and rename)
# goes with the next write of the same output; one of a live writer stays
sleep 0 & dead=$!; wait "$dead"
touch "$work/.npurr-$dead-AbCdEf-fit.hw" "$work/.npurr-$$-AbCdEf-fit.hw"
expect 0 "$npurr" calibrate "$work/m.csv" -o "$work/fit.hw" --max-evals 3
[ ! -e "$work/.npurr-$dead-AbCdEf-fit.hw" ] || fail "a killed writer's temporary file was left"
[ -e "$work/.npurr-$$-AbCdEf-fit.hw" ] || fail "a live writer's temporary file was removed"
rm -f "$work/.npurr-$$-AbCdEf-fit.hw"
mkfifo "$work/measured.fifo"
expect 1 in_time 20 "$npurr" hw --compare "$work/measured.fifo"; has "FIFO"
expect 1 in_time 20 "$npurr" calibrate "$work/measured.fifo" -o "$work/f.hw"; has "FIFO"
echo "reliability_outputs: all checks passed"
