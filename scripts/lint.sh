#!/usr/bin/env bash
# clang-format and clang-tidy over the project's own sources (build/compile_commands.json).
# clang-tidy runs one file per process, as many at once as there are cores.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
clang-format-14 --dry-run --Werror "${sources[@]}"
mapfile -t tidy < <(printf '%s\n' "${sources[@]}" | grep -E '^src/.*\.cpp$' | grep -v -e '_test\.cpp$' -e '/tests/')
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
tidy_one() { # FILE LOG_DIR: one file's findings into a log of its own (no interleaved lines)
  clang-tidy-14 -p build --quiet --extra-arg=-Wno-unknown-warning-option "$1" >"$2/${1//\//_}.log" 2>&1
}
export -f tidy_one
status=0
printf '%s\0' "${tidy[@]}" | xargs -0 -P "$(nproc)" -I{} bash -c 'tidy_one "$1" "$2"' _ {} "$logs" || status=$?
cat "$logs"/*.log >build/clang-tidy.log
if [[ $status -ne 0 ]]; then
  grep -v 'warnings generated' build/clang-tidy.log
  exit 1
fi
echo "lint: clang-format and clang-tidy clean (${#sources[@]} files formatted, ${#tidy[@]} tidied)"
