#!/usr/bin/env bash
# clang-format (.clang-format) over every C++ file git tracks or would add: `bash
# scripts/format.sh` rewrites them, `bash scripts/format.sh --check` only reports files that
# differ (exit 1), as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
# Untracked files too (not ignored ones): a new source is checked before its first commit.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
