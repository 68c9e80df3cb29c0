#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14) and runs each for $1 seconds (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build-sanitize
# The targets are CMake targets (fuzz/CMakeLists.txt) over the libraries that hold the parsers,
# built with ASan and UBSan, and with coverage where a target links, in the tree the sanitized
# unit tests use.
bash scripts/sanitize-build.sh strata_fuzzers
bin=$out/fuzz

mkdir -p "$out/corpus/analyze"
printf '\x02\x40\x00\x00\x00\x00\x00' >"$out/corpus/analyze/seed1"
mkdir -p "$out/corpus/config" "$out/corpus/patch" "$out/corpus/record" "$out/corpus/rank_file" \
  "$out/corpus/callsite_lines" "$out/corpus/model" "$out/corpus/trace_defs" "$out/corpus/site_parse" \
  "$out/corpus/prometheus" "$out/corpus/partial"
printf '# HELP a x\n# TYPE a histogram\na_bucket{le="1",j="x\\"y"} 1\na_bucket{le="+Inf"} 2\na_sum 3\na_count 2\n' \
  >"$out/corpus/prometheus/seed"
printf 'strata-trace-defs/1;2:vm1:18:MPI_Send1:16:solver1:13:a.c2:101:11:21:01:1' \
  >"$out/corpus/trace_defs/seed"
printf 'strata-trace-merged/1;1:11:h1:11:01:18:MPI_Send1:16:solver1:13:a.c2:101:11:11:01:21:01:0' \
  >"$out/corpus/trace_defs/merged"
printf 'sqlite:/var/lib/strata/site.db' >"$out/corpus/site_parse/url"
mkdir -p "$out/corpus/mpi_t_settings"
printf 'btl_vader_eager_limit\x1f4096\x1f1\x1epml\x1f\x1f0\x1e' >"$out/corpus/mpi_t_settings/seed"
printf 'postgresql://strata@db/site' >"$out/corpus/site_parse/pg"
printf '7d' >"$out/corpus/site_parse/since"
printf '2026-11-22T01:27:18Z' >"$out/corpus/site_parse/time"
cp src/profiler/record/testdata/sample.json src/profiler/record/testdata/mpi_t.json \
  "$out/corpus/record/"
printf 'node1\tnode2\nMPI_Send\ta.c\t12\tmain\t3\t900\t64\t0\t2\nMPI_Recv\tb.f90\t7\tsolve\t1\t5\t8\t2\t1\n' \
  >"$out/corpus/callsite_lines/seed"
# A real rank file, as a killed job leaves it.
"$bin/rank_file_seed" "$out/corpus/rank_file/seed.prof"
# Real hang state files, as the writer leaves them.
mkdir -p "$out/corpus/hang_state"
"$bin/hang_state_seed" "$out/corpus/hang_state"
printf 'profile out="a b" x=1\n# c\ndelay usec=5\n' >"$out/corpus/config/seed1"
printf 'a,b:k=v:k2=v2,c' >"$out/corpus/config/seed2"
cp build/lib/strata/*/modules/empty.so "$out/corpus/patch/" 2>/dev/null || true
mkdir -p "$out/corpus/overlay"
# Seeds: a packet holding a real profile (the rounds the monitor's tests write use this format).
printf '\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00SMR1\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x08\x00\x00\x00MPI_Send\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00' \
  >"$out/corpus/overlay/seed1"
# Every target in fuzz/ (fuzz/CMakeLists.txt builds one per NAME_fuzz.cpp), as many at once as
# there are cores.
fuzz_one() { # TARGET SECONDS OUT
  local target=$1 seconds=$2 out=$3
  mkdir -p "$out/corpus/$target"
  # analyze only: a damaged OTF2 anchor makes libotf2 calloc what its location count says
  # (gigabytes); with allocator_may_return_null that fails as it would for a real process, and
  # libotf2 reports it. libotf2 also leaks its archive when that open fails (suppressed).
  local -a env=()
  if [[ $target == analyze ]]; then
    env=(LSAN_OPTIONS=suppressions=$PWD/src/analyzer/otf2_lsan.supp
      ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=2048)
  fi
  # A crash, leak or slow input is written into build-sanitize, not into the worktree.
  if ! env "${env[@]}" "$out/fuzz/${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -artifact_prefix="$out/$target-" \
    -malloc_limit_mb=$([[ $target == analyze ]] && echo 65536 || echo 2048) "$out/corpus/$target" \
    >"$out/$target.log" 2>&1; then
    echo "fuzz: $target FAILED"
    tail -40 "$out/$target.log"
    return 1
  fi
  echo "fuzz: $target for ${seconds}s: $(grep -E '^Done|stat::number_of_executed_units' "$out/$target.log" | tail -1)"
}
export -f fuzz_one
for source in fuzz/*_fuzz.cpp; do basename "$source" _fuzz.cpp; done |
  xargs -P "$(nproc)" -I{} bash -c 'fuzz_one "$@"' _ {} "$seconds" "$out"
