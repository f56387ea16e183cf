#!/usr/bin/env bash
# tools/tune.sh: the steps of `make tune` (DESIGN.md contract 11). Each step also runs alone.
#
#   build    tolerant build of ktune_bench and ktune (tools/build-variants.sh): a variant that does not
#            compile costs only its shard and is reported in <build>/ktune-build.json
#   run      on the GPU, needs only the built binaries and their shared libraries. The halving search
#            (default): one ktune_bench run screens every variant, re-times out-of-line screens and times
#            the finalists in interleaved rounds -> raw/search.json (resumable: rerun after an
#            interruption). KTUNE_SEARCH=exhaustive: the method before the halving search, ktune_bench --exhaustive
#            sweep -> ktune select --topk -> ktune_bench --retest -> raw/sweep.json, raw/retest.json.
#            KTUNE_PASSES=2 runs the search twice (the first into raw/pass1/, fresh cache) for the
#            run-to-run section; KTUNE_EXHAUSTIVE_ARGS="--dtypes bf16" also runs the exhaustive method on
#            that slice into raw/exhaustive/ (same binaries, same call) to compare the two. Wall time
#            of each step in raw/steps.tsv.
#   slice K N  slice K (0-based) of N of the search (ktune_bench --slice K/N: whole (op, element size) units
#            balanced by expected cost) into $KTUNE_OUT/raw/slices/K/search.json, resumable from its own
#            cache there; with KTUNE_REPLAY=<a raw search.json> no GPU: that run's rows of slice K (for
#            tests of the cluster path, tools/slurm/)
#   merge N  the N slices into $KTUNE_OUT/raw/search.json (ktune merge-raw) and raw/gpu-slug
#   finish   on any machine: ktune select (normalised results), the run-to-run section against the
#            previous pass (raw/pass1/ or KTUNE_PREVIOUS=<raw dir>: ktune compare --attach), ktune tables,
#            ktune report (or one of them: select | tables | report); with raw/exhaustive/ it prints
#            the comparison of the two methods into raw/../compare-exhaustive.txt
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
#   KTUNE_TOPK        candidates per shape re-tested by the exhaustive method (default: 5)
#   KTUNE_MODEL       a Hugging Face config.json: run times that model's shapes instead of the catalogue's (ktune
#                     shapes --from-config: every op it calls, at its widths and the catalogue's token counts) into
#                     raw/models/<name>.search.json; finish merges them with the committed catalogue's results
#                     into the tables, and keeps them in reports/<gpu>/raw/models/ for every later select
#   KTUNE_TP          its tensor-parallel degree (default 1)
#   KTUNE_SEARCH      halving (default) or exhaustive
#   KTUNE_PASSES      searches in one run step (default 1; 2 gives the run-to-run section)
#   KTUNE_EXHAUSTIVE_ARGS  ktune_bench flags of an exhaustive run after the search, e.g. "--dtypes bf16"
#   KTUNE_PREVIOUS    raw dir of an earlier run (search.json, or sweep.json [+ retest.json]) that finish
#                     compares this one with (default: raw/pass1/ of this run, when there)
#   KTUNE_GPUS        GPUs of the run step, e.g. 0,1 (default: every visible GPU): one ktune_bench per GPU,
#                     each a slice, merged into one search.json; GPUs of different models are refused
#                     (their tables differ). 0,0 runs two slices on one GPU (a check of split and merge)
#   KTUNE_INCUMBENTS  results folder whose winners every search keeps as finalists (ktune_bench --incumbents;
#                     default: reports/<gpu>/, and for a later pass the previous pass's winners; none: off)
#   KTUNE_BENCH_ARGS  extra ktune_bench flags for the run, e.g. "--ops silu_and_mul --quick"
#   KTUNE_CACHE       result cache (default: $BUILD_DIR/ktune-bench-cache.jsonl, or in $KTUNE_STAGE)
#   KTUNE_TRACE       FILE: where the GPU sat idle, by phase and part (CUPTI; bench/gpu_trace.hpp); every
#                     ktune_bench of the run writes it, so trace one slice and one pass
#   KTUNE_MAX_RESUMES times the sweep is restarted after a kernel broke the CUDA context (default: 20)
#   KTUNE_PROFILE     1: `all` also profiles the winners (CUPTI; 72 profiles took 65 s on an H200)
#   KTUNE_PROFILE_PLAN_ARGS  extra ktune profile-plan flags, e.g. "--ops silu_and_mul --dtypes bf16"
#   KTUNE_GPU_SLUG           the profile step's GPU (reports/<slug>/) where no ktune_bench is staged to ask
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

