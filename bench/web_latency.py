"""Latency of the web interface's pages and API calls against a running `strata site serve`.
Usage: web_latency.py BASE_URL TOKEN [REPEATS]. Prints one line per request kind: median and
p95 in ms over REPEATS requests (after one warm-up each), as an admin and as a user."""
import json
import statistics
import sys
import time
import urllib.request


def get(base, token, path):
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        body = r.read()
    return time.perf_counter() - t, body


def measure(base, token, path, repeats):
    get(base, token, path)  # warm-up (and the site page's first computation)
    times = sorted(get(base, token, path)[0] * 1000 for _ in range(repeats))
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    return statistics.median(times), p95


def main():
    base, token = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    first = json.loads(get(base, token, "/api/jobs?per_page=1")[1])
    job = first["jobs"][0]
    user = job["owner"]
    t0 = time.perf_counter()
    get(base, token, "/api/site?days=29")  # a period nobody asked for yet: the whole report
    site_first = (time.perf_counter() - t0) * 1000
    cases = [
        ("jobs list page (HTML)", "/jobs"),
        ("jobs list API, all jobs, newest first", "/api/jobs?per_page=50"),
        ("jobs list API, one user", f"/api/jobs?per_page=50&user={user}"),
        ("jobs list API, one user, MPI % > 20, by CPU time", f"/api/jobs?per_page=50&user={user}&min_mpi=20&sort=cpu"),
        ("jobs list API, page 100", "/api/jobs?per_page=50&page=100"),
        ("job page (HTML with the report)", f"/job/{job['id']}"),
        ("job API", f"/api/job/{job['id']}"),
        ("user page API (26 weeks)", f"/api/user/weeks?weeks=26&user={user}"),
        ("site page (HTML)", "/site"),
        ("site page API (default period, kept fresh by the server)", "/api/site"),
    ]
    print(f"{'request':55s} {'median ms':>10s} {'p95 ms':>10s}")
    for name, path in cases:
        med, p95 = measure(base, token, path, repeats)
        print(f"{name:55s} {med:10.1f} {p95:10.1f}")
    print(f"{'site page API, a new period (the whole site report)':55s} {site_first:10.1f}")


if __name__ == "__main__":
    main()
