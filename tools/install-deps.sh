#!/usr/bin/env bash
# Installs what building and testing ktune need on Debian/Ubuntu, and finds the CUDA toolkit.
# Idempotent: packages already present are not reinstalled. Needs root (or sudo) to install.
set -euo pipefail

packages=(cmake ninja-build g++ make libboost-dev libfmt-dev libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev
          libbenchmark-dev libgtest-dev chromium python3
          slurmctld slurmd slurm-client)  # the Slurm path's test runs a single-node Slurm (tools/slurm/)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ktune deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "ktune deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "ktune deps: all Debian packages present"
fi

nvcc="${CUDACXX:-}"
if [ -z "$nvcc" ]; then
  for c in /usr/local/cuda/bin/nvcc "$(command -v nvcc || true)"; do
    [ -n "$c" ] && [ -x "$c" ] && { nvcc="$c"; break; }
  done
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  cat >&2 <<'MSG'
ktune deps: the CUDA toolkit was not found (no /usr/local/cuda/bin/nvcc, no nvcc on PATH, CUDACXX unset).
Install the CUDA Toolkit 12.8 or newer from NVIDIA (Debian's nvidia-cuda-toolkit is too old for sm_90
features used here), or point CUDACXX at its nvcc, then run the command again.
MSG
  exit 1
fi
echo "ktune deps: CUDA toolkit: $("$nvcc" --version | tail -n 2 | head -n 1) ($nvcc)"