# A kernel that breaks the CUDA context ends ktune_bench with exit 3 after caching its failure; the next
# start resumes after it. bench_resumable OUT_JSON LOG ARGS...
bench_resumable() {
  local json="$1" log="$2" rc attempt=0
  shift 2
  while :; do
    rc=0
    "$bench" "${bench_args[@]}" "$@" --benchmark_out="$json" --benchmark_out_format=json >"$log" || rc=$?
    ((rc == 3 && attempt < max_resumes)) || break
    attempt=$((attempt + 1))
    say "ktune_bench stopped at a kernel that broke the CUDA context; resuming ($attempt/$max_resumes)"
  done
  return "$rc"
}

# step NAME SECONDS: one line of raw/steps.tsv (the wall time of each GPU step, for docs/gpu-log.md).
record_step() { printf '%s\t%s\n' "$1" "$2" >>"$out/raw/steps.tsv"; }

# The GPUs of the run step, one per line: KTUNE_GPUS, else every visible one (none: the default device).
gpu_list() {
  if [[ -n "${KTUNE_GPUS:-}" ]]; then tr ',' '\n' <<<"$KTUNE_GPUS"
  elif command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null || true
  fi
}

# Refuses GPUs of different models: each model has tables of its own (tune them in separate runs).
same_model() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  local models
  models=$(nvidia-smi --query-gpu=index,name --format=csv,noheader -i "$(tr ' ' ',' <<<"$*")" 2>/dev/null | sort -u -t, -k2) || return 0
  if (($(cut -d, -f2 <<<"$models" | sort -u | wc -l) > 1)); then
    say "these GPUs are of different models, and each model gets tables of its own:"
    say "$models"
    say "tune one model at a time: KTUNE_GPUS=<indices of one model> make tune"
    exit 1
  fi
}

# incumbents DIR: the searches that follow keep DIR's winners as finalists (none, or no such folder: off).
incumbent_args=()
incumbents() {
  incumbent_args=()
  [[ "$1" != none && -d "$1" ]] && incumbent_args=(--incumbents "$1")
  return 0
}

# One slice of the search: SLICE_DIR CACHE K N -> SLICE_DIR/search.json (ktune_bench --slice K/N).
run_slice() {
  local dir="$1" cache_file="$2" k="$3" n="$4"
  mkdir -p "$dir"
  bench_resumable "$dir/search.json" "$dir/search.txt" --cache "$cache_file" --slice "$k/$n" "${incumbent_args[@]}"
}

# The slices in DIR/slices/{0..N-1}/search.json -> DIR/search.json.
merge_slices() {
  local dir="$1" n="$2" k parts=()
  for ((k = 0; k < n; ++k)); do parts+=("$dir/slices/$k/search.json"); done
  "$ktune" merge-raw --out "$dir/search.json" "${parts[@]}"
}

