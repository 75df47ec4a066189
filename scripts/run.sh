#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Quick start, main job: install dependencies, build, start the planning service
# (marionette-server) on loopback, ask it for a plan through the CLI -- PuppetCopter raises its
# left hand over the edge of the table -- print the plan's summary, write the verified plan to
# plan.json and its input sequence to plan.csv (the format `marionette simulate --inputs`
# reads), render it as plan.html (the 3-D viewer: open it in a browser), then stop the server.
# Extra arguments are passed to `marionette plan` instead of the
# default request (the --server flag is added).  The server's request log: build/server.log.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >&2

log=build/server.log
build/bin/marionette-server --listen 127.0.0.1:0 2> "$log" &
server=$!
stop_server() {
  kill -TERM "$server" 2> /dev/null && wait "$server" || true
}
trap stop_server EXIT
# The server prints "listening on ... (port N)" once it serves.
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$server" 2> /dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "run.sh: the server did not start" >&2; cat "$log" >&2; exit 1; }
echo "run.sh: marionette-server on 127.0.0.1:$port (log: $log)" >&2

default_request=0
if [ $# -eq 0 ]; then
  default_request=1
  set -- --model puppetcopter --scene table --planner rrt \
    --goal "point:hand_l=0.05,0.24,0.40;radius=0.04" --seed 3 --time-limit 30 \
    --out plan.json --inputs-csv plan.csv
fi
status=0
build/bin/marionette plan --server "127.0.0.1:$port" "$@" || status=$?
if [ "$default_request" = 1 ] && [ "$status" -le 4 ] && [ -f plan.json ]; then
  build/bin/marionette render plan.json --out plan.html
  echo "run.sh: open plan.html in a browser to see the plan" >&2
fi
exit $status
