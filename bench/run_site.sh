#!/usr/bin/env bash
# Site store benchmarks behind docs/PERFORMANCE.md ("Site store"), on SQLite and on a
# PostgreSQL server started here (initdb into a temporary directory, unix socket only):
#
#   bash bench/run_site.sh [INGEST_COUNT] [REPORT_COUNT]     (defaults 100000 and 1000000)
#   WORK=/dev/shm bash bench/run_site.sh 100000 0             (ingest only, on tmpfs)
#
# ingest  `strata site synth --out` writes INGEST_COUNT records (compact JSON, as root each file
#         owned by its record's uid) into a spool; `strata site ingest` moves them into a fresh
#         store. Prints records/s over the wall time of the ingest (parse, owner lookup,
#         batched transactions, removal from the spool), on a line starting "RATE", with the
#         CPU seconds and the load average (1 minute) just before the ingest.
#         The same records are ingested a second time into another fresh store with
#         --no-regressions: the line "SCORING" gives regression scoring's share of the ingest.
#         ROUNDS=N repeats the pair N times, alternating which of the two runs first, and ends
#         with a "SCORING ... medians" line (medians of each kind and the spread of both), so
#         that the machine's noise is seen beside the difference.
#         MPI_T=1 compares instead records without and with an MPI_T section like an Open MPI
#         job's (`synth --mpi-t`: about 300 control variables, 18 performance variables, 15 KB
#         of JSON), both scored: the lines start "MPI_T" and give what the section costs the
#         ingest (its parse and storage, and the store's MPI_T index).
#         BASE=PATH (a strata binary, e.g. a build of main kept aside) ingests the same records
#         with it too, into another fresh store, in alternating order with this build's run
#         of the second kind: the line "BASE" gives this build against it in the same run.
# report  `strata site synth --db` fills a fresh store with REPORT_COUNT records (untimed);
#         then the full site report (site part and every user's part, text) over the last 30
#         days (--since 30d: whole days from the day tables, the partial days at both ends
#         from the job rows) and one user's report are timed, and the scaling models of the
#         busiest user's programs and of the whole site (`strata site models`, with the peak
#         memory of the process).
#
# Times are wall seconds of the strata process and its CPU seconds (user+sys); PostgreSQL's own
# CPU is not in the latter (the ingest's RATE line gives it as "server cpu"). Knobs: STRATA (the
# binary), BACKENDS="sqlite postgresql", ROUNDS (ingest pairs, 1), MPI_T (0),
# WORK (a directory with room: about 3.5 GB per million records and backend).
set -euo pipefail
source "$(dirname "$0")/lock.sh"
cd "$(dirname "$0")/.."
strata=$(realpath "${STRATA:-build/bin/strata}")
ingest_n=${1:-100000}
report_n=${2:-1000000}
backends=${BACKENDS:-sqlite postgresql}
work=$(mktemp -d "${WORK:-/var/tmp}/strata-bench-site.XXXXXX")
chmod 755 "$work"
pg_pid=""
cleanup() {
  if [[ -n "$pg_pid" ]]; then
    echo >&"${PG[1]}" || true
    wait "$pg_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

timed() { # label, command...: prints "label: wall W s, cpu C s, peak M MB", keeps W in $wall,
  # C in $cpu
  local out
  out=$( { /usr/bin/time -f '%e %U %S %M' "${@:2}" >/dev/null 2>"$work/stderr"; } 2>&1 ) || {
    cat "$work/stderr" >&2
    return 1
  }
  out=$(tail -1 "$work/stderr")
  read -r wall user sys rss <<<"$out"
  cpu=$(echo "$user + $sys" | bc -l)
  printf '%s: wall %s s, cpu %.2f s, peak %d MB\n' "$1" "$wall" "$cpu" "$((rss / 1024))"
}

server_cpu() { # CPU seconds of this script's PostgreSQL server: the postmaster with its reaped
  # children (backends that ended) and its live children; 0 without one
  local pm total=0 pid
  pm=$(head -1 "$pg_dir/data/postmaster.pid" 2>/dev/null) || { echo 0; return; }
  for pid in "$pm" $(pgrep -P "$pm"); do
    total=$(awk -v t="$total" '{print t + $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null ||
      echo "$total")
  done
  echo "scale=2; $total / $(getconf CLK_TCK)" | bc
}

url_for() { # backend, name
  if [[ $1 == sqlite ]]; then
    echo "sqlite:$work/$2.db"
  else
    runuser -u postgres -- /usr/lib/postgresql/*/bin/createdb -h "$pg_dir" -U strata "$2"
    echo "postgresql://strata@/$2?host=$pg_dir"
  fi
}

if [[ $backends == *postgresql* ]]; then
  coproc PG { python3 tests/integration/site_postgres.py; }
  pg_pid=$PG_PID
  read -r pg_url <&"${PG[0]}"
  pg_dir=${pg_url#*host=}
fi

echo "# strata site benchmarks: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# synthetic records: $ingest_n for ingest, $report_n for reports"
spool="$work/spool"
median() { # values...: their median (the mean of the middle two of an even count)
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() { # values...: "min-max"
  printf '%s\n' "$@" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "-" hi}'
}

ingest_once() { # backend, kind (scored, unscored; plain, mpi_t), round: one timed ingest into a
  # fresh store
  local flags=() name="$2$3" from=$spool
  local binary=$strata kind=$2 note=""
  if [[ $kind == base ]]; then
    binary=$base kind=${kinds[1]} note=" (BASE build)"
  fi
  [[ $kind == unscored ]] && flags=(--no-regressions)
  [[ $kind == mpi_t ]] && from=$spool-mpi-t
  rm -rf "$spool-run"
  cp -a "$from" "$spool-run"
  url=$(url_for "$1" "$name")
  load=$(cut -d' ' -f1 /proc/loadavg)
  [[ $1 == sqlite ]] || server_before=$(server_cpu)
  timed "$1 ingest $ingest_n records${flags:+, ${flags[*]}}${mpi_t_note[$kind]:-}$note" \
    "$binary" site ingest --db "$url" "${flags[@]}" "$spool-run"
  server="" server_s=0
  if [[ $1 != sqlite ]]; then
    server_s=$(echo "$(server_cpu) - $server_before" | bc)
    server=", server cpu $server_s s"
  fi
  printf 'RATE %s ingest%s: %s records/s (%s records, wall %s s, cpu %.2f s%s, load %s before)\n' \
    "$1" "${flags:+ ${flags[*]}}${mpi_t_note[$kind]:-}$note" "$(echo "$ingest_n / $wall" | bc)" \
    "$ingest_n" "$wall" "$cpu" "$server" "$load"
  left=$(find "$spool-run" -name '*.json' | wc -l)
  [[ $left == 0 ]] || { echo "ingest left $left records in the spool" >&2; exit 1; }
  [[ $1 == sqlite ]] && rm -f "$work/$name.db"*
  return 0
}

rounds=${ROUNDS:-1}
base=""
[[ -n ${BASE:-} ]] && base=$(realpath "$BASE")
# The two kinds of a pair: the second is the one whose added cost is measured.
kinds=(unscored scored) label=SCORING what="regression scoring"
if [[ ${MPI_T:-0} == 1 ]]; then
  kinds=(plain mpi_t) label=MPI_T what="the MPI_T section"
fi
declare -A mpi_t_note=([mpi_t]=", with MPI_T sections")
for backend in $backends; do
  rm -rf "$spool" "$spool-mpi-t"
  "$strata" site synth --count "$ingest_n" --out "$spool" --seed 7 >/dev/null
  [[ $label == MPI_T ]] &&
    "$strata" site synth --count "$ingest_n" --out "$spool-mpi-t" --seed 7 --mpi-t >/dev/null
  walls_scored=() walls_unscored=() ratios=() cpus_scored=() cpus_unscored=()
  servers_scored=() servers_unscored=()
  for ((round = 1; round <= rounds; ++round)); do
    # Alternating the order, so that a drift of the machine's speed favours neither.
    order=("${kinds[1]}" "${kinds[0]}")
    ((round % 2)) && order=("${kinds[0]}" "${kinds[1]}")
    if [[ -n $base ]]; then # beside this build's run of the second kind, before or after it
      order=("${kinds[0]}" base "${kinds[1]}")
      ((round % 2)) && order=("${kinds[0]}" "${kinds[1]}" base)
    fi
    for kind in "${order[@]}"; do
      ingest_once "$backend" "$kind" "$round"
      if [[ $kind == base ]]; then
        base_wall=$wall base_cpu=$cpu base_server=$server_s
        continue
      fi
      if [[ $kind == "${kinds[1]}" ]]; then
        scored=$wall cpus_scored+=("$cpu") servers_scored+=("$server_s") scored_cpu=$cpu
      else
        unscored=$wall cpus_unscored+=("$cpu") servers_unscored+=("$server_s")
      fi
    done
    [[ -n $base ]] &&
      printf 'BASE %s: this build %s s (cpu %.2f s, server cpu %s s), BASE build %s s (cpu %.2f s, server cpu %s s): %+.1f %% wall\n' \
        "$backend" "$scored" "$scored_cpu" "${servers_scored[-1]}" "$base_wall" "$base_cpu" \
        "$base_server" "$(echo "100 * ($scored - $base_wall) / $base_wall" | bc -l)"
    walls_scored+=("$scored") walls_unscored+=("$unscored")
    ratios+=("$(echo "scale=1; 100 * ($scored - $unscored) / $unscored" | bc)")
    printf '%s %s: %s adds %s %% to the ingest (%s s against %s s: %+.2f s per 100000 jobs)\n' \
      "$label" "$backend" "$what" "${ratios[-1]}" "$scored" "$unscored" \
      "$(echo "($scored - $unscored) * 100000 / $ingest_n" | bc -l)"
  done
  if ((rounds > 1)); then
    med_s=$(median "${walls_scored[@]}") med_u=$(median "${walls_unscored[@]}")
    printf '%s %s medians of %d rounds: adds %s %% (%s %s s, %s; %s %s s, %s;' \
      "$label" "$backend" "$rounds" "$(echo "scale=1; 100 * ($med_s - $med_u) / $med_u" | bc)" \
      "${kinds[1]}" "$med_s" "$(spread "${walls_scored[@]}")" "${kinds[0]}" "$med_u" \
      "$(spread "${walls_unscored[@]}")"
    printf ' per round: median %s %%, each %s)\n' "$(median "${ratios[@]}")" "${ratios[*]}"
    printf '%s %s cpu medians: %s %s s, %s %s s' "$label" "$backend" "${kinds[1]}" \
      "$(median "${cpus_scored[@]}")" "${kinds[0]}" "$(median "${cpus_unscored[@]}")"
    [[ $backend == sqlite ]] || printf '; server: %s %s s, %s %s s' "${kinds[1]}" \
      "$(median "${servers_scored[@]}")" "${kinds[0]}" "$(median "${servers_unscored[@]}")"
    echo
  fi
  [[ $report_n -gt 0 ]] || continue

  url=$(url_for "$backend" report)
  timed "$backend fill $report_n records (synth --db, untimed)" \
    "$strata" site synth --count "$report_n" --db "$url" --seed 11
  timed "$backend site report over $report_n records (--since 30d, text)" \
    "$strata" site report --db "$url" --since 30d
  timed "$backend one user's report (--since 30d --user anna00)" \
    "$strata" site report --db "$url" --since 30d --user anna00
  timed "$backend models of one user's programs (--user anna00)" \
    "$strata" site models --db "$url" --user anna00
  timed "$backend models of the whole site's programs" "$strata" site models --db "$url"
  timed "$backend weekly mail to every user (--week --format mail --outbox)" \
    "$strata" site report --db "$url" --week --format mail --outbox "$work/outbox-$backend"
  echo "$backend mails written: $(ls "$work/outbox-$backend" | wc -l)"
  [[ $backend == sqlite ]] && echo "sqlite store size: $(du -h "$work/report.db" | cut -f1)"
done