# The halving search into DIR/search.json with the result cache CACHE: on one GPU, or one slice per GPU
# at once (caches CACHE.slice<k>), merged.
run_search() {
  local dir="$1" cache_file="$2" t0 gpus k pids=() rc=0
  mkdir -p "$dir"
  t0=$(date +%s)
  mapfile -t gpus < <(gpu_list)
  if ((${#gpus[@]} <= 1)); then
    say "search (screens, then the finalists in rounds) -> $dir/search.json (cache: $cache_file)"
    bench_resumable "$dir/search.json" "$dir/search.txt" --cache "$cache_file" "${incumbent_args[@]}" ||
      { say "ktune_bench search failed (exit $?)"; exit 1; }
  else
    same_model "${gpus[@]}"
    say "search on GPUs ${gpus[*]}: ${#gpus[@]} slices at once -> $dir/slices/*/, merged into $dir/search.json"
    # The host's cores shared between the slices' preparation workers (bench/prefetch.hpp).
    local prep=$(( ($(nproc) - 2) / ${#gpus[@]} ))
    for k in "${!gpus[@]}"; do
      KTUNE_PREP_THREADS="${KTUNE_PREP_THREADS:-$((prep > 0 ? prep : 0))}" CUDA_VISIBLE_DEVICES="${gpus[$k]}" run_slice "$dir/slices/$k" "$cache_file.slice$k" "$k" "${#gpus[@]}" &
      pids+=($!)
    done
    for k in "${!pids[@]}"; do
      wait "${pids[$k]}" || { rc=$?; say "slice $k (GPU ${gpus[$k]}) failed (exit $rc): $dir/slices/$k/search.txt"; }
    done
    ((rc == 0)) || exit 1
    merge_slices "$dir" "${#gpus[@]}"
    for k in "${!gpus[@]}"; do
      record_step "slice $k of ${#gpus[@]} (GPU ${gpus[$k]}) $dir" "$(sed -n 's/.*"measure_wall_s": "\([0-9.]*\)".*/\1/p' "$dir/slices/$k/search.json" | head -1)"
    done
  fi
  record_step "search $dir" "$(($(date +%s) - t0))"
}

# The exhaustive method into DIR/{sweep,retest}.json; extra ktune_bench flags
# after the cache.
run_exhaustive() {
  local dir="$1" cache_file="$2" t0
  shift 2
  mkdir -p "$dir"
  t0=$(date +%s)
  say "exhaustive sweep $* -> $dir/sweep.json (cache: $cache_file)"
  bench_resumable "$dir/sweep.json" "$dir/sweep.txt" --exhaustive --cache "$cache_file" "$@" ||
    { say "ktune_bench sweep failed (exit $?)"; exit 1; }
  record_step "exhaustive sweep $dir" "$(($(date +%s) - t0))"
  t0=$(date +%s)
  say "selecting the top $topk per shape for the re-test"
  "$ktune" select --raw "$dir/sweep.json" --topk "$topk" --candidates "$dir/candidates.json"
  say "re-test, interleaved"
  "$bench" "${bench_args[@]}" "$@" --retest "$dir/candidates.json" --benchmark_out="$dir/retest.json" \
    --benchmark_out_format=json >"$dir/retest.txt"
  record_step "exhaustive retest $dir" "$(($(date +%s) - t0))"
}

# A model's name in file names: its config's folder (or file) name, and the degree.
model_name() {
  local config="$1" base
  base=$(basename "$(dirname "$(realpath "$config")")")
  [[ "$(basename "$config")" != config.json ]] && base=$(basename "${config%.json}")
  echo "$(tr -c 'A-Za-z0-9._\n-' '_' <<<"$base")-tp${2}"
}

# KTUNE_MODEL's shapes: one search of the ops it calls, from specs whose dims are its shapes.
run_model() {
  local raw="$1" config="$KTUNE_MODEL" tp="${KTUNE_TP:-1}" name specs ops t0
  [[ -f "$config" ]] || { say "KTUNE_MODEL=$config: no such file"; exit 1; }
  name=$(model_name "$config" "$tp")
  specs="$out/model-specs/$name"
  rm -rf "$specs"
  "$ktune" shapes --from-config "$config" --tp "$tp"
  "$ktune" shapes --from-config "$config" --tp "$tp" --spec-dir "$specs" >/dev/null
  ops=$(cd "$specs" && ls | paste -sd, -)
  mkdir -p "$raw/models"
  say "search of $name's shapes ($ops) -> $raw/models/$name.search.json"
  t0=$(date +%s)
  bench_resumable "$raw/models/$name.search.json" "$raw/models/$name.search.txt" --kernels "$specs" --ops "$ops" \
    --cache "$cache" "${incumbent_args[@]}" || { say "ktune_bench search failed (exit $?)"; exit 1; }
  record_step "model $name" "$(($(date +%s) - t0))"
}

step_run() {
  need "$bench"
  need "$ktune"
  local raw="$out/raw"
  mkdir -p "$raw"
  local slug
  slug="$("$bench" --print-gpu-slug)"
  echo "$slug" >"$raw/gpu-slug"
  if [[ -n "${KTUNE_MODEL:-}" ]]; then
    incumbents "${KTUNE_INCUMBENTS:-reports/$slug}"
    run_model "$raw"
    cp "$cache" "$raw/ktune-bench-cache.jsonl" 2>/dev/null || true
    return 0
  fi
  say "run on $slug (${KTUNE_SEARCH:-halving})"
  if [[ "${KTUNE_SEARCH:-halving}" == exhaustive ]]; then
    run_exhaustive "$raw" "$cache"
  else
    local passes="${KTUNE_PASSES:-1}" p
    # The winners a search defends (bench/incumbents.hpp): the committed ones, then each pass's own.
    incumbents "${KTUNE_INCUMBENTS:-reports/$slug}"
    # Earlier passes measure afresh into raw/pass<k>/ with caches of their own; the last one is the result.
    for ((p = 1; p < passes; ++p)); do
      rm -f "$raw/pass$p/cache.jsonl"
      run_search "$raw/pass$p" "$raw/pass$p/cache.jsonl"
      if [[ -z "${KTUNE_INCUMBENTS:-}" ]]; then
        "$ktune" select --raw "$raw/pass$p/search.json" --results "$raw/pass$p/results" --build-json none >/dev/null
        incumbents "$raw/pass$p/results/$slug"
      fi
    done
    run_search "$raw" "$cache"
  fi
  cp "$cache" "$raw/ktune-bench-cache.jsonl" 2>/dev/null || true
  if [[ -n "${KTUNE_EXHAUSTIVE_ARGS:-}" ]]; then
    local extra
    read -r -a extra <<<"$KTUNE_EXHAUSTIVE_ARGS"
    rm -f "$raw/exhaustive/cache.jsonl"
    run_exhaustive "$raw/exhaustive" "$raw/exhaustive/cache.jsonl" "${extra[@]}"
  fi
  say "raw results in $raw"
}

# The raw results of a run DIR: search.json, or sweep.json [+ retest.json].
raw_files() {
  local dir="$1"
  files=()
  if [[ -f "$dir/search.json" ]]; then files=("$dir/search.json")
  elif [[ -f "$dir/sweep.json" ]]; then
    files=("$dir/sweep.json")
    [[ -f "$dir/retest.json" ]] && files+=("$dir/retest.json")
  fi
  ((${#files[@]} > 0))
}

# The raw results of a run: $results/raw/{search,sweep,retest}.json (a model's run has none: the committed
# catalogue's, reports/<gpu>/raw/), then every model's search (the committed ones in reports/<gpu>/raw/models/,
# this run's in $results/raw/models/, which replace a committed one of the same name), and the GPU's slug.
raw_inputs() {
  local raw="$results/raw" kept="$build/ktune-kept-raw" f name
  slug="$(cat "$raw/gpu-slug" 2>/dev/null || true)"
  [[ -n "$slug" ]] || { say "$raw/gpu-slug is missing"; exit 1; }
  rm -rf "$kept" && mkdir -p "$kept/models"
  if ! raw_files "$raw"; then
    [[ -d "$raw/models" ]] || { say "no search or sweep results in $raw (run 'tools/tune.sh run' first)"; exit 1; }
    for f in "reports/$slug/raw/"{search,sweep,retest}.json.gz; do [[ -f "$f" ]] && zcat "$f" >"$kept/$(basename "${f%.gz}")"; done
    raw_files "$kept" || { say "a model's run merges into the committed results of $slug, and reports/$slug/raw/ has none"; exit 1; }
  fi
  inputs=("${files[@]}")
  for f in "reports/$slug/raw/models/"*.json.gz; do
    [[ -f "$f" ]] || continue
    name=$(basename "${f%.gz}")
    [[ -f "$raw/models/$name" ]] || { zcat "$f" >"$kept/models/$name"; inputs+=("$kept/models/$name"); }
  done
  for f in "$raw/models/"*.search.json; do [[ -f "$f" ]] && inputs+=("$f"); done
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
  # Read them with zcat; `ktune select --raw` takes the decompressed files. A search replaces a sweep and
  # its re-test, and the other way round.
  mkdir -p "reports/$slug/raw/models"
  rm -f "reports/$slug/raw/search.json.gz" "reports/$slug/raw/sweep.json.gz" "reports/$slug/raw/retest.json.gz"
  for f in "${inputs[@]}"; do
    local dest="reports/$slug/raw/$(basename "$f").gz"
    [[ "$(basename "$(dirname "$f")")" == models ]] && dest="reports/$slug/raw/models/$(basename "$f").gz"
    gzip -9nc "$f" >"$dest.tmp" && mv "$dest.tmp" "$dest"
  done
  rmdir "reports/$slug/raw/models" 2>/dev/null || true
  for f in reports/"$slug"/*.t4.json; do [[ -f "$f" ]] && gzip -9nf "$f"; done
  return 0
}

# The run-to-run section: the previous run (KTUNE_PREVIOUS, else this run's raw/pass1/) selected on its
# own and compared with the results just selected (ktune compare --attach). Its raw files are kept in
# reports/<gpu>/raw/previous/ so the section can be attached again from the repository.
step_stability() {
  need "$ktune"
  local prev="${KTUNE_PREVIOUS:-$results/raw/pass1}" slug
  slug="$(cat "$results/raw/gpu-slug" 2>/dev/null || true)"
  [[ -n "$slug" ]] || return 0
  if ! raw_files "$prev"; then
    # Nothing new to compare with: keep the committed previous run's comparison, if there is one.
    [[ -d "reports/$slug/raw/previous" ]] || return 0
    prev="$build/ktune-previous-raw"
    rm -rf "$prev" && mkdir -p "$prev"
    for f in "reports/$slug/raw/previous/"*.json.gz; do zcat "$f" >"$prev/$(basename "${f%.gz}")"; done
    raw_files "$prev" || return 0
  else
    mkdir -p "reports/$slug/raw/previous"
    rm -f "reports/$slug/raw/previous/"*.json.gz
    for f in "${files[@]}"; do gzip -9nc "$f" >"reports/$slug/raw/previous/$(basename "$f").gz"; done
  fi
  local dir="$build/ktune-previous-results"
  rm -rf "$dir"
  "$ktune" select --raw "${files[@]}" --results "$dir" --build-json none >/dev/null
  say "run-to-run: against $prev"
  "$ktune" compare "$dir" reports --attach
}

# With raw/exhaustive/: the two methods' winners compared (printed and kept beside the raw results).
step_compare_methods() {
  need "$ktune"
  local dir="$results/raw/exhaustive"
  raw_files "$dir" || return 0
  local sel="$build/ktune-exhaustive-results"
  rm -rf "$sel"
  "$ktune" select --raw "${files[@]}" --results "$sel" --build-json none >/dev/null
  say "exhaustive (before) vs halving (now), same binaries, same call:"
  "$ktune" compare "$sel" reports | tee "$results/compare-exhaustive.txt"
}

# Profiles S and the winners of the results files in reports/ (written by select) on this GPU.
step_profile() {
  need "$ktune"
  need "$profiler"
  local raw="$out/raw"
  mkdir -p "$raw"
  local slug
  if [[ -n "${KTUNE_GPU_SLUG:-}" ]]; then slug="$KTUNE_GPU_SLUG"
  elif [[ -x "$bench" ]]; then slug="$("$bench" --print-gpu-slug)"
  else slug="$(cat "$raw/gpu-slug" 2>/dev/null || true)"; fi
  [[ -n "$slug" ]] || { say "cannot tell the GPU's slug (no KTUNE_GPU_SLUG, no ktune_bench, no $raw/gpu-slug)"; exit 1; }
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

# Slice K of N (a Slurm array task, a Kubernetes indexed pod, or by hand), or its rows of KTUNE_REPLAY.
step_slice() {
  local k="${1:?tools/tune.sh slice K N}" n="${2:?tools/tune.sh slice K N}" dir
  dir="$out/raw/slices/$k"
  mkdir -p "$dir"
  need "$bench"
  need "$ktune"
  if [[ -n "${KTUNE_REPLAY:-}" ]]; then
    say "slice $k of $n: the rows of $KTUNE_REPLAY (no GPU)"
    "$bench" "${bench_args[@]}" --slice "$k/$n" --list >"$dir/names.txt"
    "$ktune" merge-raw --names "$dir/names.txt" --out "$dir/search.json" "$KTUNE_REPLAY"
  else
    say "slice $k of $n -> $dir/search.json"
    incumbents "${KTUNE_INCUMBENTS:-reports/$("$bench" --print-gpu-slug)}"
    run_slice "$dir" "$dir/cache.jsonl" "$k" "$n" || { say "ktune_bench slice $k of $n failed (exit $?)"; exit 1; }
  fi
}

# The N slices of $KTUNE_OUT/raw/slices/ into raw/search.json, and the GPU's slug for finish.
step_merge() {
  local n="${1:?tools/tune.sh merge N}"
  need "$ktune"
  merge_slices "$out/raw" "$n"
  sed -n 's/.*"gpu_slug": "\([^"]*\)".*/\1/p' "$out/raw/search.json" | head -1 >"$out/raw/gpu-slug"
  [[ -s "$out/raw/gpu-slug" ]] || { say "$out/raw/search.json names no gpu_slug"; exit 1; }
  say "merged $n slices into $out/raw/search.json ($(cat "$out/raw/gpu-slug"))"
}

step_tables() { need "$ktune"; "$ktune" tables; }
step_report() { need "$ktune"; "$ktune" report; }
step_finish() { step_select; attach_kept_profile; step_stability; step_compare_methods; step_tables; step_report; }

case "${1:-all}" in
  build) step_build ;;
  run) step_run ;;
  select) step_select; attach_kept_profile; step_stability ;;
  tables) step_tables ;;
  report) step_report ;;
  finish) step_finish ;;
  slice) step_slice "${2:-}" "${3:-}" ;;
  merge) step_merge "${2:-}" ;;
  profile) step_profile ;;
  attach) step_attach ;;
  all) step_build; step_run; step_finish; [[ "${KTUNE_PROFILE:-0}" == 1 ]] && step_profile; true ;;
  -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) say "unknown step '$1' (build, run, slice, merge, select, tables, report, finish, profile, attach, all)"; exit 2 ;;
esac
