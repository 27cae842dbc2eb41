#!/bin/sh
# Installs what building and running npurr needs on Debian 12 (as root),
# configures and builds build/ (warnings are errors). Safe to run again.
# What only the tests use (cmocka, Chromium, protobuf-compiler, Open MPI,
# numpy) tools/test.sh installs; split runs under mpirun need Open MPI
# (apt-get install libopenmpi-dev openmpi-bin, then run this again).
#   sh tools/setup.sh --debug   builds build-debug/ instead: -Og, so gdb shows
#                               kernel locals under `npurr replay` (docs/replay.md)
set -eu
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq build-essential cmake pkg-config libsqlite3-dev libzstd-dev \
        zlib1g-dev libdeflate-dev zstd sqlite3 gdb python3 >/dev/null
fi
if [ "${1:-}" = "--debug" ]; then
    # RelWithDebInfo (-O2) leaves kernel locals <optimized out>; -Og keeps them.
    # Not -Werror: -Og's flow analysis raises maybe-uninitialized false alarms
    # that the CI builds do not.
    cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-Og -g3" \
        -DNPURR_WERROR=OFF -DNPURR_BENCH=OFF >/dev/null
    cmake --build build-debug -j2 --target npurr
    exit 0
fi
# Open MPI or cmocka installed since build/ was configured: look again.
if [ -f build/CMakeCache.txt ] && { { command -v mpicc >/dev/null 2>&1 &&
        grep -q '^MPI_C_COMPILER:FILEPATH=.*NOTFOUND' build/CMakeCache.txt; } ||
        grep -q '^CMOCKA_LIB:FILEPATH=.*NOTFOUND' build/CMakeCache.txt; }; then
    rm -f build/CMakeCache.txt
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPURR_WERROR=ON >/dev/null
cmake --build build -j2
