#!/usr/bin/env bash
# Page times of the web interface in headless Chromium (bench/web_pages_chromium.js: navigation
# until the page's data is drawn, as a browser asks) on a SQLite store of COUNT synthetic records
# (`strata site synth --db`, untimed), or on an existing store.
# Usage: bench/run_web_chromium.sh [COUNT] [WORKDIR]
#   STRATA_WEB_BENCH_SQLITE=PATH  use this existing SQLite store instead of filling one
#   STRATA_WEB_BENCH_VISITS=N     visits per page after the warm-up (default 5)
set -euo pipefail
source "$(dirname "$0")/lock.sh"
source "$(dirname "$0")/web_server.sh"
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
time_pages_in_chromium "$strata" "$db" "$port" "$work" web_pages_chromium.js --admin-group root
