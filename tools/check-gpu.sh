#!/usr/bin/env bash
# Exits 0 when an NVIDIA GPU is usable here, else explains and exits 2. Installs and builds nothing.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  exit 0
fi
cat >&2 <<'MSG'
make tune: no NVIDIA GPU found on this machine (nvidia-smi lists none), so nothing was installed or built.
  Tuning times every kernel variant on the GPU it will run on. Run `make tune` on a machine with an NVIDIA GPU,
  or, without one, build here and run there with the GPU workflow script:  tools/gpu.sh --help
MSG
exit 2
