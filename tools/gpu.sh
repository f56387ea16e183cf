#!/usr/bin/env bash
# The GPU workflow for contributors without a local GPU: build here, run there, bring results back.
#
#   here:   tools/gpu.sh pack               build for sm_90 and stage binaries + the shared libraries
#                                           the GPU machine lacks into .gpu/ (git-ignored, < 64 MiB);
#                                           KTUNE_PACK_TARGETS="ktune_bench ktune_cli": only what a step needs
#                                           (ktune_timing_overhead, ktune_cluster_exchange, ktune_host_transfer:
#                                           bench/micro/'s)
#   there:  tools/gpu.sh remote <step>      run one step from the staged .gpu/ (needs only the NVIDIA
#                                           driver and the CUDA 13 runtime); writes one archive,
#                                           $OUT/gpu-results.tar.gz (or ./gpu-results.tar.gz), and
#                                           prints a short table last
#   here:   tools/gpu.sh unpack ARCHIVE     unpack results into build/gpu-results/, and for a tune
#                                           step run select, tables and report here (an archive over
#                                           15 MiB travels as ARCHIVE.part0, .part1, ...: name ARCHIVE)
#
# Steps (each fits one 10-minute call on an H100/H200):
#   check     device facts, copy ceiling, the core GPU tests
#   test      all GPU tests (every variant of every kernel), then compute-sanitizer memcheck and
#             racecheck on the named sample (gtest filter SanitizerSample.*), then the PyTorch example
#             (examples/02_pytorch_extension: build.py, then test_ktune_torch.py) where this machine has a
#             PyTorch that sees a CUDA device (`python3 -c 'import torch; assert torch.cuda.is_available()'`;
#             KTUNE_PYTHON: another interpreter, KTUNE_TORCH=0: not at all, KTUNE_TORCH_ARGS: the test's
#             arguments; default --quick: every check, the timing on fewer shapes, so that the step fits one
#             10-minute call; KTUNE_TORCH_ARGS="" for the whole timing, as the README's figures)
#   tune      the halving search: screens, re-timed out-of-line screens, the finalists in interleaved
#             rounds (make tune's run step; KTUNE_SEARCH=exhaustive: sweep, top-K, re-test as before
#             the halving search; KTUNE_PASSES=2: twice, for the run-to-run section; KTUNE_EXHAUSTIVE_ARGS: the
#             exhaustive method on a slice after it, to compare the two in one call)
#   agent     the generator's GPU tests: the whole `ktune agent` loop with scripted LLM answers on an op
#             that is not shipped, candidates compiled there with its nvcc (tests/generator)
#   profile   CUPTI metrics of S and the winners of the results in reports/ (tools/tune.sh profile;
#             KTUNE_PROFILE_ARGS="--op ... --shape ..." profiles those calls instead); unpack attaches
#             the profile to the results files and the reports
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# KTUNE_GPU_STAGE: another staging folder than .gpu/ (two people packing from one working tree); it must
# be git-ignored and carried to the GPU machine, and given the same way there.
stage="${KTUNE_GPU_STAGE:-$root/.gpu}"
build="${KTUNE_BUILD_DIR:-$root/build}"

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }  # the header above

# Libraries every GPU machine has (driver, CUDA runtime, C/C++ runtime); everything else travels.
system_lib='^(libcuda|libcudart|libcupti|libnvidia|libc\.|libm\.|libstdc\+\+|libgcc_s|libdl|libpthread|librt|ld-linux|linux-vdso)'

