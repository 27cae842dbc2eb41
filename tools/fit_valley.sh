#!/bin/sh
# fit_valley.sh - the training error along a line the fit cannot walk:
# a core's MTE rate over HCCS and a remote read's hold trade against each
# other on T1's dispatch (its rows are all 14 KB, so it fixes only their
# sum per row), and `npurr calibrate` moves one parameter at a time. This
# runs the training rows of tools/fidelity_anchors.csv at each given
# (mte_hccs_bytes_per_cycle, hccs_read_latencies) pair, every other
# parameter at npurr's defaults, and prints each pair's error (the sum of
# log(npurr/measured)^2 that calibrate minimises). docs/timing.md "How close to the
# hardware" lists the pairs the defaults were chosen from.
#
#   sh tools/fit_valley.sh [-j J] [RATE,HOLD ...]
#
# Without pairs: 6,7 8,7.4 10,7.64 12,7.8 24,8.2 (a hold that keeps
# 5.6 us + 14 KB / rate per row as at 6,7). Build first: cmake --build build.
set -eu
cd "$(dirname "$0")/.."
jobs=1
case "${1:-}" in
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -j) [ $# -ge 2 ] || { echo "fit_valley.sh: -j needs a number" >&2; exit 2; }
        jobs=$2; shift 2 ;;
esac
npurr=${NPURR:-build/npurr}
[ -x "$npurr" ] || { echo "fit_valley.sh: no $npurr: build first (cmake --build build)" >&2; exit 1; }
[ $# -gt 0 ] || set -- 6,7 8,7.4 10,7.64 12,7.8 24,8.2
for pair in "$@"; do
    case "$pair" in
        *,*) ;;
        *) echo "fit_valley.sh: '$pair' is not RATE,HOLD" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grep -v '^#' tools/fidelity_anchors.csv | awk -F, 'NR == 1 || $2 == "train"' >"$work/train.csv"
"$npurr" hw --file >"$work/defaults.hw"
printf '%-10s %-10s %s\n' rate hold error
for pair in "$@"; do
    rate=${pair%,*}
    hold=${pair#*,}
    sed -e "s/^mte_hccs_bytes_per_cycle=.*/mte_hccs_bytes_per_cycle=$rate/" \
        -e "s/^hccs_read_latencies=.*/hccs_read_latencies=$hold/" \
        "$work/defaults.hw" >"$work/point.hw"
    "$npurr" hw --compare "$work/train.csv" --hw "$work/point.hw" -j "$jobs" >"$work/out" 2>&1 ||
        { cat "$work/out" >&2; echo "fit_valley.sh: the rows failed at $pair" >&2; exit 1; }
    error=$(sed -n 's/^error (sum of log(npurr\/measured)^2 over [0-9]* training rows): //p' "$work/out")
    printf '%-10s %-10s %s\n' "$rate" "$hold" "$error"
done
