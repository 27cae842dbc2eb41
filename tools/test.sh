#!/bin/sh
# Runs every test twice: in build/ (warnings are errors) and in build-asan/
# (AddressSanitizer + UndefinedBehaviorSanitizer). Run tools/setup.sh first.
set -eu
cd "$(dirname "$0")/.."
jobs=2
echo "== normal build (-Werror): build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPURR_WERROR=ON >/dev/null
cmake --build build -j$jobs
ctest --test-dir build --output-on-failure -j$jobs
echo "== ASan+UBSan build: build-asan/"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DNPURR_WERROR=ON -DNPURR_SANITIZE=ON \
      -DNPURR_BENCH=OFF >/dev/null
cmake --build build-asan -j$jobs
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j$jobs
