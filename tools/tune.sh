#!/usr/bin/env bash
# tools/tune.sh: the steps of `make tune` (DESIGN.md contract 11). Each step also runs alone.
#
#   build    tolerant build of ktune_bench and ktune (tools/build-variants.sh): a variant that does not
#            compile costs only its shard and is reported in <build>/ktune-build.json
#   run      on the GPU: ktune_bench sweep (resumable: rerun after an interruption) -> ktune select --topk
#            writes the candidates -> ktune_bench --retest of the candidates, interleaved; needs only the
#            built binaries and their shared libraries
#   finish   on any machine: ktune select (normalised results), ktune tables, ktune report
#            (or one of them: select | tables | report)
#   all      build, run, finish (the default; what `make tune` runs)
#
# Environment:
#   BUILD_DIR         build tree (default: build)
#   KTUNE_STAGE       run from a staged copy (tools/gpu.sh): binaries in $KTUNE_STAGE/bin, libraries in
#                     $KTUNE_STAGE/lib
#   KTUNE_OUT         where run writes raw/ (default: $BUILD_DIR/ktune-run)
#   KTUNE_RESULTS     where finish reads raw/ from (default: KTUNE_OUT's default)
#   KTUNE_TOPK        candidates per shape re-tested (default: 5)
#   KTUNE_BENCH_ARGS  extra ktune_bench flags for the run, e.g. "--ops silu_and_mul --quick"
#   KTUNE_CACHE       result cache (default: $BUILD_DIR/ktune-bench-cache.jsonl, or in $KTUNE_STAGE)
#   KTUNE_MAX_RESUMES times the sweep is restarted after a kernel broke the CUDA context (default: 20)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BUILD_DIR:-build}"
stage="${KTUNE_STAGE:-}"
if [[ -n "$stage" ]]; then
  bench="$stage/bin/ktune_bench"
  ktune="$stage/bin/ktune"
  export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cache="${KTUNE_CACHE:-$stage/ktune-bench-cache.jsonl}"
else
  bench="$build/bench/ktune_bench"
  ktune="$build/tools/ktune"
  cache="${KTUNE_CACHE:-$build/ktune-bench-cache.jsonl}"
  # Binaries built here and carried elsewhere find Debian's libbenchmark/libfmt in $build/lib.
  [[ -d "$build/lib" ]] && export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
out="${KTUNE_OUT:-$build/ktune-run}"
results="${KTUNE_RESULTS:-$build/ktune-run}"
topk="${KTUNE_TOPK:-5}"
max_resumes="${KTUNE_MAX_RESUMES:-20}"
read -r -a bench_args <<<"${KTUNE_BENCH_ARGS:-}"

say() { echo "tune: $*" >&2; }
need() { [[ -x "$1" ]] || { say "$1 is missing: run 'tools/tune.sh build' first (or make build)"; exit 1; }; }

step_build() {
  "$root/tools/build-variants.sh" --build-dir "$build"
}

step_run() {
  need "$bench"
  need "$ktune"
  local raw="$out/raw"
  mkdir -p "$raw"
  local slug
  slug="$("$bench" --print-gpu-slug)"
  echo "$slug" >"$raw/gpu-slug"
  say "run on $slug: sweep (cache: $cache)"

  # A kernel that breaks the CUDA context ends the process with exit 3 after caching its failure;
  # the next start resumes after it.
  local rc attempt=0
  while :; do
    rc=0
    "$bench" "${bench_args[@]}" --cache "$cache" --benchmark_out="$raw/sweep.json" --benchmark_out_format=json \
      >"$raw/sweep.txt" || rc=$?
    ((rc == 3 && attempt < max_resumes)) || break
    attempt=$((attempt + 1))
    say "the sweep stopped at a kernel that broke the CUDA context; resuming ($attempt/$max_resumes)"
  done
  ((rc == 0)) || { say "ktune_bench sweep failed (exit $rc)"; exit 1; }
  cp "$cache" "$raw/ktune-bench-cache.jsonl" 2>/dev/null || true

  say "selecting the top $topk per shape for the re-test"
  "$ktune" select --raw "$raw/sweep.json" --topk "$topk" --candidates "$raw/candidates.json"
  say "re-test, interleaved"
  "$bench" "${bench_args[@]}" --retest "$raw/candidates.json" --benchmark_out="$raw/retest.json" \
    --benchmark_out_format=json >"$raw/retest.txt"
  say "raw results in $raw"
}

# The raw results of a run: $results/raw/{sweep,retest}.json and the GPU's slug.
raw_inputs() {
  local raw="$results/raw"
  [[ -f "$raw/sweep.json" ]] || { say "no sweep results in $raw (run 'tools/tune.sh run' first)"; exit 1; }
  slug="$(cat "$raw/gpu-slug" 2>/dev/null || true)"
  [[ -n "$slug" ]] || { say "$raw/gpu-slug is missing"; exit 1; }
  inputs=("$raw/sweep.json")
  [[ -f "$raw/retest.json" ]] && inputs+=("$raw/retest.json")
  return 0
}

step_select() {
  need "$ktune"
  raw_inputs
  # The raw JSON is a result people keep (contract 6): reports/<gpu>/raw/.
  mkdir -p "reports/$slug/raw"
  local kept=()
  for f in "${inputs[@]}"; do
    cp "$f" "reports/$slug/raw/$(basename "$f")"
    kept+=("reports/$slug/raw/$(basename "$f")")
  done
  local build_json=()
  [[ -f "$build/ktune-build.json" ]] && build_json=(--build-json "$build/ktune-build.json")
  "$ktune" select --raw "${kept[@]}" "${build_json[@]}"
}

step_tables() { need "$ktune"; "$ktune" tables; }
step_report() { need "$ktune"; "$ktune" report; }
step_finish() { step_select; step_tables; step_report; }

case "${1:-all}" in
  build) step_build ;;
  run) step_run ;;
  select) step_select ;;
  tables) step_tables ;;
  report) step_report ;;
  finish) step_finish ;;
  all) step_build; step_run; step_finish ;;
  -h|--help|help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) say "unknown step '$1' (build, run, select, tables, report, finish, all)"; exit 2 ;;
esac
