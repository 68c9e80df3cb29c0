#!/usr/bin/env bash
# clang-format and clang-tidy over the project's own sources (build/compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
clang-format-14 --dry-run --Werror "${sources[@]}"
mapfile -t tidy < <(printf '%s\n' "${sources[@]}" | grep -E '^src/.*\.cpp$' | grep -v -e '_test\.cpp$' -e '/tests/')
if ! clang-tidy-14 -p build --quiet --extra-arg=-Wno-unknown-warning-option "${tidy[@]}" >build/clang-tidy.log 2>&1; then
  grep -v 'warnings generated' build/clang-tidy.log
  exit 1
fi
echo "lint: clang-format and clang-tidy clean (${#sources[@]} files formatted, ${#tidy[@]} tidied)"
