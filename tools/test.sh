#!/bin/sh
# Runs the tests. Run tools/setup.sh first.
#   sh tools/test.sh          the full suite, twice: in build/ (warnings are
#                             errors) and in build-asan/ (AddressSanitizer +
#                             UndefinedBehaviorSanitizer). What .ci/run runs.
#   sh tools/test.sh --quick  for iterating: build/ only, the tests labelled
#                             quick (every unit test, every e2e script but the
#                             slow ones CMakeLists.txt names); a few minutes
set -eu
cd "$(dirname "$0")/.."
jobs=2
quick=0
case "${1:-}" in
    "") ;;
    --quick) quick=1 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: sh tools/test.sh [--quick]" >&2; exit 2 ;;
esac
# What only the tests use, on top of tools/setup.sh's: cmocka (the unit
# tests), Chromium (looks at the report), protobuf-compiler (reads the
# Perfetto export back), Open MPI (split runs), numpy (fixtures).
test_packages="libcmocka-dev chromium protobuf-compiler libopenmpi-dev openmpi-bin python3-numpy"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
        ! dpkg -s $test_packages >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $test_packages >/dev/null
    # build/ was configured without them (tools/setup.sh): look again
    rm -f build/CMakeCache.txt
fi
echo "== normal build (-Werror): build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPURR_WERROR=ON >/dev/null
cmake --build build -j$jobs
if [ "$quick" = 1 ]; then
    echo "== quick tier: ctest -L quick (the full suite: sh tools/test.sh)"
    ctest --test-dir build --output-on-failure -j$jobs -L quick
    exit 0
fi
ctest --test-dir build --output-on-failure -j$jobs
echo "== ASan+UBSan build: build-asan/"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DNPURR_WERROR=ON -DNPURR_SANITIZE=ON \
      -DNPURR_BENCH=OFF >/dev/null
cmake --build build-asan -j$jobs
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j$jobs
