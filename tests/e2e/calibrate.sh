#!/usr/bin/env bash
# calibrate.sh - `npurr calibrate` recovers known timing parameters, and
# `npurr hw --compare` measures against a file, as a user runs them.
#
# The "measured" times are npurr's own under a perturbed --hw (an NPU's
# HCCS port x0.5, its share of the spine for RDMA off its plane x0.5: two
# of the fitted parameters): calibrate, started from the defaults, must
# bring every row back within 5 %, and the file it writes must give the
# same ratios through `hw --compare --hw`. Every row trains: 512 B and 7 KB
# rows over HCCS tell the port's bandwidth from its cost per transfer, and
# fullmesh between two servers of 4 sees the plane. Small shapes (1 x 4 and
# 2 x 4 NPUs) keep it to seconds. Then msprof's op_summary format (ops
# matched by name, several rows of one op averaged), and bad input: every
# malformed row named by FILE:LINE (exit 1), a row that deadlocks named
# (exit 1, nothing written), bad options (exit 2).
#
# Usage: bash calibrate.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

F2="--nodes 2 --npus-per-node 2 --tokens 32 --hidden 1024 --experts 16 --rounds 1"
F1="--npus-per-node 4 --tokens 32 --hidden 1024 --experts 16 --rounds 1"
LS="--npus-per-node 4 --tokens 32 --hidden 512 --experts 16 --cores 16"
LW="--npus-per-node 4 --tokens 32 --hidden 7168 --experts 16 --cores 16"
FP="--nodes 2 --npus-per-node 4 --tokens 32 --hidden 7168 --experts 16 --rounds 1"
cat >"$work/shape.csv" <<EOF
id,use,kernel,options,phase,measured_us
LS-dispatch,train,ll-single-dispatch-combine,"$LS",dispatch,1
LS-combine,train,ll-single-dispatch-combine,"$LS",combine,1
LW-dispatch,train,ll-single-dispatch-combine,"$LW",dispatch,1
FP-dispatch,train,fullmesh-dispatch-combine,"$FP",dispatch,1
FP-combine,train,fullmesh-dispatch-combine,"$FP",combine,1
EOF
# x0.5 of whatever the defaults are now
"$npurr" hw --file >"$work/defaults.hw"
awk -F= '$1 == "hccs_port_gbytes_per_s" || $1 == "roce_cross_plane_gbytes_per_s" {
             printf "%s=%.6g\n", $1, $2 * 0.5 }' "$work/defaults.hw" >"$work/perturbed.hw"
[ "$(wc -l <"$work/perturbed.hw")" = 2 ] || fail "npurr hw --file lacks the perturbed keys"

# npurr's times under the perturbed set become the measured column
expect 0 "$npurr" hw --compare "$work/shape.csv" --hw "$work/perturbed.hw"
has "timing parameters $work/perturbed.hw"
awk 'NR == FNR { if ($2 == "train" || $2 == "validate") t[$1] = $5; next }
     FNR == 1 { print; next }
     { n = split($0, f, ","); id = f[1]; sub(/,1$/, "," t[id]); print }' \
    "$work/out" "$work/shape.csv" >"$work/measured.csv"
[ "$(grep -c ',1$' "$work/measured.csv")" -eq 0 ] || { cat "$work/measured.csv" >&2; fail "no time for a row"; }

# at the defaults the rows are off, by more than the 5 % the fit must reach
expect 0 "$npurr" hw --compare "$work/measured.csv" -j 2
awk '$2 == "train" && ($6 < 0.95 || $6 > 1.05) { off++ } END { exit off >= 2 ? 0 : 1 }' "$work/out" ||
    { cat "$work/out" >&2; fail "the perturbation does not move the rows: the test would prove nothing"; }

expect 0 "$npurr" calibrate "$work/measured.csv" -o "$work/fit.hw" -j 2 --max-evals 80
has "calibrate: evaluation 1 of at most 80"; has "s elapsed, ETA at most"   # progress with an ETA
has "wrote $work/fit.hw"
for id in LS-dispatch LS-combine LW-dispatch FP-dispatch FP-combine; do
    awk -v id="$id" '$1 == id { found = 1; r = $8; ok = r >= 0.95 && r <= 1.05 }
        END { exit found && ok ? 0 : 1 }' "$work/out" ||
        { cat "$work/out" >&2; fail "row $id is not within 5 % after the fit"; }
done
# the written file: every key, a header naming the input and the fit
[ "$(grep -c '^[a-z_]*=' "$work/fit.hw")" -eq "$("$npurr" hw --file | grep -c '^[a-z_]*=')" ] ||
    { cat "$work/fit.hw" >&2; fail "the fitted file lacks keys"; }
grep -q "^# npurr calibrate: timing parameters fitted on $work/measured.csv (5 training rows)" \
    "$work/fit.hw" || { cat "$work/fit.hw" >&2; fail "no header naming the input"; }
grep -q "^# fit error" "$work/fit.hw" || fail "no fit error in the header"
expect 0 "$npurr" hw --compare "$work/measured.csv" --hw "$work/fit.hw"
awk '$2 == "train" || $2 == "validate" { n++; if ($6 < 0.95 || $6 > 1.05) bad++ }
     END { exit n == 5 && !bad ? 0 : 1 }' "$work/out" ||
    { cat "$work/out" >&2; fail "the written file does not reproduce the fit"; }

