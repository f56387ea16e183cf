#!/usr/bin/env bash
# tools/gpu.sh: an archive over the device call's 16 MiB a file travels in parts of 15 MiB, and unpack
# reads the parts as the whole; a smaller one travels as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=/dev/null
source "$root/tools/gpu.sh"

mkdir -p "$work/big/gpu-results" "$work/small/gpu-results"
head -c $((40 << 20)) /dev/urandom >"$work/big/gpu-results/noise"   # incompressible: 40 MiB archived
echo small >"$work/small/gpu-results/file"
for k in big small; do tar -C "$work/$k" -czf "$work/$k.tar.gz" gpu-results; done
cp "$work/big.tar.gz" "$work/big.orig"

sent=$(in_parts "$work/big.tar.gz")
[ ! -e "$work/big.tar.gz" ] || { echo "FAIL: the big archive is still whole"; exit 1; }
[ "$(echo "$sent" | wc -w)" -eq 3 ] || { echo "FAIL: 40 MiB in $(echo "$sent" | wc -w) parts, not 3: $sent"; exit 1; }
for f in $sent; do
  [ "$(stat -c %s "$f")" -le $((15 << 20)) ] || { echo "FAIL: $f is over 15 MiB"; exit 1; }
done
whole=$(joined "$work/big.tar.gz")
cmp "$whole" "$work/big.orig" || { echo "FAIL: the joined parts differ from the archive"; exit 1; }
rm -f "$whole"
# unpack, named the archive, reads its parts.
KTUNE_BUILD_DIR="$work/build" "$root/tools/gpu.sh" unpack "$work/big.tar.gz" >/dev/null
cmp "$work/big/gpu-results/noise" "$work/build/gpu-results/"*/gpu-results/noise ||
  { echo "FAIL: unpack of the parts did not give the archived file"; exit 1; }

[ "$(in_parts "$work/small.tar.gz")" == "$work/small.tar.gz" ] || { echo "FAIL: a small archive was split"; exit 1; }
[ "$(joined "$work/small.tar.gz")" == "$work/small.tar.gz" ] || { echo "FAIL: a whole archive is not read as it is"; exit 1; }
echo "PASS: 40 MiB in 3 parts, joined and unpacked bit for bit; a small archive left whole"
