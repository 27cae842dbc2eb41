# reliability.bash - what the reliability scripts (tests/e2e/reliability_*.sh)
# share, sourced after they set npurr=$1: kernel_run.bash's scratch folder
# and assertions, a small recorded run to damage, and byte surgery on its
# trace. Each case must end with a clear message and the right exit code,
# claim no success on damaged data and lose no run folder.
. "$(dirname "${BASH_SOURCE[0]}")/kernel_run.bash"

# A four-chunk run (252,989 events) in a fraction of a second.
small_run() {
    "$npurr" record -k fullmesh-dispatch-combine --tokens 64 --rounds 4 -o "$1" --quiet \
        >"$work/rec.out" 2>&1 || { cat "$work/rec.out" >&2; fail "recording $1 failed"; }
}

# frame_bounds RUN: "offset length" of every chunk frame, in file order.
frame_bounds() {
    python3 - "$1/index.db" <<'PY'
import sqlite3, sys
for off, n in sqlite3.connect(sys.argv[1]).execute(
        "SELECT offset, compressed_bytes FROM chunks ORDER BY offset"):
    print(off, n)
PY
}

# cut_frames SRC DST SPEC: writes SRC/trace.zst to DST/trace.zst with its chunk
# frames rearranged: SPEC lists chunk numbers (0-based) in the new order, so
# "0 2 3" drops chunk 1 and "0 2 1 3" swaps chunks 1 and 2.
cut_frames() {
    mkdir -p "$2"
    python3 - "$1" "$2" "$3" <<'PY'
import sqlite3, sys
src, dst, spec = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split()]
rows = sqlite3.connect(src + "/index.db").execute(
    "SELECT offset, compressed_bytes FROM chunks ORDER BY offset").fetchall()
t = open(src + "/trace.zst", "rb").read()
head, tail = t[:rows[0][0]], t[rows[-1][0] + rows[-1][1]:]
open(dst + "/trace.zst", "wb").write(
    head + b"".join(t[rows[i][0]:rows[i][0] + rows[i][1]] for i in spec) + tail)
PY
}

# sum_of FILE: a checksum to show a file was left untouched.
sum_of() { sha256sum "$1" | cut -d' ' -f1; }

# tmpfs_at DIR SIZE: a tmpfs of SIZE (e.g. 2m) mounted at DIR, unmounted on
# exit before the scratch folder is removed. Returns 1 when mounting is not
# permitted here (not root, a container without CAP_SYS_ADMIN).
tmpfs_at() {
    mkdir -p "$1"
    mount -t tmpfs -o size="$2" tmpfs "$1" 2>/dev/null || return 1
    mounts="${mounts:-} $1"
    trap 'for m in $mounts; do umount -l "$m"; done; rm -rf "$work"' EXIT
}

# in_time SECONDS CMD...: CMD, killed after SECONDS (exit 124): a reader that
# would hang on a FIFO fails the test instead of hanging it.
in_time() { timeout -k 2 "$@"; }
