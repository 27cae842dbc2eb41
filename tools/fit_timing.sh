#!/bin/sh
# fit_timing.sh - the timing model's fit, re-runnable by anyone: the
# parameters engine/timing.c flags as fitted (`npurr hw` says which), fitted
# from their sourced estimates (`npurr hw --start`, the documented start) to
# the training rows of tools/fidelity_anchors.csv (public Atlas A2
# measurements; docs/fidelity.md), written to build/fitted.hw, then held
# against the defaults this build ships: it says whether they are this
# fit's output, key by key. Validation rows are not run here (they are
# never fitted on): build/bench_fidelity runs every row.
#
#   sh tools/fit_timing.sh [-j J] [--max-evals N]
#
# Options go to `npurr calibrate` as they are (-j 2: two rows at once).
# Exit status 0 when the fit ran (whether or not the defaults match it), 1
# when it could not. Build first: cmake --build build.
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
npurr=${NPURR:-build/npurr}
[ -x "$npurr" ] || { echo "fit_timing.sh: no $npurr: build first (cmake --build build)" >&2; exit 1; }
out=build/fitted.hw
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the training rows alone, header and all
grep -v '^#' tools/fidelity_anchors.csv | awk -F, 'NR == 1 || $2 == "train"' >"$work/train.csv"
"$npurr" hw --start >"$work/start.hw"
"$npurr" hw --file >"$work/defaults.hw"
start_s=$(date +%s)
"$npurr" calibrate "$work/train.csv" -o "$out" --hw "$work/start.hw" "$@"
echo "fit_timing.sh: the fit took $(( $(date +%s) - start_s )) s"

# The fitted keys: the defaults this build ships against the fit.
fitted=$(sed -n 's/^# start: .*; fitted: //p' "$out")
same=1
echo
echo "fitted from the sourced estimates (npurr hw --start) on the training rows ($out):"
for key in $fitted; do
    def=$(sed -n "s/^$key=//p" "$work/defaults.hw")
    new=$(sed -n "s/^$key=//p" "$out")
    if [ "$def" = "$new" ]; then
        printf '  %-26s %-12s = the default\n' "$key" "$new"
    else
        printf '  %-26s %-12s the default is %s\n' "$key" "$new" "$def"
        same=0
    fi
done
if [ "$same" = 1 ]; then
    echo "every fitted default is this fit's output"
else
    cat <<EOF
the defaults are not this fit's output: give each F(...) row of engine/timing.c
the fitted value, rebuild, run this script again and build/bench_fidelity -j 2.
Until then, npurr record --hw $out ... runs with the fitted values.
EOF
fi
