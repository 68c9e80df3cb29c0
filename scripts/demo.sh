#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs our example MPI program under the
# modules that exist, for both MPI implementations, printing what each stack does to it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build # what building and running it takes; scripts/test.sh adds the rest
bash scripts/build.sh strata_demo >/dev/null # what the demo runs, not the tests (scripts/test.sh)
source scripts/mpi-env.sh
strata=build/bin/strata

echo "== strata modules"
"$strata" modules
for flavor in openmpi mpich; do
  prog=build/examples/$flavor/pingpong
  [[ -x $prog ]] || continue
  echo
  echo "== $flavor: pingpong on 2 ranks under different tool stacks"
  printf '%-32s %s\n' "stack" "result"
  for tools in "" "empty" "empty,empty,empty,empty,empty,empty,empty,empty" "delay:usec=50" \
               "delay:usec=50:every=2,empty"; do
    out=$("$strata" run -np 2 ${tools:+--tools "$tools"} -- "$prog" 2000)
    printf '%-32s %s\n' "${tools:-(none)}" "$out"
  done
done

for flavor in openmpi mpich; do
  prog=build/examples/$flavor/pingpong
  [[ -x $prog ]] || continue
  echo
  echo "== $flavor: the profile module's report and job record"
  spool=$(mktemp -d)
  STRATA_SPOOL=$spool STRATA_PROFILE_OUT=- STRATA_PROFILE_CALLSITES=1 \
    "$strata" run -np 2 --tools profile -- "$prog" 2000
  echo "job record: $(ls "$spool"/*.json)"
  "$strata" report "$spool"/*.json --format csv | head -4
done

# The Lennard-Jones force-decomposition example (the HieraAnalyses paper, docs/example-ljmd.md): both versions
# under the profiler and, once the trace module is built, under the tracer (and the analyzer).
for flavor in openmpi mpich; do
  oo=build/examples/$flavor/ljmd_oo
  [[ -x $oo ]] || continue
  for version in ljmd_mpi ljmd_oo; do
    echo
    echo "== $flavor: $version on 4 ranks under the profile module"
    spool=$(mktemp -d)
    STRATA_SPOOL=$spool "$strata" run -np 4 --tools profile -- "build/examples/$flavor/$version" 4 40 20
    "$strata" report "$spool"/*.json --format csv | head -6
    if [[ -e build/lib/strata/$flavor/modules/trace.so ]]; then
      echo "== $flavor: $version on 4 ranks under the trace module"
      trace=$(mktemp -d)/trace
      STRATA_TRACE_DIR=$trace "$strata" run -np 4 --tools trace -- "build/examples/$flavor/$version" 4 40 20
      if "$strata" --help | grep -qE '^ +analyze '; then
        "$strata" analyze "$trace"
      else
        echo "trace: $trace"
      fi
    fi
  done
done

# The site: this machine's records in a store (SQLite), and the report a centre mails weekly.
echo
echo "== site store: three profiled jobs ingested, and the report over the last day"
spool=$(mktemp -d)
for n in 1000 2000 4000; do
  STRATA_SPOOL=$spool "$strata" run -np 2 --tools profile -- build/examples/openmpi/pingpong "$n" >/dev/null
done
db=$(mktemp -d)/site.db
"$strata" site ingest --db "sqlite:$db" "$spool"
"$strata" site report --db "sqlite:$db" --since 1d >"$db.report.txt"
head -40 "$db.report.txt"

# Online monitoring: the LJ example's ranks offload their profiles through a tree of tool ranks.
if [[ -e build/lib/strata/openmpi/modules/monitor.so && -x build/examples/openmpi/ljmd_mpi ]]; then
  echo
  echo "== online monitoring: ljmd_mpi on 4 ranks, 3 tool ranks (fanout 2), a round every 0.2 s"
  rounds=$(mktemp -d)/rounds.jsonl
  STRATA_MONITOR_OUT=$rounds "$strata" run -np 4 --tools monitor:fanout=2:period=0.2 \
    -- build/examples/openmpi/ljmd_mpi 4 200 100 >/dev/null
  echo "$(wc -l <"$rounds") rounds in $rounds; the last one:"
  tail -1 "$rounds" | cut -c1-600
fi
