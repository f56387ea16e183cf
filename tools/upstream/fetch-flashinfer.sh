#!/usr/bin/env bash
# tools/upstream/fetch-flashinfer.sh: puts FlashInfer's include/ at the commit sgl-kernel pins into a folder,
# for bench/upstream's ktune_vs_flashinfer (-DKTUNE_FLASHINFER_DIR=<folder>).
#
#   tools/upstream/fetch-flashinfer.sh DEST                           # from GitHub
#   FLASHINFER_GIT=/path/to/flashinfer tools/upstream/fetch-flashinfer.sh DEST   # from a local clone (offline)
#
# DEST receives include/ and a COMMIT file naming the commit (which the build reports). The folder appears
# whole or not at all: everything is assembled in a temporary folder beside it and renamed into place at
# the end. An existing DEST is left alone.
set -euo pipefail

# sgl-kernel/CMakeLists.txt's GIT_TAG for FlashInfer at sglang 00390b8633f913f53d98d3acdbc1ab8f0d62da1b.
commit=bc29697ba20b7e6bdb728ded98f04788e16ee021
source=${FLASHINFER_GIT:-https://github.com/flashinfer-ai/flashinfer.git}

die() { echo "fetch-flashinfer.sh: $*" >&2; exit 1; }

[[ $# -eq 1 && -n $1 ]] || die "usage: fetch-flashinfer.sh DEST (FLASHINFER_GIT=<local clone> to work offline)"
dest=${1%/}
if [[ -e $dest ]]; then
  if [[ -f $dest/COMMIT && $(<"$dest/COMMIT") == "$commit" && -f $dest/include/flashinfer/norm.cuh ]]; then
    echo "$dest already holds FlashInfer $commit"
    exit 0
  fi
  die "$dest exists; remove it or choose another folder"
fi
command -v git >/dev/null || die "git is not installed"
parent=$(dirname -- "$dest")
[[ -d $parent ]] || die "$parent does not exist"

tmp=$(mktemp -d "$parent/.flashinfer-fetch.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

if [[ -d $source ]]; then
  repo=$source  # a clone or a bare repository: read in place
  git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 || die "$source is not a git repository"
else
  repo=$tmp/repo.git
  git init --quiet --bare "$repo"
  # One commit, no history; a server that refuses to serve a commit by id gets a full fetch instead.
  if ! git -C "$repo" fetch --quiet --depth 1 "$source" "$commit" 2>/dev/null; then
    git -C "$repo" fetch --quiet "$source" '+refs/heads/*:refs/heads/*' || die "cannot fetch $source"
  fi
fi
git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null || die "$source does not have commit $commit"

mkdir "$tmp/out"
git -C "$repo" archive --format=tar "$commit" include | tar -x -C "$tmp/out" || die "cannot extract include/ of $commit"
for header in norm.cuh activation.cuh pos_enc.cuh; do
  [[ -f $tmp/out/include/flashinfer/$header ]] || die "$commit has no include/flashinfer/$header"
done
echo "$commit" >"$tmp/out/COMMIT"
mv -T -- "$tmp/out" "$dest" || die "cannot move the result to $dest"
echo "FlashInfer $commit: $dest/include"