# msprof op_summary: ops by name, rows of one op averaged, others ignored
cat >"$work/op_summary_0.csv" <<'EOF'
Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim
0,N/A,1,2,aclnnMoeDistributeDispatchV2_MoeDistributeDispatchV2,MoeDistributeDispatchV2,AI_VECTOR_CORE,100.0,30,0,48
0,N/A,2,2,aclnnAdd_AddAiCore_Add,Add,AI_VECTOR_CORE,140.0,3.5,0,8
0,N/A,3,2,aclnnMoeDistributeCombineV2_MoeDistributeCombineV2,MoeDistributeCombineV2,AI_VECTOR_CORE,150.0,28,0,48
0,N/A,4,2,aclnnMoeDistributeDispatchV2_MoeDistributeDispatchV2,MoeDistributeDispatchV2,AI_VECTOR_CORE,200.0,34,0,48
EOF
expect 0 "$npurr" hw --compare "$work/op_summary_0.csv" --kernel-options "-k fullmesh-dispatch-combine $F2"
awk '$3 == "dispatch" && $4 == "32.00" { d = 1 } $3 == "combine" && $4 == "28.00" { c = 1 }
     $2 == "train" { n++ } END { exit d && c && n == 2 ? 0 : 1 }' "$work/out" ||
    { cat "$work/out" >&2; fail "op_summary rows not matched and averaged"; }
expect 1 "$npurr" hw --compare "$work/op_summary_0.csv"
has "is an msprof op_summary CSV: give the shape"
expect 1 "$npurr" hw --compare "$work/op_summary_0.csv" --kernel-options "-k combine-sender --nodes 1"
has "no op matches a phase of -k combine-sender"

# bad rows: each named by FILE:LINE, exit 1
bad() {   # bad LINE WHAT: a file whose row 3 is LINE must fail naming line 3 and WHAT
    printf 'kernel,options,phase,measured_us\nfullmesh-dispatch-combine,"%s",total,10\n%s\n' \
        "$F1" "$1" >"$work/bad.csv"
    expect 1 "$npurr" hw --compare "$work/bad.csv"
    has "$work/bad.csv:3: $2"
}
bad 'no-such-kernel,"--nodes 1",total,10' "kernel 'no-such-kernel': no such kernel"
bad "fullmesh-dispatch-combine,\"$F1\",notify,10" "phase 'notify': not a phase of fullmesh-dispatch-combine"
bad "fullmesh-dispatch-combine,\"$F1\",total,fast" "measured_us 'fast' is not a positive number"
bad "fullmesh-dispatch-combine,\"$F1\",total,-3" "measured_us '-3' is not a positive number"
bad 'fullmesh-dispatch-combine,"--nodes 1,total,10' "a quoted field is not closed"
bad 'fullmesh-dispatch-combine,--nodes 1,total' "3 fields, the header has 4"
bad 'fullmesh-dispatch-combine,"--tokenz 3",total,10' "options '--tokenz 3'"
bad 'fullmesh-dispatch-combine,"--hw x.hw",total,10' "options: --hw has no place in a measured row"
printf 'kernel,options,phase\n' >"$work/nocol.csv"
expect 1 "$npurr" calibrate "$work/nocol.csv" -o "$work/x.hw"
has "nocol.csv:1: the header has no 'measured_us' column"
printf 'kernel,use,options,phase,measured_us\nfullmesh-dispatch-combine,test,"%s",total,10\n' "$F1" >"$work/use.csv"
expect 1 "$npurr" calibrate "$work/use.csv" -o "$work/x.hw"
has "use.csv:2: use 'test': train or validate"

# a row that deadlocks: named, nothing fitted or written
lost="--npus-per-node 4 --tokens 32 --hidden 2048 --topk 2 --experts 8 --routing zipf:2 --cores 4 --inject no-double-buffer"
printf 'kernel,options,phase,measured_us\nfullmesh-dispatch-combine,"%s",total,10\nfullmesh-dispatch-combine,"%s",total,10\n' \
    "$F1" "$lost" >"$work/dead.csv"
expect 1 "$npurr" calibrate "$work/dead.csv" -o "$work/dead.hw"
has "$work/dead.csv:3: -k fullmesh-dispatch-combine"
has "deadlock"
[ ! -e "$work/dead.hw" ] || fail "calibrate wrote a file after a failed row"
expect 1 "$npurr" hw --compare "$work/dead.csv"
has "error: $work/dead.csv:3"

# usage
expect 2 "$npurr" calibrate "$work/measured.csv" -o "$work/measured.csv"
has "is the measured file itself"
expect 2 "$npurr" calibrate "$work/measured.csv"
has "-o OUT.hw is required"
expect 2 "$npurr" calibrate "$work/measured.csv" -o "$work/x.hw" -j 0
expect 2 "$npurr" calibrate "$work/measured.csv" -o "$work/x.hw" --fast
expect 2 "$npurr" hw --compare
expect 2 "$npurr" hw --hw "$work/fit.hw"
expect 0 "$npurr" calibrate --help
has "log(npurr/measured)^2"
expect 0 "$npurr" hw --help
has "--compare"
expect 0 "$npurr" hw
has "fitted:   by npurr calibrate"
echo "calibrate: ok"
