"""Latency of the web interface's pages and API calls against a running `strata site serve`.
Usage: web_latency.py BASE_URL TOKEN [REPEATS [MATRIX_REPEATS]]. Every request asks as Chromium
does (Accept-Encoding: gzip, deflate, br, zstd; STRATA_WEB_BENCH_ACCEPT_ENCODING overrides it,
"" for none) and the time is until the last byte of the answer as sent. Prints one line per
request kind: median and p95 in ms over REPEATS requests (after one warm-up each), as an admin; then
(MATRIX_REPEATS > 0, default 5) the jobs list with every sort order the page offers under each
kind of filter it offers, one line per filter: the slowest sort's median and which it was."""
import gzip
import json
import os
import statistics
import sys
import time
import urllib.request

ACCEPT_ENCODING = os.environ.get("STRATA_WEB_BENCH_ACCEPT_ENCODING", "gzip, deflate, br, zstd")


def get(base, token, path):
    """(seconds until the whole answer arrived, the body decoded)."""
    headers = {"Authorization": "Bearer " + token}
    if ACCEPT_ENCODING:
        headers["Accept-Encoding"] = ACCEPT_ENCODING
    req = urllib.request.Request(base + path, headers=headers)
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        body = r.read()
        encoding = r.headers.get("Content-Encoding")
    elapsed = time.perf_counter() - t
    if encoding == "gzip":
        body = gzip.decompress(body)
    elif encoding not in (None, "identity"):
        body = None  # (Brotli: no decoder in Python's library; the lists below need none)
    return elapsed, body


def get_plain(base, token, path):
    """The body of an answer the benchmark reads, whatever its encoding."""
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read()


def largest_program(base, token, user):
    """(id, runs) of `user`'s program with the most runs: its history is the largest answer."""
    programs = json.loads(get_plain(base, token, f"/api/user/models?user={user}"))["programs"]
    if not programs:
        return None
    p = max(programs, key=lambda p: p.get("runs", 0))
    return p["program_id"], p.get("runs", 0)


def measure(base, token, path, repeats):
    get(base, token, path)  # warm-up (and the site page's first computation)
    times = sorted(get(base, token, path)[0] * 1000 for _ in range(repeats))
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    return statistics.median(times), p95


def main():
    base, token = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    first = json.loads(get_plain(base, token, "/api/jobs?per_page=1"))
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
        ("jobs list API, 500 a page (the largest page)", "/api/jobs?per_page=500"),
        ("job page (HTML with the report)", f"/job/{job['id']}"),
        ("job API", f"/api/job/{job['id']}"),
        ("user page API (26 weeks)", f"/api/user/weeks?weeks=26&user={user}"),
        ("site page (HTML)", "/site"),
        ("site page API (default period, kept fresh by the server)", "/api/site"),
        ("script bundle (Chart.js and the pages)", "/assets/strata-web.js"),
    ]
    program = largest_program(base, token, user)
    if program:
        cases.append((f"program history API ({program[1]} runs)",
                      f"/api/user/history?user={user}&program={program[0]}"))
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
    by_user = json.loads(get_plain(base, token, "/api/site")).get("by_user", [{"label": user}])
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
        ("last 7 days", "days=7"),
        ("exit code not 0 (none in synthetic records)", "exit=nonzero"),
        ("busiest user, Fortran, MPI % > 20, 7 days", f"user={user}&language=Fortran&min_mpi=20&days=7"),
        ("busiest user, ranks >= 1500, MPI % > 40", f"user={user}&min_ranks=1500&min_mpi=40"),
        ("page 100", "page=100"),
        ("busiest user, page 100", f"user={user}&page=100"),
        ("text: app3", "q=app3"),
        ("busiest user, text: app3", f"user={user}&q=app3"),
        ("text matching nothing", "q=no-such-thing"),
    ]
    print(f"\n{'jobs list API, filter (7 sorts each)':55s} {'worst median':>12s} {'sort':>9s} {'all sorts':>10s}")
    for name, query in filters:
        results = []
        for sort in ("end", "end_asc", "mpi", "cpu", "ranks", "mpi_hours", "exit"):
            med, _ = measure(base, token, f"/api/jobs?per_page=50&sort={sort}&{query}", repeats)
            results.append((med, sort))
        worst = max(results)
        print(f"{name:55s} {worst[0]:12.1f} {worst[1]:>9s} {' '.join(f'{m:.0f}' for m, _ in results):>10s}")


if __name__ == "__main__":
    main()
