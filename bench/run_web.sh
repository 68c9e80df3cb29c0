#!/usr/bin/env bash
# Web interface latency at scale: a store of COUNT synthetic records (`strata site synth --db`,
# untimed) in SQLite and in a PostgreSQL server started here, then `strata site serve` on each
# and median/p95 of pages and API calls (bench/web_latency.py), as an admin (every job).
# Usage: bench/run_web.sh [COUNT] [WORKDIR]
#   STRATA_WEB_BENCH_SQLITE=PATH  use this existing SQLite store instead of filling one ("none":
#                                 PostgreSQL only)
#   STRATA_WEB_BENCH_POSTGRES=0   SQLite only
#   STRATA_WEB_BENCH_POSTGRES_URL=URL  use this existing PostgreSQL store instead of filling one
#   STRATA_WEB_BENCH_MATRIX=N     repeats per request of the jobs-list matrix (every sort under
#                                 each filter; 0: none; default 5)
set -euo pipefail
source "$(dirname "$0")/lock.sh"
cd "$(dirname "$0")/.."
count=${1:-1000000}
work=${2:-$(mktemp -d /tmp/strata-web-bench.XXXXXX)}
strata=${STRATA_BUILD:-$PWD/build}/bin/strata
port=${STRATA_WEB_BENCH_PORT:-18777}
mkdir -p "$work"
export STRATA_SITE_DB=

fill() { # URL
  local t0=$SECONDS
  "$strata" site synth --count "$count" --db "$1" >/dev/null
  echo "synth --db: $((SECONDS - t0)) s for $count records"
}

measure() { # URL LABEL
  local token
  token=$("$strata" site token --db "$1" 2>/dev/null)
  "$strata" site serve --db "$1" --port "$port" --admin-group root >"$work/serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/login" && break; sleep 0.2; done
  echo "== $2, $count records (admin: every job)"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 bench/web_latency.py "http://127.0.0.1:$port" "$token" 20 "${STRATA_WEB_BENCH_MATRIX:-5}"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  kill "$pid"
  wait "$pid" || true
}

if [ "${STRATA_WEB_BENCH_SQLITE:-}" = none ]; then
  : # PostgreSQL only
elif [ -n "${STRATA_WEB_BENCH_SQLITE:-}" ]; then
  measure "sqlite:$STRATA_WEB_BENCH_SQLITE" "SQLite"
else
  sqlite_db="sqlite:$work/site.db"
  [ -e "$work/site.db" ] || fill "$sqlite_db"
  measure "$sqlite_db" "SQLite"
fi

if [ -n "${STRATA_WEB_BENCH_POSTGRES_URL:-}" ]; then
  measure "$STRATA_WEB_BENCH_POSTGRES_URL" "PostgreSQL"
elif [ "${STRATA_WEB_BENCH_POSTGRES:-1}" = 1 ]; then
  pg_url=$(cd tests/integration && python3 -c '
import site_postgres, sys
s = site_postgres.PostgresServer(); print(s.start()); sys.stderr.write(s.dir + "\n")' 2>"$work/pgdir")
  pgdir=$(cat "$work/pgdir")
  trap 'runuser -u postgres -- /usr/lib/postgresql/*/bin/pg_ctl -D "$pgdir/data" stop -m fast >/dev/null; rm -rf "$pgdir"' EXIT
  fill "$pg_url"
  measure "$pg_url" "PostgreSQL"
fi