pack() {
  # KTUNE_BUILD_DIR: an already configured build tree (e.g. one with a subset of ops); else the preset's.
  [ -n "${KTUNE_BUILD_DIR:-}" ] || cmake --preset default >/dev/null
  # CMake target -> the executable it builds.
  local -A binary=([ktune_gpu_tests]=tests/ktune_gpu_tests [ktune_bench]=bench/ktune_bench
                   [ktune_cli]=tools/ktune [ktune_profile_tool]=tools/profile/ktune_profile
                   [ktune_generator_tests]=tests/generator/ktune_generator_tests
                   [ktune_timing_overhead]=bench/ktune_timing_overhead [ktune_cluster_exchange]=bench/ktune_cluster_exchange
                   [ktune_host_transfer]=bench/ktune_host_transfer)
  # KTUNE_PACK_TARGETS: only these (e.g. "ktune_bench ktune_cli" for a tune), when the whole set and the working
  # tree would pass the device call's 64 MiB; the agent's toolchain comes with ktune_generator_tests.
  local targets
  read -r -a targets <<<"${KTUNE_PACK_TARGETS:-ktune_gpu_tests ktune_bench ktune_cli ktune_profile_tool ktune_generator_tests}"
  for t in "${targets[@]}"; do [[ -n "${binary[$t]:-}" ]] || { echo "gpu.sh pack: unknown target $t (${!binary[*]})" >&2; exit 1; }; done
  # The tune's tolerant build: a shard that fails to compile is left out and recorded, and every
  # shard's compile time lands in $build/ktune-build.json for the reports' build cost.
  local target_args=()
  for t in "${targets[@]}"; do target_args+=(--target "$t"); done
  "$root/tools/build-variants.sh" --build-dir "$build" "${target_args[@]}"
  local cache_keep=""
  [ -f "$stage/ktune-bench-cache.jsonl" ] && cache_keep=$(mktemp) && cp "$stage/ktune-bench-cache.jsonl" "$cache_keep"
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
  [ -n "$cache_keep" ] && mv "$cache_keep" "$stage/ktune-bench-cache.jsonl"   # resume a tune across calls
  for t in "${targets[@]}"; do
    local bin="$build/${binary[$t]}"
    [ -x "$bin" ] || { echo "gpu.sh pack: built target $t not found at $bin" >&2; exit 1; }
    cp "$bin" "$stage/bin/"
    ldd "$bin" | awk '/=> \//{print $1" "$3}' | while read -r name path; do
      [[ "$name" =~ $system_lib ]] || cp -L "$path" "$stage/lib/$name"
    done
  done
  [[ " ${targets[*]} " == *" ktune_generator_tests "* ]] && stage_agent
  git -C "$root" rev-parse HEAD > "$stage/commit" 2>/dev/null || echo unknown > "$stage/commit"
  # One compressed payload: the binaries hold every variant's device code and shrink about 3.5x, which keeps
  # the tree that travels to the GPU machine well under its limit. `remote` unpacks it.
  mkdir -p "$stage/agent"
  tar -C "$stage" -czf "$stage/payload.tar.gz" bin lib agent && rm -rf "$stage/bin" "$stage/lib" "$stage/agent"
  local size
  size=$(du -sm "$stage" | cut -f1)
  echo "gpu.sh pack: staged $(tar -tzf "$stage/payload.tar.gz" | grep -E '^(bin|lib|agent)/.+[^/]$' | grep -v '^agent/include' | tr '\n' ' ')in .gpu/ (${size} MiB)"
  if [ "$size" -gt 60 ]; then echo "gpu.sh pack: .gpu/ is over 60 MiB; the device call carries at most 64" >&2; exit 1; fi
}

# What `ktune agent` needs on a machine with nvcc but no Boost or build tree: the prebuilt parts of
# ktune_bench, the Boost.Hana headers, and a toolchain.json whose paths are relative to .gpu/agent/ (the
# working tree that travels with .gpu/ provides include/, bench/ and kernels/).
stage_agent() {
  local manifest="$build/generator/toolchain.json" a="$stage/agent"
  [ -f "$manifest" ] || { echo "gpu.sh pack: $manifest is missing (configure the build first)" >&2; exit 1; }
  mkdir -p "$a/lib" "$a/include/boost"
  cp -r /usr/include/boost/hana /usr/include/boost/hana.hpp "$a/include/boost/"
  python3 - "$manifest" "$a" <<'PY'
import json, os, shutil, sys
src, dest = sys.argv[1], sys.argv[2]
m = json.load(open(src))
link = []
for p in m["link_inputs"]:
    name = os.path.basename(p)
    if name.startswith("libbenchmark"):
        # The candidates link it as ktune_bench does: one copy in the stage's lib/, under the name ldd
        # gives it there (it is already there when ktune_bench is staged too).
        staged = os.path.join(dest, "..", "lib", "libbenchmark.so.1debian")
        if not os.path.exists(staged):
            shutil.copy(os.path.realpath(p), staged)
        link.append("../lib/libbenchmark.so.1debian")
    else:
        shutil.copy(p, os.path.join(dest, "lib", name))
        link.append("lib/" + name)
profile = []
for p in m.get("profile_link_inputs", []):
    shutil.copy(p, os.path.join(dest, "lib", "profile_" + os.path.basename(p)))
    profile.append("lib/profile_" + os.path.basename(p))
m.update({"nvcc": "nvcc", "include_dirs": ["../../include", "include"], "link_inputs": link, "profile_link_inputs": profile,
          "library_path": ["../lib"], "templates_dir": "../../bench", "kernels_dir": "../../kernels",
          "ktune": "../bin/ktune"})
json.dump(m, open(os.path.join(dest, "toolchain.json"), "w"), indent=2)
PY
}

