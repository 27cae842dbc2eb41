# installed.bash - what the scripts that run npurr as an installed library
# share (install.sh, ascendc.sh), sourced after kernel_run.bash: npurr
# installed into $work/prefix ($npurr its binary), examples configured and
# built out of tree against it, and a python3 with numpy. (Not a test
# itself: ctest runs only tests/e2e/*.sh.)

# install_npurr BUILD: cmake --install BUILD into $work/prefix; sets prefix and npurr.
install_npurr() {
    prefix="$work/prefix"
    cmake --install "$1" --prefix "$prefix" >"$work/install.log" 2>&1 ||
        { cat "$work/install.log" >&2; fail "cmake --install failed"; }
    npurr="$prefix/bin/npurr"
}

# build_example SRC_DIR BUILD_DIR TARGET: configured against the install and
# built; BUILD_DIR/TARGET.so must exist.
build_example() {
    cmake -S "$1" -B "$2" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 &&
        cmake --build "$2" >>"$work/cmake.log" 2>&1 ||
        { cat "$work/cmake.log" >&2; fail "$1 does not build against the install"; }
    [ -f "$2/$3.so" ] || fail "$1 built no $3.so"
}

# numpy_python: sets py to a python3 that imports numpy, or fails.
numpy_python() {
    py=
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
    done
    [ -n "$py" ] || fail "no python3 with numpy (the test command installs python3-numpy)"
}
