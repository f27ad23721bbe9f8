#!/usr/bin/env bash
# Installs everything Hector needs on Debian 12 (bookworm) with apt.
# Does nothing when every package is already installed. The CUDA 13 toolkit
# is expected at /usr/local/cuda (see README.md); without it the runtime is
# built without GPU kernels.
set -euo pipefail

packages=(
  cmake ninja-build                                 # build
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22
  libclang-rt-22-dev                                # libFuzzer, ASan (scripts/fuzz.sh)
  nlohmann-json3-dev                                # manifests
  python3 python3-numpy python3-pytest python3-torch  # frontend and tests
  python3-matplotlib                                # the main job's plot
  python3-pip python3-setuptools python3-wheel      # pip install ./python (and its test)
  libmetis-dev                                      # hector.distributed.partition (METIS)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
       grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
  --no-install-recommends "${missing[@]}"
