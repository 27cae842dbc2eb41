#!/bin/sh
# fit_timing.sh - the timing model's fit, re-runnable by anyone: fits the
# parameters engine/timing.c flags as fitted (`npurr hw` says which) to the
# training rows of tools/fidelity_anchors.csv (public Atlas A2 measurements,
# issue #26), writes build/fitted.hw, prints every row's ratio before and
# after (validation rows are run, never fitted on), then how to carry the
# fitted values into engine/timing.c.
#
#   sh tools/fit_timing.sh [-j J] [--max-evals N] [--hw START]
#
# Options go to `npurr calibrate` as they are. Each evaluation runs every
# training row at full size (tens of seconds, several GB of memory per run),
# so a fit takes a while: -j 2 runs two rows at once, --max-evals N bounds it
# (default 150). Build first: cmake --build build.
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
npurr=${NPURR:-build/npurr}
[ -x "$npurr" ] || { echo "fit_timing.sh: no $npurr: build first (cmake --build build)" >&2; exit 1; }
out=build/fitted.hw
"$npurr" calibrate tools/fidelity_anchors.csv -o "$out" "$@"

# What changed, key by key: the defaults this build has against the fit.
fitted=$(sed -n 's/^# start: .*; fitted: //p' "$out")
defaults=$(mktemp)
trap 'rm -f "$defaults"' EXIT
"$npurr" hw --file >"$defaults"
echo
echo "fitted on the training rows of tools/fidelity_anchors.csv ($out):"
for key in $fitted; do
    old=$(sed -n "s/^$key=//p" "$defaults")
    new=$(sed -n "s/^$key=//p" "$out")
    printf '  %-28s default %-12s fitted %s\n' "$key" "$old" "$new"
done
cat <<EOF

To make the fit the model's defaults: in engine/timing.c, give each of these
F(...) rows the fitted value as its default and the source
"fitted on T1-T3 (tools/fit_timing.sh; tools/fidelity_anchors.csv)", rebuild,
and check with build/bench_fidelity (every row and its ratio) and
npurr hw (every parameter names its source or its fit). Until then,
npurr record --hw $out ... runs with the fitted values.
EOF