remote() {
  local step=${1:-}
  [ -f "$stage/payload.tar.gz" ] && tar -C "$stage" -xzf "$stage/payload.tar.gz"
  [ -d "$stage/bin" ] || { echo "gpu.sh remote: no .gpu/ staged; run 'tools/gpu.sh pack' where you build" >&2; exit 1; }
  local out="${OUT:-$root}/gpu-results"
  rm -rf "$out" && mkdir -p "$out"
  local plain_library_path=${LD_LIBRARY_PATH-}  # the PyTorch example runs without the staged libraries
  export LD_LIBRARY_PATH="$stage/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/nvidia-smi.csv" 2>&1 || true
  cp "$stage/commit" "$out/commit"
  local rc=0
  case "$step" in
    check)
      "$stage/bin/ktune_gpu_tests" --gtest_filter='ArchGpu*:DeviceInfoGpu*:VerifyGpu*:FillGpu*:TimingGpu*:DeviceCheckGpu*:LaunchGpu*:LastErrorGpu*' \
        --gtest_output="json:$out/check.json" 2>&1 | tee "$out/check.log" || rc=$?
      ;;
    test)
      "$stage/bin/ktune_gpu_tests" --gtest_output="json:$out/gpu-tests.json" > "$out/gpu-tests.log" 2>&1 || rc=$?
      grep -E '^\[  (FAILED|SKIPPED) ' "$out/gpu-tests.log" | head -40 || true
      for tool in memcheck racecheck; do
        if command -v compute-sanitizer >/dev/null; then
          compute-sanitizer --tool "$tool" --error-exitcode 3 "$stage/bin/ktune_gpu_tests" \
            --gtest_filter='SanitizerSample.*' > "$out/sanitizer-$tool.log" 2>&1 || rc=$((rc ? rc : 3))
          tail -n 3 "$out/sanitizer-$tool.log"
        else
          echo "compute-sanitizer not found: $tool skipped" | tee "$out/sanitizer-$tool.log"
        fi
      done
      pytorch_example "$out" "$plain_library_path" || rc=$((rc ? rc : 5))
      summarize_gtest "$out/gpu-tests.json" "$out/pytorch-example.json"
      ;;
    agent)
      # The generator's loop on this GPU with scripted LLM answers (tests/generator), candidates built
      # here with this machine's nvcc from the staged toolchain.
      KTUNE_TOOLCHAIN="$stage/agent/toolchain.json" KTUNE_NVCC="${KTUNE_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" \
        KTUNE_SOURCE_DIR="$root" KTUNE_TEST_PYTHON="$(command -v python3)" no_proxy=127.0.0.1,localhost \
        "$stage/bin/ktune_generator_tests" --gtest_filter="${KTUNE_AGENT_FILTER:-*Gpu*}" \
        --gtest_output="json:$out/agent-tests.json" > "$out/agent-tests.log" 2>&1 || rc=$?
      tail -n 40 "$out/agent-tests.log"
      # The run records and the installed folder; the candidates' binaries stay there.
      [ -d "$root/build/agent-gpu-runs/runs" ] && tar -C "$root/build/agent-gpu-runs" -czf "$out/agent-runs.tar.gz" runs kernels
      ;;
    tune)
      [ -x "$stage/bin/ktune_bench" ] || { echo "gpu.sh remote tune: ktune_bench was not staged" >&2; exit 1; }
      # KTUNE_RUN_TIMEOUT (seconds) stops the run in time to bring back what it measured: the result
      # cache travels back with the archive and the next call resumes from it.
      KTUNE_STAGE="$stage" KTUNE_OUT="$out" timeout "${KTUNE_RUN_TIMEOUT:-0}" "$root/tools/tune.sh" run \
        > "$out/tune.log" 2>&1 || rc=$?
      # The run's summary (phases, their parts, verdicts), then its last lines: in the call's own output,
      # they come back even when the archive does not.
      grep '^ktune_bench: ' "$out/tune.log" | tail -n 12 || true
      tail -n 8 "$out/tune.log"
      [ -f "$out/raw/steps.tsv" ] && { echo "step seconds:"; cat "$out/raw/steps.tsv"; }
      mkdir -p "$out/raw"
      [ -f "$stage/ktune-bench-cache.jsonl" ] && cp "$stage/ktune-bench-cache.jsonl" "$out/raw/"
      ;;
    profile)
      if [[ "${KTUNE_PROFILE_ARGS:-}" == *--op* ]]; then
        # Ad hoc calls, e.g. "--op silu_and_mul --dtype bf16 --shape tokens=8192,d=28672 --variant all"
        read -r -a args <<<"$KTUNE_PROFILE_ARGS"
        "$stage/bin/ktune_profile" "${args[@]}" --json "$out/profile.json" 2>&1 | tee "$out/profile.log" || rc=$?
      else
        # make tune's profile step: the plan from the results files, into raw/profile.json
        KTUNE_STAGE="$stage" KTUNE_OUT="$out" "$root/tools/tune.sh" profile > "$out/profile.log" 2>&1 || rc=$?
        tail -n 40 "$out/profile.log"
      fi
      ;;
    *) usage; exit 2 ;;
  esac
  local archive="${OUT:-$root}/gpu-results.tar.gz"
  tar -C "$(dirname "$out")" -czf "$archive" "$(basename "$out")"
  [ -n "${OUT:-}" ] && rm -rf "$out"
  echo "gpu.sh remote $step: exit $rc, results in $(in_parts "$archive")"
  return "$rc"
}

