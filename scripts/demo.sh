#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs our example MPI program under the
# modules that exist, for both MPI implementations, printing what each stack does to it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
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
