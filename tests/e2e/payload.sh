#!/usr/bin/env bash
# payload.sh - payload kept as references (the default) and every byte
# stored (--payload full) are the same run: for each kernel, clean and with
# each injected fault, both modes end with the same exit code, outcome and
# check message, and the same events (every column of every row), and replay
# agrees with the trace. The faults still fail in ref mode, so its checks
# compare contents, not just shapes.
#
# Usage: bash payload.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

events_hash() { "$npurr" sql "$1" "SELECT * FROM events" --csv 2>/dev/null | md5sum | cut -d' ' -f1; }

# same WANT NAME ARGS...: records ARGS in both modes, expects exit WANT from
# each, and the same ending and events.
same() {
    local want=$1 name=$2
    shift 2
    expect "$want" "$npurr" record "$@" -o "$work/$name.ref"
    grep -E '^(outcome|check) ' "$work/out" >"$work/$name.ref.end"
    expect "$want" "$npurr" record "$@" --payload full -o "$work/$name.full"
    grep -E '^(outcome|check) ' "$work/out" >"$work/$name.full.end"
    cmp -s "$work/$name.ref.end" "$work/$name.full.end" ||
        { diff "$work/$name.ref.end" "$work/$name.full.end" >&2; fail "$name: endings differ"; }
    [ -s "$work/$name.ref.end" ] || fail "$name: no outcome line"
    local a b
    a=$(events_hash "$work/$name.ref")
    b=$(events_hash "$work/$name.full")
    [ "$a" = "$b" ] || fail "$name: events differ between --payload ref and full"
    [ "$a" != "$(echo -n | md5sum | cut -d' ' -f1)" ] || fail "$name: no events read"
    "$npurr" sql "$work/$name.ref" "SELECT value FROM meta WHERE key='config.payload'" --csv \
        >"$work/out" 2>&1
    has "ref"
}

cs=(--npus-per-node 2 --tokens 64 --hidden 1024 --topk 2 --experts 8 --staging-bytes 65536
    --ring-bytes 65536)
same 0 combine -k combine-sender "${cs[@]}"
same 0 inplace -k combine-sender-inplace "${cs[@]}"
same 4 stale -k combine-sender "${cs[@]}" --inject no-mte3-wait
grep -q "before the sender's data landed" "$work/stale.ref.end" ||
    fail "stale: ref mode did not name the stale ring bytes"
cn=(-k combine-normal --npus-per-node 2 --tokens 16 --hidden 4096 --topk 2 --experts 8)
same 0 normal "${cn[@]}" --routing drop:0.2
same 4 normal-first "${cn[@]}" --inject status-first

roles=(--rdma-senders 2 --rdma-coordinators 1 --forwarders 2 --forwarder-coordinators 1
       --hccs-receivers 2)
dl=(--nodes 2 --npus-per-node 2 --tokens 48 --hidden 256 --topk 2 --experts 8 "${roles[@]}"
    --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4 --hccs-send-chunk 2)
same 0 dispatch -k dispatch-layered "${dl[@]}"
same 3 leak -k dispatch-layered "${dl[@]}" --inject credit-leak
same 3 lost -k dispatch-layered "${dl[@]}" --inject lost-tail

fm=(-k fullmesh-dispatch-combine --npus-per-node 4 --tokens 64 --hidden 2048 --topk 2 --experts 8
    --routing zipf:2)
same 0 fullmesh "${fm[@]}" --cores 1 --rounds 3
same 4 overwrite "${fm[@]}" --cores 1 --rounds 3 --inject no-double-buffer
same 3 lostflag -k fullmesh-dispatch-combine --npus-per-node 4 --tokens 32 --hidden 2048 --topk 2 \
    --experts 8 --routing zipf:2 --cores 4 --inject no-double-buffer

mm=(-k matmul-reduce-scatter --m 512 --n 128 --k 64 --block-m 32 --block-n 64 --npus-per-node 2)
same 0 mmrs "${mm[@]}"
same 4 stage "${mm[@]}" --inject no-stage-wait

# Both modes' runs replay identically (each in the mode it was recorded in).
expect 0 "$npurr" replay "$work/dispatch.full"
has "identical"
expect 4 "$npurr" replay "$work/stale.ref"
has "identical"
expect 3 "$npurr" replay "$work/lostflag.ref"
has "identical"
echo "payload: ref and full agree on every kernel and fault"
