#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start, tests: install dependencies, build, run the whole suite with ctest, then every
# fuzz target for a few seconds (scripts/fuzz.sh --smoke: a second build, with clang and the
# sanitizers, in build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)")
scripts/fuzz.sh --smoke --jobs "$(nproc)"
