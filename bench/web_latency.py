"""Latency of the web interface's pages and API calls against a running `strata site serve`.
Usage: web_latency.py BASE_URL TOKEN [REPEATS [MATRIX_REPEATS]]. Prints one line per request
kind: median and p95 in ms over REPEATS requests (after one warm-up each), as an admin; then
(MATRIX_REPEATS > 0, default 5) the jobs list with every sort order the page offers under each
kind of filter it offers, one line per filter: the slowest sort's median and which it was."""
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
    print(f"{'site page API, a period nobody asked for before':55s} {site_first:10.1f}")
    matrix_repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    if matrix_repeats > 0:
        jobs_matrix(base, token, user, matrix_repeats)


def jobs_matrix(base, token, user, repeats):
    """Every sort of the jobs page under each filter of its form (as an admin; a user's own
    view is the user= lines), dense and sparse ones, and the text search that matches nothing."""
    by_user = json.loads(get(base, token, "/api/site")[1]).get("by_user", [{"label": user}])
    smallest = min(by_user, key=lambda u: u.get("jobs", 0))["label"]
    newest = user  # the newest job's owner (2 % of the synthetic jobs)
    user = max(by_user, key=lambda u: u.get("jobs", 0))["label"]  # 21 % of them
    filters = [
        ("no filter", ""),
        ("the newest job's user", f"user={newest}"),
        ("busiest user", f"user={user}"),
        ("smallest user", f"user={smallest}"),
        ("language=Fortran", "language=Fortran"),
        ("MPI % > 20", "min_mpi=20"),
        ("MPI % > 90 (sparse)", "min_mpi=90"),
        ("ranks 1000-1100 (sparse)", "min_ranks=1000&max_ranks=1100"),
        ("last 1 day", "days=1"),
        ("busiest user, Fortran, MPI % > 20, 7 days", f"user={user}&language=Fortran&min_mpi=20&days=7"),
        ("busiest user, ranks >= 1500, MPI % > 40", f"user={user}&min_ranks=1500&min_mpi=40"),
        ("page 100", "page=100"),
        ("busiest user, page 100", f"user={user}&page=100"),
        ("text: app3", "q=app3"),
        ("busiest user, text: app3", f"user={user}&q=app3"),
        ("text matching nothing", "q=no-such-thing"),
    ]
    print(f"\n{'jobs list API, filter (5 sorts each)':55s} {'worst median':>12s} {'sort':>8s} {'all sorts':>10s}")
    for name, query in filters:
        results = []
        for sort in ("end", "end_asc", "mpi", "cpu", "ranks"):
            med, _ = measure(base, token, f"/api/jobs?per_page=50&sort={sort}&{query}", repeats)
            results.append((med, sort))
        worst = max(results)
        print(f"{name:55s} {worst[0]:12.1f} {worst[1]:>8s} {' '.join(f'{m:.0f}' for m, _ in results):>10s}")


if __name__ == "__main__":
    main()
