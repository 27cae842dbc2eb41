#!/bin/bash
# Readers and signals while something else happens: `info` and `stats`
# running while `record --force` replaces the run over and over never see
# an index and a trace of two runs (the swap is one rename; readers that
# caught it read the run again), and a derive and a swap wait for each
# other (the run folder's lock); Ctrl-C during `replay` is an interruption
# (exit 130, "interrupted"), never a divergence (exit 5).
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"

# --- concurrent readers during record --force (50 reads, 12 s at least)
rec() { "$npurr" record -k fullmesh-dispatch-combine --tokens 16 --rounds 1 -o "$work/R" "$@" \
            --quiet >/dev/null 2>&1; }
rec || fail "first record"
# A swap every 30 ms at most: a reader caught by a swap reads the run again,
# a few times (each retry needs another swap), and this run records in a
# few ms, so back-to-back swaps could catch one read in each of its retries.
# The swaps go on until the readers have made 50 reads (a sanitizer build on
# a loaded machine reads slower), 120 s at most.
rm -f "$work/enough"
( end=$((SECONDS + 120)); start=$SECONDS
  while [ $SECONDS -lt $end ] && { [ $((SECONDS - start)) -lt 12 ] || [ ! -e "$work/enough" ]; }; do
      rec --seed $RANDOM --force; sleep 0.03
  done ) &
swapper=$!
n=0 bad=0
while kill -0 $swapper 2>/dev/null; do
    n=$((n + 1))
    [ "$n" = 50 ] && touch "$work/enough"
    cmd=info; [ $((n % 2)) = 0 ] && cmd=stats
    if ! "$npurr" $cmd "$work/R" >/dev/null 2>"$work/err"; then
        bad=$((bad + 1))
        grep -v "deriving the analysis" "$work/err" | head -3 >&2
    fi
done
wait $swapper
[ "$n" -ge 50 ] || fail "only $n reads during 120 s of swaps"
[ "$bad" = 0 ] || fail "$bad of $n reads failed while record --force replaced the run"
echo "reliability_concurrent: $n reads during record --force, none failed"

# --- a derive and a swap never overlap (recorder/rec_run_lock.c): a derive's
# rollback journal is made by name, RUN/index.db-journal, so a swap during
# it would put that journal beside the new run's index. Each side waits for
# the other, saying so; flock(1) stands for the other side here.
hold() {   # hold MODE SECONDS: lock $work/R like npurr does, until SECONDS pass
    rm -f "$work/held"
    flock "$1" "$work/R" -c "touch '$work/held'; sleep $2" &
    holder=$!
    for _ in $(seq 1 200); do [ -e "$work/held" ] && break; sleep 0.02; done
    [ -e "$work/held" ] || fail "flock $1 never took $work/R"
}
"$npurr" reindex "$work/R" >/dev/null 2>&1 || fail "reindex (drops the derived tables)"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
hold -x 2
t0=$(ms)
"$npurr" stats "$work/R" >"$work/out" 2>&1 || { cat "$work/out"; fail "stats after the swap's lock"; }
[ $(( $(ms) - t0 )) -ge 1500 ] || fail "stats derived while the run folder was locked for a swap"
wait $holder
has "waiting for the record or reindex replacing it"
hold -s 2
t0=$(ms)
"$npurr" record -k fullmesh-dispatch-combine --tokens 16 --rounds 1 -o "$work/R" --seed 7 \
    --force --quiet >"$work/out" 2>&1 || { cat "$work/out"; fail "record --force while a reader derives"; }
[ $(( $(ms) - t0 )) -ge 1500 ] || fail "record --force swapped the run in during a reader's derive"
wait $holder
has "waiting for its readers to finish deriving"
"$npurr" info "$work/R" >"$work/out" 2>&1 || fail "info on the swapped-in run"
has "seed"
hold -s 2
"$npurr" reindex "$work/R" >"$work/out" 2>&1 || { cat "$work/out"; fail "reindex after a derive"; }
wait $holder
has "waiting for its readers to finish deriving"
echo "reliability_concurrent: derives and swaps wait for each other"

# --- Ctrl-C during replay
"$npurr" record -k combine-sender --tokens 8192 --hidden 256 --topk 8 -o "$work/big" --quiet \
    >/dev/null 2>&1 || fail "recording the replay run"
# A background job of a script starts with SIGINT ignored: wait until the
# replay catches it (its handler is in /proc's SigCgt), i.e. it is running.
"$npurr" replay "$work/big" >"$work/out" 2>&1 &
pid=$!
caught() {
    local mask
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [ -n "$mask" ] && [ $(( 0x$mask & 2 )) != 0 ]
}
for _ in $(seq 1 1200); do
    caught && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
done
sleep 0.3
kill -0 $pid 2>/dev/null || { cat "$work/out"; fail "the replay ended before it could be interrupted"; }
caught || fail "the replay never caught SIGINT"
kill -INT $pid
wait $pid
code=$?
[ "$code" = 130 ] || { cat "$work/out"; fail "exit $code after Ctrl-C during replay, expected 130"; }
has "interrupted"
! grep -q "diverged" "$work/out" || { cat "$work/out"; fail "an interrupted replay reported a divergence"; }

# --- four first readers of a never-analysed run at once: they take turns
# deriving (the later ones use what the first derived), none fails on
# "database is locked"
for round in 1 2; do
    rm -rf "$work/first"
    "$npurr" record -k dispatch-layered --nodes 2 --tokens 128 --quiet -o "$work/first" >/dev/null 2>&1 ||
        fail "recording the run to read failed"
    "$npurr" stats "$work/first" --by cause >"$work/r1" 2>&1 & p1=$!
    "$npurr" sql "$work/first" "SELECT count(*) FROM wait_groups" >"$work/r2" 2>&1 & p2=$!
    "$npurr" critical "$work/first" >"$work/r3" 2>&1 & p3=$!
    "$npurr" diff "$work/first" "$work/first" >"$work/r4" 2>&1 & p4=$!
    for i in 1 2 3 4; do
        eval "pid=\$p$i"
        wait "$pid" || { cat "$work/r$i" >&2; fail "first reader $i of 4 at once failed (round $round)"; }
        ! grep -q "database is locked" "$work/r$i" || fail "reader $i: database is locked"
    done
done
echo "reliability_concurrent: all checks passed"
