#!/bin/bash
# A run folder is all replay needs, even for input files: `record` copies a
# `--routing npy:PATH` routing (one file per rank with {rank}) into
# RUN/inputs/, and `replay` reads the copies after the originals are gone.
set -u
npurr=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

# [32, 8] int32 routing arrays for the 16 ranks of 2 nodes x 8 NPUs
python3 - "$tmp" <<'PY' || fail "cannot write the .npy inputs"
import random, struct, sys
random.seed(11)
for rank in range(16):
    hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (32, 8), }"
    hdr += ' ' * (64 - (10 + len(hdr) + 1) % 64) + '\n'
    with open('%s/route%d.npy' % (sys.argv[1], rank), 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
        for _ in range(32):
            f.write(struct.pack('<8i', *random.sample(range(256), 8)))
PY
"$npurr" record -k dispatch-layered --nodes 2 --tokens 32 --hidden 256 \
    --routing "npy:$tmp/route{rank}.npy" -o "$tmp/run" --quiet > "$tmp/out" 2>&1 \
    || fail "record with npy routing failed"
for rank in $(seq 0 15); do
    cmp -s "$tmp/route$rank.npy" "$tmp/run/inputs/routing.$rank.npy" || fail "rank $rank's routing not copied"
done
"$npurr" sql "$tmp/run" "SELECT value FROM meta WHERE key = 'opt.routing'" > "$tmp/meta"
grep -q 'npy:{RUN}/inputs/routing.{rank}.npy' "$tmp/meta" || { cat "$tmp/meta"; fail "no opt.routing key"; }
rm "$tmp"/route*.npy
"$npurr" replay "$tmp/run" > "$tmp/out" 2>&1 || fail "replay without the original inputs failed"
grep -q "^identical" "$tmp/out" || fail "replay did not report identical"
# one file holding every rank's rows back to back
python3 - "$tmp" <<'PY' || fail "cannot write the single .npy input"
import random, struct, sys
random.seed(12)
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (512, 8), }"
hdr += ' ' * (64 - (10 + len(hdr) + 1) % 64) + '\n'
with open('%s/all.npy' % sys.argv[1], 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
    for _ in range(512):
        f.write(struct.pack('<8q', *random.sample(range(256), 8)))
PY
"$npurr" record -k dispatch-layered --nodes 2 --tokens 32 --hidden 256 \
    --routing "npy:$tmp/all.npy" -o "$tmp/run1" --quiet > "$tmp/out" 2>&1 \
    || fail "record with a single npy file failed"
cmp -s "$tmp/all.npy" "$tmp/run1/inputs/routing.npy" || fail "the single routing file was not copied"
rm "$tmp/all.npy"
"$npurr" replay "$tmp/run1" > "$tmp/out" 2>&1 || fail "replay without the single original input failed"
grep -q "^identical" "$tmp/out" || fail "replay (single file) did not report identical"
echo "inputs: all checks passed"