# The device call brings back files of at most 16 MiB (two passes of a ten-op tune with their caches make
# about 24 MiB): a larger ARCHIVE is replaced by ARCHIVE.part0, .part1, ... of 15 MiB each, which unpack
# joins. Prints what is to be brought back.
in_parts() {
  local archive=$1
  if [ "$(stat -c %s "$archive")" -gt $((15 << 20)) ]; then
    split -b 15M -d -a 1 "$archive" "$archive.part" && rm "$archive"
    echo "$archive.part"*
  else
    echo "$archive"
  fi
}

# ARCHIVE itself, or the join of its parts (in_parts) into a temporary file: the path to read.
joined() {
  local archive=$1
  if [ ! -f "$archive" ] && [ -f "$archive.part0" ]; then
    local whole
    whole=$(mktemp)
    cat "$archive.part"? >"$whole"
    archive=$whole
  fi
  echo "$archive"
}

# The PyTorch example (examples/02_pytorch_extension) on this machine, where a PyTorch sees a CUDA device:
# found by `$KTUNE_PYTHON -c 'import torch; assert torch.cuda.is_available()'` (python3 unless KTUNE_PYTHON
# names another; KTUNE_TORCH=0: never run). Then build.py and test_ktune_torch.py $KTUNE_TORCH_ARGS --json
# (default --quick; KTUNE_TORCH_ARGS="" for the whole timing, as the example's README figures),
# each within KTUNE_TORCH_TIMEOUT seconds (default 420), with LD_LIBRARY_PATH as it was before the staged
# libraries ($2). Into $1: pytorch-example.log (both, whole) and pytorch-example.json (the test's results, or
# {"skipped": why} or {"error": what}: the summary's row). Says which PyTorch it found, or why it skips.
# Returns non-zero only when the example ran and failed.
pytorch_example() {
  local out=$1 library_path=${2-} py=${KTUNE_PYTHON:-python3} dir="$root/examples/02_pytorch_extension"
  local log="$out/pytorch-example.log" json="$out/pytorch-example.json" found rc=0
  local limit=${KTUNE_TORCH_TIMEOUT:-420}
  note() {  # a one-key JSON object, its text with quotes and backslashes made harmless
    local text=${2//\\/\/}
    printf '{"%s": "%s"}\n' "$1" "${text//\"/\'}" >"$json"
  }
  if [ "${KTUNE_TORCH:-1}" = 0 ]; then
    echo "pytorch example: skipped (KTUNE_TORCH=0)" | tee "$log"
    note skipped "KTUNE_TORCH=0"
    return 0
  fi
  if ! command -v "$py" >/dev/null; then
    echo "pytorch example: skipped: no $py on this machine" | tee "$log"
    note skipped "no $py on this machine"
    return 0
  fi
  # How PyTorch is found: it imports, it is built with CUDA, and it sees a device.
  if ! found=$(LD_LIBRARY_PATH=$library_path "$py" -c 'import torch
assert torch.version.cuda, f"PyTorch {torch.__version__} is built without CUDA"
assert torch.cuda.is_available(), f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}): torch.cuda.is_available() is False"
print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}")' 2>&1); then
    found=$(echo "$found" | tail -n 1)
    echo "pytorch example: skipped: no CUDA PyTorch ($py -c 'import torch; assert torch.cuda.is_available()': $found)" |
      tee "$log"
    note skipped "no CUDA PyTorch: $found"
    return 0
  fi
  found=$(echo "$found" | tail -n 1)
  local args=()
  # --quick unless asked otherwise: every check, the timing on fewer shapes, so that the step fits one call.
  read -r -a args <<<"${KTUNE_TORCH_ARGS---quick}"
  echo "pytorch example: $found, found by $py -c 'import torch; assert torch.cuda.is_available()': build.py, then" \
    "test_ktune_torch.py${args[*]:+ ${args[*]}} (log: pytorch-example.log)"
  {
    echo "pytorch example: $found"
    LD_LIBRARY_PATH=$library_path timeout "$limit" "$py" "$dir/build.py" &&
      LD_LIBRARY_PATH=$library_path timeout "$limit" "$py" "$dir/test_ktune_torch.py" "${args[@]}" --json "$json"
  } >"$log" 2>&1 || rc=$?
  if ! grep -q '"checks"' "$json" 2>/dev/null; then  # no results: say why in the summary's row
    if [ "$rc" -eq 0 ]; then
      note skipped "$(grep -m 1 '^SKIPPED' "$log" || echo 'test_ktune_torch.py wrote no results')"
    elif [ "$rc" -eq 124 ]; then
      note error "timed out after ${limit} s (KTUNE_TORCH_TIMEOUT; pytorch-example.log)"
    else
      note error "exit $rc before any result (pytorch-example.log)"
    fi
  fi
  grep -E '^(FAIL |error: |[0-9]+ passed, [0-9]+ failed)' "$log" | tail -n 12 || true
  return "$rc"
}

