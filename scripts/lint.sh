#!/usr/bin/env bash
# clang-format and clang-tidy over the project's own sources (build/compile_commands.json).
# clang-tidy runs one file per process, as many at once as there are cores, and skips a file
# whose preprocessed input was already found clean (scripts/tidy.py).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
clang-format-14 --dry-run --Werror "${sources[@]}"
mapfile -t tidy < <(printf '%s\n' "${sources[@]}" | grep -E '^src/.*\.cpp$' | grep -v -e '_test\.cpp$' -e '/tests/')
python3 scripts/tidy.py build build/clang-tidy.log "${tidy[@]}"
echo "lint: clang-format and clang-tidy clean (${#sources[@]} files formatted, ${#tidy[@]} tidied)"
