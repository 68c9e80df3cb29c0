#!/usr/bin/env bash
# Page times of the web interface in headless Chromium (bench/web_pages_chromium.js: navigation
# until the page's data is drawn, as a browser asks) on a SQLite store of COUNT synthetic records
# (`strata site synth --db`, untimed), or on an existing store.
# Usage: bench/run_web_chromium.sh [COUNT] [WORKDIR]
#   STRATA_WEB_BENCH_SQLITE=PATH  use this existing SQLite store instead of filling one
#   STRATA_WEB_BENCH_VISITS=N     visits per page after the warm-up (default 5)
set -euo pipefail
source "$(dirname "$0")/lock.sh"
cd "$(dirname "$0")/.."
count=${1:-200000}
work=${2:-$(mktemp -d /tmp/strata-web-chromium.XXXXXX)}
strata=${STRATA_BUILD:-$PWD/build}/bin/strata
port=${STRATA_WEB_BENCH_PORT:-18778}
mkdir -p "$work"
export STRATA_SITE_DB=
db=${STRATA_WEB_BENCH_SQLITE:-$work/site.db}
if [ ! -e "$db" ]; then
  t0=$SECONDS
  "$strata" site synth --count "$count" --db "sqlite:$db" >/dev/null
  echo "synth --db: $((SECONDS - t0)) s for $count records"
fi
token=$("$strata" site token --db "sqlite:$db" 2>/dev/null)
"$strata" site serve --db "sqlite:$db" --port "$port" --admin-group root >"$work/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/login" && break; sleep 0.2; done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
NODE_PATH=$PWD/src/site/web/page/node_modules node bench/web_pages_chromium.js \
  "http://127.0.0.1:$port" "$token" "${STRATA_WEB_BENCH_VISITS:-5}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
