#!/usr/bin/env bash
# Quick start, main job: install dependencies, build, and simulate a built-in model.
# Extra arguments are passed to `marionette simulate` (default: the planar arm swinging under a
# moving rig for 5 s, summary as JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >&2
if [ $# -eq 0 ]; then
  set -- --model planar-arm --duration 5 --inputs examples/planar-arm-sweep.csv --summary
fi
exec build/bin/marionette simulate "$@"
