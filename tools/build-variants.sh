#!/usr/bin/env bash
# tools/build-variants.sh: the build step of `make tune`, tolerant of kernel variants that fail to compile.
#
# Builds the tune's targets with `ninja -k 0` (every independent job runs even when some fail). A failed
# variant shard (target ktune_variants_<op>_sm<arch>_<k>) is compiled once more on its own, so a
# failure that came from memory pressure of the parallel build is not mistaken for a compile error;
# shards that fail again are left out (-DKTUNE_SKIP_SHARDS=<op>.sm<arch>.<k>), an op whose original
# kernel fails is left out whole (KTUNE_VARIANT_OPS), and the rest is built. Every failure is recorded
# with the compiler's message, and every shard with its compile time (from .ninja_log), in
# <build>/ktune-build.json. Exit 0 when the targets were built (with or without left-out shards),
# 1 when something other than a variant unit failed, 2 on bad usage.
#
# The script owns KTUNE_SKIP_SHARDS: each run starts with none left out, so a fixed shard comes back.
set -uo pipefail

usage() {
  cat <<'EOF'
Usage: tools/build-variants.sh [--build-dir DIR] [--source-dir DIR] [--jobs N] [--target T]...
                               [-- CMAKE_CONFIGURE_ARGS...]
  --build-dir DIR   build tree (default: $BUILD_DIR or build); configured first when it has no build.ninja
  --source-dir DIR  source tree for that first configure (default: the repository of this script)
  --jobs N          parallel compile jobs (default: $JOBS or nproc)
  --target T        target to build; repeatable (default: ktune_bench and, when defined, ktune)
  -- ARGS           extra arguments for the first configure (e.g. -DKTUNE_SHARDS_PER_OP=16)
Writes DIR/ktune-build.json and DIR/ktune-build.log.
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="${BUILD_DIR:-build}"
source_dir="$(dirname "$here")"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
targets=()
configure_args=()
while (($#)); do
  case "$1" in
    --build-dir) build_dir="${2:?--build-dir needs a value}"; shift 2 ;;
    --source-dir) source_dir="${2:?--source-dir needs a value}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a value}"; shift 2 ;;
    --target) targets+=("${2:?--target needs a value}"); shift 2 ;;
    --) shift; configure_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-variants: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "build-variants: --jobs needs a positive integer" >&2; exit 2; }
command -v ninja >/dev/null || { echo "build-variants: ninja is not installed (make deps installs it)" >&2; exit 2; }
cmake_bin="${CMAKE:-cmake}"

log="$build_dir/ktune-build.log"
report="$build_dir/ktune-build.json"
now() { date +%s.%N; }
t_start="$(now)"

cache_value() {  # cache_value NAME: a variable of the build tree's CMakeCache.txt ('' when unset)
  sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" 2>/dev/null | head -n 1
}

# ---- configure ------------------------------------------------------------------------------------
if [[ ! -f "$build_dir/build.ninja" ]]; then
  echo "build-variants: configuring $build_dir"
  "$cmake_bin" -S "$source_dir" -B "$build_dir" -G Ninja "${configure_args[@]}" || exit 1
fi
if [[ "$(cache_value CMAKE_GENERATOR)" != "Ninja" ]]; then
  echo "build-variants: $build_dir is not a Ninja build tree" >&2
  exit 2
fi
# Undo what an earlier run left out: every shard and op is tried again.
reset_args=(-DKTUNE_SKIP_SHARDS=)
if grep -q '^KTUNE_BUILD_REQUESTED_OPS:' "$build_dir/CMakeCache.txt"; then
  reset_args+=("-DKTUNE_VARIANT_OPS=$(cache_value KTUNE_BUILD_REQUESTED_OPS)" -UKTUNE_BUILD_REQUESTED_OPS)
fi
"$cmake_bin" "${reset_args[@]}" "$build_dir" >/dev/null || exit 1
requested_ops="$(cache_value KTUNE_VARIANT_OPS)"
all_ops="$(cache_value KTUNE_OPS)"

