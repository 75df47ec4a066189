#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures and builds (Release) into build/; binaries land in build/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
