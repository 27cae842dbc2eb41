#!/bin/sh
# Installs what npurr needs on Debian 12 (run as root), configures and builds
# build/ (warnings are errors). Safe to run again.
#   sh tools/setup.sh --debug   builds build-debug/ instead: -Og, so gdb shows
#                               kernel locals under `npurr replay` (docs/replay.md)
set -eu
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq build-essential cmake pkg-config libsqlite3-dev libzstd-dev \
        libcmocka-dev zstd sqlite3 gdb python3 python3-numpy zlib1g-dev protobuf-compiler chromium \
        libopenmpi-dev openmpi-bin >/dev/null
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
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPURR_WERROR=ON >/dev/null
cmake --build build -j2
