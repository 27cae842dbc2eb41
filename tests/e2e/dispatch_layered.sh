#!/usr/bin/env bash
# dispatch_layered.sh - the layered dispatch (-k dispatch-layered) end to
# end, as a user runs it: clean records on 2 and 4 nodes (exit 0) and their
# replay; both faults of issue 6 hang at record time with a per-role report
# (exit 3), are classified (credit starvation) and reproduced by replay;
# `npurr layout` reproduces seed 003's worked example; a routing read from
# a NumPy file; bad options are refused naming the option.
#
# Usage: bash dispatch_layered.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

roles=(--rdma-senders 2 --rdma-coordinators 1 --forwarders 2 --forwarder-coordinators 1
       --hccs-receivers 2)
small=(--nodes 2 --npus-per-node 2 --tokens 48 --hidden 64 --topk 2 --experts 8 "${roles[@]}"
       --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4 --hccs-send-chunk 2)

# Clean runs: every check passes, the run folder exists, replay agrees.
expect 0 "$npurr" record -k dispatch-layered "${small[@]}" -o "$work/ok"
has "check     passed"
[ -f "$work/ok/trace.zst" ] && [ -f "$work/ok/index.db" ] || fail "record wrote no run folder"
replay 0 "$work/ok"
expect 0 "$npurr" record -k dispatch-layered --nodes 4 --npus-per-node 2 --tokens 5,0,9,3,1,7,2,4 \
    --hidden 256 --dtype fp8 --topk 3 --experts 16 --routing zipf:1.2 "${roles[@]}" \
    --rdma-chunk 3 --rdma-send-chunk 1 --credit-batch 2 --hccs-chunk 2 --hccs-send-chunk 1 \
    -o "$work/ok4"
has "check     passed"
replay 0 "$work/ok4"

# Fault 1: the last partial credit batch never comes back; the source's
# coordinator waits for it (credit starvation).
expect 3 "$npurr" record -k dispatch-layered "${small[@]}" --inject credit-leak -o "$work/leak"
has "deadlock"
has "RDMACoordinator"
has "].head >= "
has "credits="
expect 0 "$npurr" stats "$work/leak" --by cause
has "credit_starvation"
replay 3 "$work/leak"

# Fault 2: one remote tail update is dropped; the forwarder waits for a
# tail that stays short.
expect 3 "$npurr" record -k dispatch-layered "${small[@]}" --inject lost-tail -o "$work/lost"
grep -qE 'RDMA2HCCSForwarder +blocked on rdma_channel\[c0\]\[0->2\]\.tail > ' "$work/out" ||
    { cat "$work/out" >&2; fail "no forwarder waiting on the lost tail"; }
has "last written by"
replay 3 "$work/lost"

# Layout: seed 003's worked example, ~100 MB per rank.
expect 0 "$npurr" layout -k dispatch-layered --nodes 2 --channels 10 --rdma-chunk 1024 \
    --hccs-chunk 1024 --hidden 448 --topk 8 --tokens 64
has "S_token = 1024 B"
has "104861280 B"
has "100.004 MiB"
[ "$(grep -cE '^[0-9]+ ' "$work/out")" -eq 16 ] || { cat "$work/out" >&2; fail "layout lacks a line per rank"; }

# Routing from a NumPy file: one [sum of tokens, topk] int64 array.
if command -v python3 >/dev/null; then
    python3 - "$work/route.npy" <<'EOF'
import struct, sys
rows = [(0, 7), (-1, -1), (3, 4), (6, 5), (1, 2), (2, 6)]
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (6, 2), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    for r in rows:
        f.write(struct.pack("<2q", *r))
EOF
    expect 0 "$npurr" record -k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 3,0,2,1 \
        --hidden 32 --topk 2 --experts 8 "${roles[@]}" --routing "npy:$work/route.npy" \
        -o "$work/npy"
    has "check     passed"
    replay 0 "$work/npy"
    expect 1 "$npurr" record -k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 2 \
        --hidden 32 --topk 2 --experts 8 --routing "npy:$work/route.npy" -o "$work/npy2"
    has "the file has 6 rows but the 4 ranks have 8 tokens"
else
    echo "dispatch_layered: no python3 to write a .npy file: npy step skipped"
fi

# One node: the intranode dispatch (the own node's RDMA ring needs no copy),
# HCCS only, as the single-server A2 measurements run it.
expect 0 "$npurr" record -k dispatch-layered --nodes 1 --tokens 64 -o "$work/one"
has "check     passed"
expect 0 "$npurr" sql "$work/one" --csv "SELECT count(*) FROM transfers WHERE kind LIKE 'rdma%'"
[ "$(tail -1 "$work/out")" = 0 ] || { cat "$work/out" >&2; fail "a one-node dispatch used RDMA"; }

# Bad input is refused with a message naming the option (exit 2, a usage error).
expect 2 "$npurr" record -k dispatch-layered --nodes 0 --tokens 4 -o "$work/bad1"
has "--nodes"
expect 2 "$npurr" record -k dispatch-layered --nodes 2 --routing drop:2 -o "$work/bad2"
has "--routing drop:2"
expect 2 "$npurr" record -k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 1,2,3 -o "$work/bad3"
has "--tokens 1,2,3"
expect 2 "$npurr" record -k dispatch-layered --nodes 2 --rdma-chunk 4 --rdma-send-chunk 4 \
    --credit-batch 4 -o "$work/bad4"
has "--rdma-chunk 4"
echo "dispatch_layered: ok"
