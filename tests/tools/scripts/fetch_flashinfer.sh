#!/usr/bin/env bash
# tools/upstream/fetch-flashinfer.sh without a network: every way it can fail says why and leaves no
# folder behind (neither DEST nor its temporary sibling). Usage: fetch_flashinfer.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
script="$src/tools/upstream/fetch-flashinfer.sh"
rm -rf "$work" && mkdir -p "$work"
export GIT_CEILING_DIRECTORIES=$work  # $work may lie inside a checkout (the build tree): git must not find it
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_failure MESSAGE CMD...: the command fails, its stderr names MESSAGE, and $work holds only what it held.
expect_failure() {
  local message=$1; shift
  local before after err
  before=$(ls -A "$work")
  if err=$("$@" 2>&1 >/dev/null); then fail "succeeded: $*"; fi
  [[ $err == *"$message"* ]] || fail "'$*' said '$err', not '$message'"
  after=$(ls -A "$work")
  [[ $before == "$after" ]] || fail "'$*' left files behind: $after"
}

expect_failure "usage:" bash "$script"

# A repository that lacks the pinned commit.
git init --quiet "$work/repo"
mkdir -p "$work/repo/include/flashinfer" && echo '// not FlashInfer' >"$work/repo/include/flashinfer/norm.cuh"
git -C "$work/repo" add -A && git -C "$work/repo" -c user.name=t -c user.email=t@t commit --quiet -m x
expect_failure "does not have commit" env FLASHINFER_GIT="$work/repo" bash "$script" "$work/dest"

mkdir "$work/plain"
expect_failure "is not a git repository" env FLASHINFER_GIT="$work/plain" bash "$script" "$work/dest"
expect_failure "does not exist" env FLASHINFER_GIT="$work/repo" bash "$script" "$work/no/such/dest"

# An existing folder that is not the pinned FlashInfer is never touched.
mkdir "$work/dest" && echo keep >"$work/dest/file"
expect_failure "exists" env FLASHINFER_GIT="$work/repo" bash "$script" "$work/dest"
[[ $(<"$work/dest/file") == keep ]] || fail "the existing folder changed"
echo "fetch-flashinfer.sh: every failure said why and left nothing behind"
