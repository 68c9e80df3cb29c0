#!/usr/bin/env bash
# The web's job page for a job at the record's bounds of communication (100,000 ranks: 4,096
# point-to-point pairs and 2,048 one-sided ones, 48 communicators of 32 members each listed),
# in headless Chromium (bench/web_communication_chromium.js): the page's data shown, the size of
# its API answer, one zoom of the heat map drawn again. A SQLite store of that one job.
# Usage: bench/run_web_communication.sh [WORKDIR]
#   STRATA_WEB_BENCH_VISITS=N     visits after the warm-up (default 5)
set -euo pipefail
source "$(dirname "$0")/lock.sh"
source "$(dirname "$0")/web_server.sh"
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d /tmp/strata-web-communication.XXXXXX)}
strata=${STRATA_BUILD:-$PWD/build}/bin/strata
port=${STRATA_WEB_BENCH_PORT:-18779}
mkdir -p "$work/spool"
export STRATA_SITE_DB=
db=$work/site.db
rm -f "$db"
python3 - "$work/spool/large.json" <<'PY'
import json, random, sys, time
sys.path.insert(0, "tests/integration")
from test_site import make_record
ranks, now = 100000, int(time.time())
rec = make_record("large:1", "bench", 0, ranks, 100.0, {"MPI_Sendrecv": (600, 30.0, 45150)},
                  now - 3600, executable="/bench/large")
rnd, pairs = random.Random(3), {}
while len(pairs) < 4096:  # a 3-D stencil's partners, scattered over the job
    f = rnd.randrange(ranks)
    t = (f + rnd.choice([1, -1, 46, -46, 2116, -2116])) % ranks
    pairs[(f, t)] = {"from": f, "to": t, "messages": rnd.randrange(1, 100),
                     "bytes": rnd.randrange(1, 10**6)}
p2p = sorted(pairs.values(), key=lambda p: (p["from"], p["to"]))
communicators = []
for n in range(48):
    members = [{"rank": n * 32 + i, "calls": 10, "bytes": 100 * (i + 1)} for i in range(32)]
    b = [m["bytes"] for m in members]
    communicators.append({"members": f"{n * 32}-{n * 32 + 31}", "size": 32, "members_reported": 32,
                          "calls": 320, "bytes": sum(b), "calls_min": 10, "calls_max": 10,
                          "bytes_per_member": {"min": min(b), "mean": sum(b) / 32, "max": max(b),
                                               "min_rank": n * 32, "max_rank": n * 32 + 31},
                          "per_member": members})
rec["communication"] = {
    "pairs": p2p, "by_kind": {"point_to_point": p2p, "put": [dict(p, bytes=p["bytes"] // 2) for p in p2p[:2048]]},
    "unlisted": {"pairs": 500000, "messages": 10**7, "bytes": 10**9},
    "collectives": {"communicators": communicators, "unlisted": {"calls": 100, "bytes": 1000}}}
rec["job"]["uid"], rec["job"]["user"] = 0, "root"
with open(sys.argv[1], "w") as f:
    json.dump(rec, f)
PY
"$strata" site ingest --db "sqlite:$db" "$work/spool" >/dev/null
time_pages_in_chromium "$strata" "$db" "$port" "$work" web_communication_chromium.js
