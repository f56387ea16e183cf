#!/usr/bin/env bash
# tools/gpu.sh remote test's PyTorch step (pytorch_example, summarize_gtest), with a stand-in interpreter: it
# runs build.py then test_ktune_torch.py where `python -c 'import torch; ...'` finds a CUDA PyTorch, says why
# it skips where not, and the summary table ends with the example's row in every case.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
# shellcheck source=/dev/null
source "$root/tools/gpu.sh"
set +e  # pytorch_example returns the example's exit code; the checks below decide

# The stand-in: FAKE selects what it plays. It logs each invocation to $work/calls.
cat >"$work/python" <<'PY'
#!/usr/bin/env bash
echo "$*" >>"$FAKE_CALLS"
case "$1" in
  -c)
    case "$FAKE" in
      no_torch) echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1 ;;
      no_device) echo 'AssertionError: PyTorch 2.11.0 (CUDA 13.0): torch.cuda.is_available() is "False"' >&2; exit 1 ;;
      *) echo "PyTorch 2.11.0+cu130 (CUDA 13.0) on NVIDIA H200" ;;
    esac ;;
  */build.py)
    [ "$FAKE" = build_fails ] && { echo "error: building ktune_torch failed: nvcc not found" >&2; exit 1; }
    echo "ktune_torch: ready in 1.0 s" ;;
  */test_ktune_torch.py)
    shift
    while [ $# -gt 0 ]; do [ "$1" = --json ] && json=$2; shift; done
    if [ "$FAKE" = fails ]; then
      printf '{"checks": {"passed": 1490, "failed": ["apply_rope: query and key overlap"]}}\n' >"$json"
      echo "FAIL apply_rope: query and key overlap"; echo "1490 passed, 1 failed"; exit 1
    fi
    printf '{"checks": {"passed": 1523, "failed": []}}\n' >"$json"
    echo "1523 passed, 0 failed" ;;
esac
PY
chmod +x "$work/python"
cat >"$work/gtest.json" <<'JSON'
{"tests": 2, "failures": 0, "disabled": 0, "testsuites": [{"name": "LastErrorGpu", "testsuite": [{"result": "COMPLETED"}, {"result": "COMPLETED"}]}]}
JSON
export KTUNE_PYTHON="$work/python" FAKE_CALLS="$work/calls"
fail() { echo "FAIL: $*"; exit 1; }

run() {  # FAKE, expected exit code, then patterns the output must hold
  local fake=$1 want=$2 out="$work/out-$1" text rc
  shift 2
  mkdir -p "$out"
  : >"$work/calls"
  text=$(FAKE=$fake pytorch_example "$out" "" 2>&1; echo "exit $?"; summarize_gtest "$work/gtest.json" "$out/pytorch-example.json")
  rc=$(echo "$text" | sed -n 's/^exit //p')
  [ "$rc" = "$want" ] || fail "$fake: exit $rc, expected $want:\n$text"
  for pattern in "$@"; do
    echo "$text" | grep -qE -- "$pattern" || fail "$fake: no line matching '$pattern' in:\n$text"
  done
  [ -s "$out/pytorch-example.log" ] || fail "$fake: no pytorch-example.log"
  echo "$text" >"$work/$fake.txt"
}

run passes 0 "found by .*import torch; assert torch.cuda.is_available" "PyTorch 2.11.0\+cu130 .* on NVIDIA H200" \
  "^1523 passed, 0 failed" "^pytorch example \(test_ktune_torch.py\) +1523 +0 +0$" "^total +2 +0"
grep -q "build.py" "$work/calls" && grep -q "test_ktune_torch.py --quick --json" "$work/calls" ||
  fail "passes: build.py and test_ktune_torch.py --quick --json were not both run: $(cat "$work/calls")"
[ "$(grep -n build.py "$work/calls" | cut -d: -f1)" -lt "$(grep -n test_ktune_torch "$work/calls" | cut -d: -f1)" ] ||
  fail "passes: test_ktune_torch.py ran before build.py"
run fails 1 "^FAIL apply_rope" "^pytorch example \(test_ktune_torch.py\) +1490 +1 +0$"
run build_fails 1 "^error: building ktune_torch failed" \
  "^pytorch example \(test_ktune_torch.py\) +0 +1 +0 +exit 1 before any result"
grep -q test_ktune_torch "$work/calls" && fail "build_fails: the test ran after a failed build"
run no_torch 0 "skipped: no CUDA PyTorch .*No module named 'torch'" \
  "^pytorch example \(test_ktune_torch.py\) +0 +0 +1 +no CUDA PyTorch: ModuleNotFoundError"
run no_device 0 "skipped: no CUDA PyTorch .*is_available\(\) is" "^pytorch example .* +0 +0 +1 +no CUDA PyTorch: AssertionError"
KTUNE_TORCH=0 run disabled 0 "skipped \(KTUNE_TORCH=0\)" "^pytorch example .* +0 +0 +1 +KTUNE_TORCH=0"
[ -s "$work/calls" ] && fail "disabled: the interpreter was run: $(cat "$work/calls")"
KTUNE_TORCH_ARGS="--quick --no-compile" run passes 0 "test_ktune_torch.py --quick --no-compile"
grep -q "test_ktune_torch.py --quick --no-compile --json" "$work/calls" || fail "KTUNE_TORCH_ARGS not passed: $(cat "$work/calls")"
KTUNE_TORCH_ARGS= run passes 0 "then test_ktune_torch.py \(log"
grep -q "test_ktune_torch.py --json" "$work/calls" || fail "KTUNE_TORCH_ARGS='' is not the whole run: $(cat "$work/calls")"
KTUNE_PYTHON="$work/none" run absent 0 "skipped: no $work/none" "^pytorch example .* +0 +0 +1 +no $work/none"
echo "PASS: the PyTorch example runs where a CUDA PyTorch is found, skips with the reason elsewhere, its row in the summary"