# A short table of a gtest JSON report: per suite, passed / failed / skipped; then, given the PyTorch
# example's JSON (pytorch_example), its row: checks passed / failed, or skipped and why.
summarize_gtest() {
  python3 - "$1" "${2:-}" <<'PY' || true
import json, os, sys
print(f"{'suite':44} {'pass':>5} {'fail':>5} {'skip':>5}")
try:
    r = json.load(open(sys.argv[1]))
    for s in r["testsuites"]:
        p = f = k = 0
        for t in s["testsuite"]:
            if t.get("result") == "SKIPPED": k += 1
            elif t.get("failures"): f += 1
            else: p += 1
        print(f"{s['name'][:44]:44} {p:5} {f:5} {k:5}")
    print(f"{'total':44} {r['tests'] - r['failures'] - r.get('disabled', 0):5} {r['failures']:5}")
except (OSError, ValueError, KeyError) as e:
    print(f"{'GPU tests: no report (' + type(e).__name__ + ')':44} {0:5} {1:5} {0:5}")
if sys.argv[2] and os.path.exists(sys.argv[2]):
    name = "pytorch example (test_ktune_torch.py)"
    try:
        e = json.load(open(sys.argv[2]))
    except ValueError:
        e = {"error": "unreadable " + sys.argv[2]}
    if "checks" in e:
        print(f"{name:44} {e['checks']['passed']:5} {len(e['checks']['failed']):5} {0:5}")
    elif "skipped" in e:
        print(f"{name:44} {0:5} {0:5} {1:5}  {e['skipped']}")
    else:
        print(f"{name:44} {0:5} {1:5} {0:5}  {e.get('error', 'no result')}")
PY
}

unpack() {
  local archive
  archive=$(joined "${1:?usage: tools/gpu.sh unpack ARCHIVE (also when it came back as ARCHIVE.part0, .part1, ...)}")
  local dest="$build/gpu-results/$(date -u +%Y%m%dT%H%M%SZ)"
  mkdir -p "$dest"
  tar -C "$dest" -xzf "$archive"
  [ "$archive" == "$1" ] || rm -f "$archive"
  echo "gpu.sh unpack: $dest"
  if [ -d "$dest/gpu-results/raw" ]; then
    # The result cache travels back so the next `remote tune` resumes where this one stopped.
    [ -f "$dest/gpu-results/raw/ktune-bench-cache.jsonl" ] && mkdir -p "$stage" &&
      cp "$dest/gpu-results/raw/ktune-bench-cache.jsonl" "$stage/ktune-bench-cache.jsonl"
    if [ -f "$dest/gpu-results/raw/search.json" ] || [ -f "$dest/gpu-results/raw/sweep.json" ] ||
       [ -d "$dest/gpu-results/raw/models" ]; then
      KTUNE_RESULTS="$dest/gpu-results" "$root/tools/tune.sh" finish
    elif [ -f "$dest/gpu-results/raw/profile.json" ]; then
      KTUNE_RESULTS="$dest/gpu-results" "$root/tools/tune.sh" attach
    fi
  fi
}

# Sourced (tests/tools/scripts/gpu_archive_parts.sh), it only defines the functions above.
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0
case "${1:-}" in
  pack) pack ;;
  remote) shift; remote "$@" ;;
  unpack) shift; unpack "$@" ;;
  -h|--help|help|"") usage ;;
  *) usage; exit 2 ;;
esac
