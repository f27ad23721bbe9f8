#!/usr/bin/env bash
# Copies PyTorch Geometric's unit tests of the layers hector.nn replaces into
# .pyg-tests/ of this checkout (ignored by git: PyG's files are never committed).
#   scripts/get-pyg-tests.sh <pyg-git-dir-or-checkout> [ref]
# A git directory (bare, or a checkout's .git) is read at `ref` (default: the
# release tag 2.8.0); a checkout without `ref` is copied as its work tree is.
# test/pyg/run_pyg_tests.py runs them with hector.nn's classes swapped in.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
files=(test/nn/conv/test_rgcn_conv.py test/nn/conv/test_rgat_conv.py
       test/nn/conv/test_hgt_conv.py)

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 <pyg-git-dir-or-checkout> [ref]" >&2
  exit 2
fi
src="$1"
ref="${2:-}"
out="$root/.pyg-tests"

if [ -d "$src/.git" ] || [ -f "$src/.git" ]; then
  worktree="$src"
  gitdir=(git -C "$src")
elif git --git-dir="$src" rev-parse --git-dir >/dev/null 2>&1; then
  worktree=""
  gitdir=(git --git-dir="$src")
  ref="${ref:-2.8.0}"
else
  echo "$0: $src is neither a git directory nor a PyG checkout" >&2
  exit 1
fi

mkdir -p "$out"
if [ -z "$ref" ]; then  # a checkout as it is
  for f in "${files[@]}"; do cp "$worktree/$f" "$out/"; done
  desc="$("${gitdir[@]}" describe --tags --always --dirty 2>/dev/null || echo unknown)"
  commit="$("${gitdir[@]}" rev-parse HEAD 2>/dev/null || echo unknown)"
else
  commit="$("${gitdir[@]}" rev-parse --verify "$ref^{commit}")"
  for f in "${files[@]}"; do
    "${gitdir[@]}" show "$commit:$f" > "$out/$(basename "$f")"
  done
  desc="$ref"
fi
printf 'pytorch_geometric %s (commit %s)\n' "$desc" "$commit" > "$out/SOURCE"
echo "get-pyg-tests: ${#files[@]} files of pytorch_geometric $desc ($commit) in $out"
