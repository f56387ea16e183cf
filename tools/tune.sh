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
#   profile  on the GPU, after select: ktune profile-plan (S and the winner of each op and dtype at the
#            largest shape, one of 64-256 MB, T = 1 and T = 16 of the widest row) -> ktune_profile --plan
#            -> $KTUNE_OUT/raw/profile.json; outside a staged copy also copied to
#            reports/<gpu>/raw/profile.json and attached (below)
#   attach   on any machine: $KTUNE_RESULTS/raw/profile.json (when there) -> reports/<gpu>/raw/profile.json,
#            ktune profile-attach (the "profile" section of the results files), ktune report
#   all      build, run, finish, and profile when KTUNE_PROFILE=1 (the default; what `make tune` runs)
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
#   KTUNE_PROFILE     1: `all` also profiles the winners (CUPTI; 72 profiles took 65 s on an H200)
#   KTUNE_PROFILE_PLAN_ARGS  extra ktune profile-plan flags, e.g. "--ops silu_and_mul --dtypes bf16"
#   KTUNE_PROFILE_ARGS       extra ktune_profile flags, e.g. "--no-stalls" (fewer replay passes)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BUILD_DIR:-build}"
stage="${KTUNE_STAGE:-}"
if [[ -n "$stage" ]]; then
  bench="$stage/bin/ktune_bench"
  profiler="$stage/bin/ktune_profile"
  ktune="$stage/bin/ktune"
  export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cache="${KTUNE_CACHE:-$stage/ktune-bench-cache.jsonl}"
else
  bench="$build/bench/ktune_bench"
  profiler="$build/tools/profile/ktune_profile"
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
  local targets=()
  # KTUNE_PROFILE=1: the profiler too; it links the same variant shards the benchmark does.
  [[ "${KTUNE_PROFILE:-0}" == 1 ]] && targets=(--target ktune_bench --target ktune_cli --target ktune_profile_tool)
  "$root/tools/build-variants.sh" --build-dir "$build" "${targets[@]}"
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
  local build_json=()
  [[ -f "$build/ktune-build.json" ]] && build_json=(--build-json "$build/ktune-build.json")
  "$ktune" select --raw "${inputs[@]}" "${build_json[@]}"
  # The raw JSON is a result people keep (contract 6): reports/<gpu>/raw/. It and the T4 export are
  # stored gzip-compressed (-n: no name or time stamp, so the same input gives the same bytes); they are
  # ~90% smaller that way, which keeps the repository and every copy of it sent to a GPU machine small.
  # Read them with zcat; `ktune select --raw` takes the decompressed files.
  mkdir -p "reports/$slug/raw"
  for f in "${inputs[@]}"; do gzip -9nc "$f" >"reports/$slug/raw/$(basename "$f").gz"; done
  for f in reports/"$slug"/*.t4.json; do [[ -f "$f" ]] && gzip -9nf "$f"; done
  return 0
}

# Profiles S and the winners of the results files in reports/ (written by select) on this GPU.
step_profile() {
  need "$ktune"
  need "$profiler"
  local raw="$out/raw"
  mkdir -p "$raw"
  local slug
  if [[ -x "$bench" ]]; then slug="$("$bench" --print-gpu-slug)"; else slug="$(cat "$raw/gpu-slug" 2>/dev/null || true)"; fi
  [[ -n "$slug" ]] || { say "cannot tell the GPU's slug (no ktune_bench, no $raw/gpu-slug)"; exit 1; }
  echo "$slug" >"$raw/gpu-slug"
  local plan_args profile_args
  read -r -a plan_args <<<"${KTUNE_PROFILE_PLAN_ARGS:-}"
  read -r -a profile_args <<<"${KTUNE_PROFILE_ARGS:-}"
  "$ktune" profile-plan --gpu "$slug" --out "$raw/profile-plan.json" "${plan_args[@]}"
  say "profile on $slug: S and the winners (CUPTI)"
  "$profiler" --plan "$raw/profile-plan.json" --json "$raw/profile.json" "${profile_args[@]}" >"$raw/profile.txt"
  say "profile in $raw/profile.json"
  [[ -n "$stage" ]] && return 0  # the results travel back; `tools/gpu.sh unpack` attaches them
  results="$out"
  step_attach
}

# The profile of a run into reports/<gpu>/raw/profile.json, the results files and the reports.
step_attach() {
  need "$ktune"
  local raw="$results/raw" slug
  slug="$(cat "$raw/gpu-slug" 2>/dev/null || true)"
  [[ -n "$slug" ]] || { say "$raw/gpu-slug is missing"; exit 1; }
  if [[ -f "$raw/profile.json" ]]; then
    mkdir -p "reports/$slug/raw"
    cp "$raw/profile.json" "reports/$slug/raw/profile.json"
  fi
  [[ -f "reports/$slug/raw/profile.json" ]] || { say "no profile in $raw or reports/$slug/raw (run 'tools/tune.sh profile')"; exit 1; }
  "$ktune" profile-attach --profile "reports/$slug/raw/profile.json" --gpu "$slug"
  # The tables' banners name their results files by content hash, so they follow the new section too.
  "$ktune" tables
  "$ktune" report
}

# select rewrites the results files from the raw benchmark files; the profile kept beside them goes back
# in (profile-attach leaves out, with a warning, profiles of variants that are no longer winners).
attach_kept_profile() {
  local slug
  slug="$(cat "$results/raw/gpu-slug" 2>/dev/null || true)"
  [[ -n "$slug" && -f "reports/$slug/raw/profile.json" ]] || return 0
  "$ktune" profile-attach --profile "reports/$slug/raw/profile.json" --gpu "$slug" ||
    say "warning: reports/$slug/raw/profile.json matches none of the new winners: re-run 'tools/tune.sh profile'"
}

step_tables() { need "$ktune"; "$ktune" tables; }
step_report() { need "$ktune"; "$ktune" report; }
step_finish() { step_select; attach_kept_profile; step_tables; step_report; }

case "${1:-all}" in
  build) step_build ;;
  run) step_run ;;
  select) step_select; attach_kept_profile ;;
  tables) step_tables ;;
  report) step_report ;;
  finish) step_finish ;;
  profile) step_profile ;;
  attach) step_attach ;;
  all) step_build; step_run; step_finish; [[ "${KTUNE_PROFILE:-0}" == 1 ]] && step_profile; true ;;
  -h|--help|help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) say "unknown step '$1' (build, run, select, tables, report, finish, profile, attach, all)"; exit 2 ;;
esac
