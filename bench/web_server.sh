# Sourced by the web benchmarks: time the pages of a store in headless Chromium.
# time_pages_in_chromium STRATA DB PORT WORK SCRIPT [SERVE_ARGS...]: serves the SQLite store DB on
# PORT (its log in WORK/serve.log, the server stopped when the benchmark ends), waits for it to
# answer, then runs bench/SCRIPT with the address, a token and STRATA_WEB_BENCH_VISITS (default 5).
time_pages_in_chromium() {
  local strata=$1 db=$2 port=$3 work=$4 script=$5
  shift 5
  local token
  token=$("$strata" site token --db "sqlite:$db" 2>/dev/null)
  "$strata" site serve --db "sqlite:$db" --port "$port" "$@" >"$work/serve.log" 2>&1 &
  web_server_pid=$!
  trap 'kill "$web_server_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/login" && break; sleep 0.2; done
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  NODE_PATH=$PWD/src/site/web/page/node_modules node "bench/$script" \
    "http://127.0.0.1:$port" "$token" "${STRATA_WEB_BENCH_VISITS:-5}"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
