#!/usr/bin/env bash
# Installs what commopt needs to build, test and run on Debian 12: LLVM/MLIR
# 22, clang and lld 22, Ninja, CMake, OpenMPI, GoogleTest, and PyTorch with
# torchvision for the profile exporter (CPU only). Runs apt-get
# only when a package is missing. CUDA 13 + NCCL are used when present in
# /usr/local/cuda (they are not in Debian's archive); without them the
# runtime builds its MPI backend only.
set -euo pipefail

packages=(
  cmake ninja-build
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 lld-22
  libopenmpi-dev openmpi-bin
  libgtest-dev
  python3 python3-torch python3-torchvision
  dataset-fashion-mnist
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
    grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]})); then
  echo "commopt: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
