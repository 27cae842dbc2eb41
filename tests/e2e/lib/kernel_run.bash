# kernel_run.bash - what the kernel end-to-end scripts share, sourced after
# they set npurr=$1: a scratch folder removed on exit, and assertions on
# npurr's exit code, output and replay. (Not a test itself: ctest runs only
# tests/e2e/*.sh.)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect CODE CMD...: runs CMD, output to $work/out, and checks its exit code.
expect() {
    local want=$1
    shift
    "$@" >"$work/out" 2>&1
    local got=$?
    if [ "$got" -ne "$want" ]; then
        cat "$work/out" >&2
        fail "expected exit $want, got $got: $*"
    fi
}

# has TEXT: the last command's output contains TEXT.
has() { grep -qF -- "$1" "$work/out" || { cat "$work/out" >&2; fail "output lacks '$1'"; }; }

# Replay must reproduce every ending exactly.
replay() {
    expect "$1" "$npurr" replay "$2"
}
