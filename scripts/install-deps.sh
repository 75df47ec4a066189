#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds with (idempotent: does nothing when they are
# all present).  Needs root, or sudo.
set -euo pipefail
packages=(
  build-essential cmake
  libeigen3-dev libyaml-cpp-dev
  libfcl-dev libassimp-dev
  libompl-dev libboost-filesystem-dev libboost-serialization-dev libboost-system-dev
  libboost-graph-dev libboost-program-options-dev ompl-demos
  libgtest-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3 python3-grpcio python3-protobuf openssl
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "Installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
