#!/usr/bin/env bash
# Quick start, main job: install dependencies, build, and plan a motion on a built-in model and
# scene -- PuppetCopter raises its left hand over the edge of the table -- writing the verified
# plan to plan.json and its input sequence to plan.csv (the format `marionette simulate --inputs`
# reads).  Extra arguments are passed to `marionette plan` instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >&2
if [ $# -eq 0 ]; then
  set -- --model puppetcopter --scene table --planner est \
    --goal "point:hand_l=0.05,0.24,0.40;radius=0.04" --seed 1 --time-limit 30 \
    --out plan.json --inputs-csv plan.csv
fi
exec build/bin/marionette plan "$@"
