#!/usr/bin/env bash
# tools/slurm/submit.sh: submits a tune to a Slurm cluster as N slices (an array job of tools/slurm/tune.sbatch,
# one GPU per task) and the merge after them (tools/slurm/merge.sbatch, --dependency=afterok on the array).
#
# usage: [KTUNE_OUT=/shared/dir] tools/slurm/submit.sh N [sbatch options...]
#   N                 slices: whole (op, element size) units of the search, balanced by expected cost (ktune_bench --slice)
#   sbatch options    passed to both submissions after ours (e.g. --partition=gpu --account=me --time=2:00:00);
#                     --gpus=... here overrides the slices' --gpus=1 (and asks as much for the merge)
# Environment:
#   KTUNE_OUT         where the slices, the merged raw/search.json and the Slurm logs (slurm/) go; it must be
#                     on a folder that every node sees (a shared filesystem), like this checkout and its
#                     build/ (default: build/ktune-run of this checkout)
#   KTUNE_SLURM_FINISH  what the merge job runs after merging (default: tools/tune.sh finish)
#   KTUNE_REPLAY, KTUNE_BENCH_ARGS, BUILD_DIR  passed through to tools/tune.sh (the jobs get this environment)
set -euo pipefail
n="${1:-}"
if [[ ! "$n" =~ ^[1-9][0-9]*$ ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
shift
command -v sbatch >/dev/null || { echo "submit: sbatch is not on PATH (a Slurm client is needed)" >&2; exit 1; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${KTUNE_OUT:-$root/${BUILD_DIR:-build}/ktune-run}"
mkdir -p "$out/slurm"
out="$(cd "$out" && pwd)"
export KTUNE_ROOT="$root" KTUNE_OUT="$out" KTUNE_SLICES="$n"
echo "submit: KTUNE_OUT=$out must be on a folder every node sees (shared filesystem)"

array=$(sbatch --parsable --array="0-$((n - 1))" --chdir="$root" --output="$out/slurm/slice-%a.log" \
          "$@" "$root/tools/slurm/tune.sbatch")
array="${array%%;*}"
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --chdir="$root" \
          --output="$out/slurm/merge.log" "$@" "$root/tools/slurm/merge.sbatch")
merge="${merge%%;*}"
echo "submitted slices: job $array (array 0-$((n - 1)), logs $out/slurm/slice-<k>.log)"
echo "submitted merge:  job $merge (after job $array completes; log $out/slurm/merge.log)"
