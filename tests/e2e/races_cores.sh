#!/usr/bin/env bash
# races_cores.sh - every kernel's injected race is found by --check races
# at the kernel's default core count and at the most cores it takes.
#
# The checker once missed combine-normal's status-first from 35 cores up
# (each core then sends at most one row, so each status word is first used
# for synchronisation after its write was done, and the word got the pipe's
# clock of that later moment, which already covered the row written after
# it). The counts where a kernel spreads its work thinnest are where such a
# shortcut shows, so each fault runs at both ends. Shapes are small: the
# whole script takes seconds. The clean kernels at the most cores must
# report nothing.
#
# Usage: bash races_cores.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

# found WHAT CODES ARGS...: record ARGS with --check races; the exit code
# must be one of CODES and the summary must count at least one WHAT
# ("race" or "sync error").
found() {
    local what=$1 codes=$2
    shift 2
    "$npurr" record "$@" --check races --no-trace >"$work/out" 2>&1
    local rc=$?
    case " $codes " in
        *" $rc "*) ;;
        *) cat "$work/out" >&2; fail "exit $rc, not one of $codes: $*" ;;
    esac
    local n
    if [ "$what" = race ]; then
        n=$(sed -n 's/^races *\([0-9]*\) races\{0,1\},.*/\1/p' "$work/out")
    else
        n=$(sed -n 's/^races .*, \([0-9]*\) sync errors\{0,1\} .*/\1/p' "$work/out")
    fi
    [ "${n:-0}" -ge 1 ] || { cat "$work/out" >&2; fail "no $what found: $*"; }
}

# combine-normal, as the issue found it: default --cores is all 48 AIV.
cn=(-k combine-normal --npus-per-node 2 --tokens 16 --hidden 4096 --topk 2 --experts 8)
found race "4 6" "${cn[@]}" --inject status-first
found race "4 6" "${cn[@]}" --inject status-first --cores 34
found race "4 6" "${cn[@]}" --inject no-status-wait
cn4=(-k combine-normal --npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16)
found race "4 6" "${cn4[@]}" --inject status-first
found race "4 6" "${cn4[@]}" --inject status-first --cores 40 --chip 910B4

dn=(-k dispatch-normal --npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16)
found race "4 6" "${dn[@]}" --inject no-status-wait
found race "4 6" "${dn[@]}" --inject no-status-wait --cores 1

# combine-sender(-inplace): default one sender core per destination rank;
# at most the AIV cores the receivers leave (44 at 4 ranks).
cs=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16 --staging-bytes 1024
    --ring-bytes 4096 --inject no-mte3-wait)
for k in combine-sender combine-sender-inplace; do
    found race "4 6" -k "$k" "${cs[@]}"
    found race "4 6" -k "$k" "${cs[@]}" --sender-cores 44
done

# matmul-reduce-scatter: default 2 AIC, at most 24 (enough rows that every
# AIC reuses a stage).
mm=(-k matmul-reduce-scatter --npus-per-node 4 --n 128 --k 64 --block-m 32 --block-n 64
    --inject no-stage-wait)
found race "4 6" "${mm[@]}" --m 512
found race "4 6" "${mm[@]}" --m 2048 --cores 24

# fullmesh: default 4 AIV, at most 48; the overwrite shows under the slow
# scalar unit (races.sh says why), as stale data or a lost flag (exit 3).
printf 'scalar_op_cycles=6\nbatchwrite_task_ns=3000\n' >"$work/slow_scalar.hw"
fm=(-k fullmesh-dispatch-combine --npus-per-node 4 --inject no-double-buffer
    --hw "$work/slow_scalar.hw")
found race "3 4 6" "${fm[@]}"
found race "3 4 6" "${fm[@]}" --cores 48

# dispatch-layered: its default roles take all 48 AIV; the lost tail is a
# wait never satisfied, at the defaults and at one core per role.
dl=(-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 --hidden 64 --topk 2 --experts 8
    --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4 --hccs-send-chunk 2
    --inject lost-tail)
found "sync error" 3 "${dl[@]}"
found "sync error" 3 "${dl[@]}" --rdma-senders 1 --rdma-coordinators 1 --forwarders 1 \
    --forwarder-coordinators 1 --hccs-receivers 1
# and the clean kernels at the most cores: nothing reported
for args in "${cn[*]}" "${dn[*]}" "-k combine-sender ${cs[*]/no-mte3-wait/none} --sender-cores 44" \
            "${mm[*]/no-stage-wait/none} --m 2048 --cores 24" \
            "-k fullmesh-dispatch-combine --npus-per-node 4 --cores 48" "${dl[*]/lost-tail/none}"; do
    read -r -a a <<<"$args"
    expect 0 "$npurr" record "${a[@]}" --check races --no-trace
    has "0 races, 0 sync errors"
done
echo "races_cores: ok"
