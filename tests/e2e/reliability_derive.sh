#!/bin/bash
# The first reader of a run derives its analysis tables into index.db; that
# must never damage the index. kill -9 at 20 points during a first `stats`
# on a copy of a run, and the same on a 768 KB tmpfs (where the tables stats
# derives do not fit, so the derive also runs out of disk), each leave an index that
# SQLite's integrity check calls ok and that `stats` then answers from; a
# full disk makes `stats` derive into the private cache instead, leaving
# index.db byte for byte as it was.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"
wakes=$(small_run_wakes)
command -v sqlite3 >/dev/null || fail "the sqlite3 shell is not installed (tools/setup.sh installs it)"
export XDG_CACHE_HOME="$work/cache"

small_run "$work/base"      # recorded, not yet derived: its first stats derives

# A first stats on a fresh copy in DIR (the cache's finished entries gone,
# so it derives again; what killed derives left there stays, for the next
# derive to clear).
fresh_copy() {
    rm -rf "$1/run"
    rm -f "$work/cache/npurr/"*.db
    cp -r "$work/base" "$1/run"
}

# kill_points DIR LABEL: 20 first stats on copies of the run in DIR, each
# killed (SIGKILL) at its point, spread over how long a first stats takes
# there (the fastest of three: a first one slowed by a busy machine would
# put the late points after the derive); the index must be whole after
# every one.
kill_points() {
    local dir=$1 label=$2 landed=0
    local t0 us span_us=0
    for _ in 1 2 3; do
        fresh_copy "$dir"
        t0=$(date +%s%N)
        expect 0 "$npurr" stats "$dir/run"
        us=$(( ($(date +%s%N) - t0) / 1000 ))
        [ $span_us -eq 0 ] || [ $us -lt $span_us ] && span_us=$us
    done
    for i in $(seq 1 20); do
        fresh_copy "$dir"
        "$npurr" stats "$dir/run" >/dev/null 2>&1 &
        local pid=$!
        sleep "$(awk -v s="$span_us" -v i="$i" 'BEGIN { printf "%.6f", s * i / 21 / 1e6 }')"
        kill -0 $pid 2>/dev/null && landed=$((landed + 1))
        kill -9 $pid 2>/dev/null
        wait $pid 2>/dev/null
        # a reader first (it must cope with what the kill left), then SQLite's check
        expect 0 "$npurr" info "$dir/run"
        local check
        check=$(sqlite3 "$dir/run/index.db" 'pragma integrity_check' 2>&1)
        [ "$check" = ok ] || fail "$label: kill -9 at point $i left index.db: $check"
        expect 0 "$npurr" stats "$dir/run"; has "stalls by role"
    done
    echo "reliability_derive: $label: $landed of 20 kills landed mid-derive, every index whole"
    [ $landed -ge 10 ]
}

# kill_points, once more when the machine's load changed under the timing
# (the derive ran faster than the fastest of three) and fewer than half of
# the kills landed: the test must have killed derives to prove anything.
kill_points_landing() {
    kill_points "$@" && return 0
    kill_points "$@" || fail "$2: fewer than 10 of 20 kills landed during the derive, twice"
}

mkdir "$work/disk"
kill_points_landing "$work/disk" "copy on disk"

if tmpfs_at "$work/tmpfs" 768k; then
    kill_points_landing "$work/tmpfs" "768 KB tmpfs"
    # a full disk, without a kill: the index stays as it was, the cache serves
    fresh_copy "$work/tmpfs"
    sum=$(sum_of "$work/tmpfs/run/index.db")
    expect 0 "$npurr" stats "$work/tmpfs/run"; has "no room"; has "stalls by role"
    [ "$(sum_of "$work/tmpfs/run/index.db")" = "$sum" ] || fail "a derive that found no room changed index.db"
    [ "$(ls -A "$work/tmpfs/run" | tr '\n' ' ')" = "index.db trace.zst " ] || \
        { ls -A "$work/tmpfs/run"; fail "a derive that found no room left files in the run"; }
    expect 0 "$npurr" sql "$work/tmpfs/run" "SELECT count(*) FROM wake_events"
    grep -qx " *$wakes" "$work/out" || { cat "$work/out"; fail "wake_events from the cache"; }
    ! ls -A "$work/cache/npurr" | grep -q '^\.derive-' || \
        { ls -A "$work/cache/npurr"; fail "killed derives left their copies in the cache"; }
else
    echo "reliability_derive: SKIP the 768 KB tmpfs cases (mount -t tmpfs not permitted here)"
fi
echo "reliability_derive: all checks passed"
