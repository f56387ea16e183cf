#!/usr/bin/env bash
# ctest: tools/tune.sh finish on a halving search with an earlier pass (tests/tools/data/raw/search/): the
# results come from raw/search.json, the run-to-run section is attached against raw/pass1/, tables and
# reports are written, the raw files land in reports/<gpu>/raw/ (search.json.gz, previous/search.json.gz),
# and a later finish without a new pass attaches the kept previous run again. Then a model's run (make tune
# MODEL=...: only raw/models/<name>.search.json) merges with the committed catalogue results, its raw file is
# kept in reports/<gpu>/raw/models/, and a later catalogue finish merges it again.
# usage: tune_finish.sh KTUNE REPO DATA WORK
set -euo pipefail
ktune=$1 repo=$2 data=$3 work=$4
rm -rf "$work"
mkdir -p "$work/tools" "$work/kernels/toyop" "$work/build/tools" "$work/run/raw/pass1"
cp "$repo/tools/tune.sh" "$work/tools/"
cp "$data/kernels/toyop/spec.json" "$data/kernels/toyop/space.hpp" "$work/kernels/toyop/"
ln -s "$ktune" "$work/build/tools/ktune"
cp "$data/raw/search/search.json" "$work/run/raw/"
cp "$data/raw/search/pass1/search.json" "$work/run/raw/pass1/"
echo nvidia-h200 >"$work/run/raw/gpu-slug"
cd "$work"
fail() { echo "FAIL: $*"; cat finish.log; exit 1; }
check() { grep -q -- "$1" "$2" || fail "'$1' not in $2"; }
BUILD_DIR=build KTUNE_RESULTS=run tools/tune.sh finish >finish.log 2>&1 || fail "tune.sh finish exited $?"
for f in reports/nvidia-h200/raw/search.json.gz reports/nvidia-h200/raw/previous/search.json.gz \
         reports/nvidia-h200/toyop.json reports/nvidia-h200/toyop.md reports/nvidia-h200/index.md kernels/toyop/tuned.cuh; do
  test -f "$f" || fail "$f is missing"
done
test ! -e reports/nvidia-h200/raw/sweep.json.gz || fail "a search leaves no sweep file behind"
check '"stability"' reports/nvidia-h200/toyop.json
check '"search"' reports/nvidia-h200/toyop.json
check '## Run-to-run stability' reports/nvidia-h200/toyop.md
check '| changed |' reports/nvidia-h200/toyop.md   # D and F swapped outside the band at d=4096, t=16
check '| held |' reports/nvidia-h200/toyop.md
check 'Re-measured screens' reports/nvidia-h200/index.md
# Again without a new earlier pass: the run-to-run section comes back from reports/<gpu>/raw/previous/.
rm -rf run/raw/pass1
BUILD_DIR=build KTUNE_RESULTS=run tools/tune.sh finish >finish.log 2>&1 || fail "second tune.sh finish exited $?"
check '"stability"' reports/nvidia-h200/toyop.json

# A model's run: the toy search at a width the catalogue's does not have (d=4096 renamed d=6144).
mkdir -p model/raw/models
echo nvidia-h200 >model/raw/gpu-slug
sed 's/d=4096/d=6144/g' "$data/raw/search/search.json" >model/raw/models/toymodel-tp1.search.json
BUILD_DIR=build KTUNE_RESULTS=model tools/tune.sh finish >finish.log 2>&1 || fail "model tune.sh finish exited $?"
test -f reports/nvidia-h200/raw/models/toymodel-tp1.search.json.gz || fail "the model's raw file is not kept"
check 'd=6144' reports/nvidia-h200/toyop.json
check 'd=4096' reports/nvidia-h200/toyop.json
check 'd=6144' kernels/toyop/tuned.cuh
# A catalogue finish again: the kept model's shapes stay in the tables.
BUILD_DIR=build KTUNE_RESULTS=run tools/tune.sh finish >finish.log 2>&1 || fail "third tune.sh finish exited $?"
check 'd=6144' kernels/toyop/tuned.cuh
echo "tools/tune.sh finish: search, run-to-run section, reports, a model's run merged and kept: ok"
