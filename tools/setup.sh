#!/bin/sh
# Installs what npurr needs on Debian 12 (run as root), configures and builds
# build/ (warnings are errors). Safe to run again.
set -eu
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq build-essential cmake pkg-config libsqlite3-dev libzstd-dev \
        libcmocka-dev zstd sqlite3 gdb python3 zlib1g-dev protobuf-compiler chromium >/dev/null
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPURR_WERROR=ON >/dev/null
cmake --build build -j2
