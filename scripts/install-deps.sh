#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages the project builds, packages and tests with (OpenBLAS as the BLAS
# that Ipopt's MUMPS factorises with: 3x faster than the reference BLAS; clang and its sanitizer
# and libFuzzer runtimes for the fuzz targets, scripts/fuzz.sh; dpkg-dev, debootstrap, venv and pip
# for the install tests), and the viewer's npm packages
# (three.js, esbuild, playwright-core, pinned in clients/viewer/web/package-lock.json) with
# `npm ci`.  Idempotent: does nothing when everything is present.  Needs root, or sudo.
#   --bench   also MuJoCo (libmujoco-dev), for benchmarks/bench_peer.cpp only: nothing builds or
#             tests with it.
set -euo pipefail
bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    *) echo "install-deps.sh: unknown flag '$arg' (--bench)" >&2; exit 2 ;;
  esac
done
packages=(
  build-essential cmake
  libeigen3-dev libyaml-cpp-dev
  libfcl-dev libassimp-dev
  libompl-dev libboost-filesystem-dev libboost-serialization-dev libboost-system-dev
  libboost-graph-dev libboost-program-options-dev ompl-demos
  coinor-libipopt-dev libsiconos-numerics-dev
  libopenblas0-serial
  libgtest-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3 python3-grpcio python3-protobuf python3-yaml openssl nginx
  python3-venv python3-pip python3-setuptools python3-wheel dpkg-dev debootstrap
  nodejs chromium fonts-dejavu-core
  clang libclang-rt-14-dev
)
if [ "$bench" = 1 ]; then packages+=(libmujoco-dev); fi
# Debian's nodejs comes without npm; NodeSource's (on some machines) has it built in.
command -v npm > /dev/null 2>&1 || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "Installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The viewer's npm packages, exactly as locked; again only when the lock file changed.
web="$(dirname "$0")/../clients/viewer/web"
stamp="$web/node_modules/.installed-lock.json"
if ! cmp -s "$web/package-lock.json" "$stamp"; then
  echo "Installing the viewer's npm packages (npm ci)" >&2
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$web/package-lock.json" "$stamp"
fi