if ((${#targets[@]} == 0)); then
  targets=(ktune_bench)
  ninja -C "$build_dir" -t targets all 2>/dev/null | grep -q '^ktune:' && targets+=(ktune)
fi

# ---- build, leaving out what fails ------------------------------------------------------------------
: >"$log"
skip=()           # <op>.sm<arch>.<k>
excluded_ops=()   # ops whose original kernel does not compile
failures=()       # TSV: target \t kind \t seconds \t message file
flaky=()          # targets that failed in the parallel build and compiled alone
other_failed=0
msgdir="$build_dir/ktune-build-messages"
rm -rf "$msgdir" && mkdir -p "$msgdir"

variant_re='^ktune_variants_(.+)_sm([0-9]+)_([0-9]+|original)$'

# Outputs and targets of the FAILED edges of a ninja log.
failed_outputs() { sed -n 's/^FAILED: //p' "$1" | tr ' ' '\n' | sed '/^$/d' | sort -u; }
target_of() { sed -n 's|.*CMakeFiles/\([^/]*\)\.dir/.*|\1|p' <<<"$1"; }

# The compiler output of the edge that produced $2, from ninja log $1: the lines after "FAILED: ..."
# and the command line, up to the next status line.
message_of() {
  awk -v out="$2" '
    /^FAILED: / { grab = 0; n = split(substr($0, 9), outs, " "); for (i = 1; i <= n; i++) if (outs[i] == out) { grab = 1; skip = 1 } ; next }
    grab && skip { skip = 0; next }                      # the command line
    grab && (/^\[[0-9]+\/[0-9]+\] / || /^ninja: /) { grab = 0 }
    grab { print }' "$1" | head -c 16000
}

round=0
status=1
while :; do
  round=$((round + 1))
  echo "build-variants: round $round: ninja -k 0 -j $jobs ${targets[*]}"
  round_log="$build_dir/ktune-build.round$round.log"
  ninja -C "$build_dir" -k 0 -j "$jobs" "${targets[@]}" 2>&1 | tee "$round_log" | sed -n '/^FAILED: /p;/error/p' | head -n 40
  status=${PIPESTATUS[0]}
  cat "$round_log" >>"$log"
  ((status == 0)) && break

  new_skips=0
  flaky_round=0
  other_failed=0
  while IFS= read -r output; do
    target="$(target_of "$output")"
    if [[ ! "$target" =~ $variant_re ]]; then
      other_failed=1
      continue
    fi
    op="${BASH_REMATCH[1]}"; arch="${BASH_REMATCH[2]}"; index="${BASH_REMATCH[3]}"
    # Once more alone: a compiler killed for memory in the parallel build deserves another chance.
    msgfile="$msgdir/$target.txt"
    t0="$(now)"
    ninja -C "$build_dir" -j 1 "$output" >"$msgfile.retry" 2>&1
    rc=$?
    seconds="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
    if ((rc == 0)); then
      flaky+=("$target")
      flaky_round=1
      rm -f "$msgfile.retry"
      continue
    fi
    message_of "$msgfile.retry" "$output" >"$msgfile"
    [[ -s "$msgfile" ]] || message_of "$round_log" "$output" >"$msgfile"
    rm -f "$msgfile.retry"
    if [[ "$index" == original ]]; then
      failures+=("$target	original	$seconds	$msgfile")
      excluded_ops+=("$op")
    else
      failures+=("$target	shard	$seconds	$msgfile")
      skip+=("$op.sm$arch.$index")
    fi
    new_skips=1
    echo "build-variants: $target does not compile (${seconds}s); leaving it out" >&2
  done < <(failed_outputs "$round_log")

  # Nothing new to leave out and nothing recovered: what failed is not a variant unit.
  ((new_skips == 0 && flaky_round == 0)) && break
  ((round >= 4)) && break
  ((new_skips == 0)) && continue  # only units that compiled alone: build the rest again

  args=("-DKTUNE_SKIP_SHARDS=$(IFS=';'; echo "${skip[*]}")")
  if ((${#excluded_ops[@]})); then
    base_ops="${requested_ops:-$all_ops}"
    kept=()
    IFS=';' read -r -a base_list <<<"$base_ops"
    for o in "${base_list[@]}"; do
      [[ " ${excluded_ops[*]} " == *" $o "* ]] || kept+=("$o")
    done
    # An empty KTUNE_VARIANT_OPS means "all": with every op excluded there is nothing to tune.
    if ((${#kept[@]} == 0)); then
      echo "build-variants: no op has a compiling original kernel" >&2
      break
    fi
    args+=("-DKTUNE_BUILD_REQUESTED_OPS=$requested_ops" "-DKTUNE_VARIANT_OPS=$(IFS=';'; echo "${kept[*]}")")
  fi
  echo "build-variants: reconfiguring without ${skip[*]} ${excluded_ops[*]}"
  "$cmake_bin" "${args[@]}" "$build_dir" >>"$log" 2>&1 || { status=1; break; }
done

# ---- report -------------------------------------------------------------------------------------
json_str() {  # a JSON string literal of $1
  local s="$1"
  s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; s="${s//$'\n'/\\n}"; s="${s//$'\r'/\\r}"; s="${s//$'\t'/\\t}"
  s="$(printf '%s' "$s" | LC_ALL=C tr -d '\000-\010\013\014\016-\037')"
  printf '"%s"' "$s"
}
json_list() {  # a JSON array of strings
  local first=1
  printf '['
  for x in "$@"; do ((first)) || printf ', '; first=0; json_str "$x"; done
  printf ']'
}

# Compile seconds per output, from ninja's log of the latest successful build of each output.
declare -A seconds_of
while IFS=$'\t' read -r out secs; do seconds_of["$out"]="$secs"; done < <(
  awk -F'\t' '!/^#/ && NF >= 4 { d[$4] = ($2 - $1) / 1000.0 } END { for (o in d) printf "%s\t%.2f\n", o, d[o] }' \
    "$build_dir/.ninja_log" 2>/dev/null)
total_seconds="$(awk -F'\t' '!/^#/ && NF >= 4 { d[$4] = ($2 - $1) / 1000.0 } END { s = 0; for (o in d) s += d[o]; printf "%.1f", s }' \
  "$build_dir/.ninja_log" 2>/dev/null)"

# Every variant unit the build defines (from its cache) plus the ones left out.
mapfile -t configured < <(cache_value KTUNE_VARIANT_TARGETS | tr ';' '\n' | sed '/^$/d')
shard_rows=()
variant_seconds=0
declare -A seen done_rows
for s in "${skip[@]}"; do
  op="${s%.sm*}"; rest="${s##*.sm}"; arch="${rest%%.*}"; index="${rest#*.}"
  seen["ktune_variants_${op}_sm${arch}_${index}"]=failed
done
for target in "${configured[@]}" "${!seen[@]}"; do
  [[ -n "${done_rows[$target]:-}" ]] && continue
  done_rows["$target"]=1
  [[ "$target" =~ $variant_re ]] || continue
  op="${BASH_REMATCH[1]}"; arch="${BASH_REMATCH[2]}"; index="${BASH_REMATCH[3]}"
  secs=null
  state="${seen[$target]:-}"
  if [[ -z "$state" ]]; then
    state="not built"
    for out in "${!seconds_of[@]}"; do
      if [[ "$out" == *"CMakeFiles/$target.dir/"* ]]; then secs="${seconds_of[$out]}"; state=ok; fi
    done
    [[ "$secs" != null ]] && variant_seconds="$(awk -v a="$variant_seconds" -v b="$secs" 'BEGIN { printf "%.2f", a + b }')"
  fi
  for f in "${failures[@]}"; do
    IFS=$'\t' read -r ft _ fsecs _ <<<"$f"
    [[ "$ft" == "$target" ]] && { state=failed; secs="$fsecs"; }
  done
  shard_rows+=("    {\"target\": $(json_str "$target"), \"op\": $(json_str "$op"), \"arch\": $arch, \"shard\": $(json_str "$index"), \"status\": $(json_str "$state"), \"seconds\": $secs}")
done

failure_rows=()
for f in "${failures[@]}"; do
  IFS=$'\t' read -r target kind secs msgfile <<<"$f"
  [[ "$target" =~ $variant_re ]]
  op="${BASH_REMATCH[1]}"; arch="${BASH_REMATCH[2]}"; index="${BASH_REMATCH[3]}"
  failure_rows+=("    {\"target\": $(json_str "$target"), \"kind\": $(json_str "$kind"), \"op\": $(json_str "$op"), \"arch\": $arch, \"shard\": $(json_str "$index"), \"left_out\": $(json_str "$op.sm$arch.$index"), \"seconds\": $secs, \"message\": $(json_str "$(cat "$msgfile")")}")
done

result=ok
((status == 0)) || result=failed
wall="$(awk -v a="$t_start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
join_rows() { local IFS=$'\n'; local out="${*}"; printf '%s' "${out//$'\n'/,$'\n'}"; }
{
  echo "{"
  echo "  \"tool\": \"tools/build-variants.sh\","
  echo "  \"status\": \"$result\","
  # Relative to the source tree when inside it: the record lands in committed reports, which must not
  # name this machine's paths.
  echo "  \"build_dir\": $(json_str "$(realpath --relative-base="$source_dir" "$build_dir")"),"
  echo "  \"targets\": $(json_list "${targets[@]}"),"
  echo "  \"jobs\": $jobs,"
  echo "  \"rounds\": $round,"
  echo "  \"wall_seconds\": $wall,"
  echo "  \"compile_seconds\": ${total_seconds:-0},"
  echo "  \"variant_compile_seconds\": $variant_seconds,"
  echo "  \"core_minutes\": $(awk -v s="${total_seconds:-0}" 'BEGIN { printf "%.2f", s / 60 }'),"
  echo "  \"skipped_shards\": $(json_list "${skip[@]}"),"
  echo "  \"excluded_ops\": $(json_list "${excluded_ops[@]}"),"
  echo "  \"compiled_alone_after_failing\": $(json_list "${flaky[@]}"),"
  echo "  \"failures\": ["
  join_rows "${failure_rows[@]}"; echo
  echo "  ],"
  echo "  \"shards\": ["
  join_rows "${shard_rows[@]}"; echo
  echo "  ]"
  echo "}"
} >"$report"

if ((status != 0)); then
  echo "build-variants: the build failed outside the variant units; see $log" >&2
  grep -m 20 -A 6 '^FAILED: ' "$log" >&2
  exit 1
fi
echo "build-variants: built ${targets[*]}; ${#skip[@]} shard(s) and ${#excluded_ops[@]} op(s) left out; report: $report"
exit 0
