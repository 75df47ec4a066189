#!/usr/bin/env bash
# Quick start, tests: install dependencies, build, run the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
