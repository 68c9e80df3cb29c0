"""The web interface (`strata site token`, `strata site serve`) on a real store (SQLite, and a
PostgreSQL server the test starts) filled by `strata site synth` + `ingest`, with records owned
by two real Unix users the test creates, and an admin in a Unix group. Headless Chromium
(Debian's, driven by playwright-core from src/site/web/page/node_modules) logs in as each;
plain HTTP checks authentication, isolation, escaping and parameter errors. Needs root
(useradd, runuser)."""
import glob
import json
import os
import pwd
import subprocess
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from site_postgres import PostgresServer, postgres_bindir
from strata_testlib import STRATA
from test_site import make_record
from web_testlib import (ADMIN, DAY, USER_A, USER_B, ServedStore, create_users, ingest, record,
                         remove_users)


def setUpModule():
    create_users()


def tearDownModule():
    remove_users()


def prometheus_parser():
    """The Prometheus project's own reader of the text format (Debian's python3-prometheus-client,
    which scripts/setup.sh installs; an interpreter of its own may not see Debian's packages)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        import sys
        sys.path.append("/usr/lib/python3/dist-packages")
        from prometheus_client.parser import text_string_to_metric_families
    return text_string_to_metric_families


# The record's "mpi_t" section (docs/job-record.md) as the profile writes it under Open MPI.
# Who talks to whom in that job (4 ranks): 0 -> 1 the heaviest, 2 -> 3 of two kinds, and one
# one-sided kind (in by_kind alone: 3 gets from 0).
COMMUNICATION = {
    "pairs": [{"from": 0, "to": 1, "messages": 100, "bytes": 8000},
              {"from": 2, "to": 3, "messages": 8, "bytes": 190}],
    "by_kind": {"point_to_point": [{"from": 0, "to": 1, "messages": 100, "bytes": 8000},
                                   {"from": 2, "to": 3, "messages": 3, "bytes": 30}],
                "persistent": [{"from": 2, "to": 3, "messages": 5, "bytes": 160}],
                "get": [{"from": 3, "to": 0, "messages": 2, "bytes": 48}]},
    # The collectives by communicator: the world, and ranks 1 and 3 whose rank 3 sends most.
    "collectives": {"communicators": [
        {"members": "0-3", "size": 4, "members_reported": 4, "calls": 40, "bytes": 320,
         "calls_min": 10, "calls_max": 10,
         "bytes_per_member": {"min": 80, "mean": 80.0, "max": 80, "min_rank": 0, "max_rank": 0},
         "per_member": [{"rank": r, "calls": 10, "bytes": 80} for r in range(4)]},
        {"members": "1,3", "size": 2, "members_reported": 2, "calls": 6, "bytes": 40,
         "calls_min": 3, "calls_max": 3,
         "bytes_per_member": {"min": 8, "mean": 20.0, "max": 32, "min_rank": 1, "max_rank": 3},
         "per_member": [{"rank": 1, "calls": 3, "bytes": 8}, {"rank": 3, "calls": 3, "bytes": 32}]}],
        "unlisted": {"calls": 2, "bytes": 16}}}
MPI_T = {
    "problem": "", "pvars_exposed": 46, "cvars_exposed": 1116,
    "pvars": [{"name": "pml_ob1_unexpected_msgq_length",
               "description": "Unexpected messages <img src=x onerror=alert(2)> per peer",
               "class": "size", "binding": "communicator", "datatype": "unsigned", "elements": 4,
               "ranks": 4, "unread": "", "sum": 7, "min": 0, "min_rank": 0, "max": 7, "max_rank": 1}],
    "cvars": {"btl_vader_eager_limit": "4096"}, "cvars_set": ["btl_vader_eager_limit"],
}


class WebTests(ServedStore):
    """Each backend class sets cls.url; setUpClass fills the store and starts the server."""

    @classmethod
    def open_store(cls):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.make_tmp("strata-web-")
        cls.url = cls.open_store()
        cls.addClassCleanup(cls.close_store)
        spool = os.path.join(cls.tmp, "spool")
        subprocess.run([STRATA, "site", "synth", "--count", "40", "--users", "4", "--no-chown",
                        "--out", spool], check=True, capture_output=True)
        uid = {n: pwd.getpwnam(n).pw_uid for n in (USER_A, USER_B)}
        for i, path in enumerate(sorted(glob.glob(os.path.join(spool, "*.json")))):
            os.chown(path, uid[USER_A if i % 2 == 0 else USER_B], -1)
        now = int(time.time())
        # A's job with hostile strings (the sample's argv and environment hold <script> tags).
        hostile = os.path.join(spool, "hostile.json")
        with open(hostile, "w") as f:
            json.dump(record("test:hostile", now - DAY, "/home/a/<b>bold</b>",
                             ["./x", "<script>alert(1)</script>", "a&b"]), f)
        os.chown(hostile, uid[USER_A], -1)
        # A's job with the MPI library's own variables (MPI_T), one description hostile.
        with_mpi_t = os.path.join(spool, "mpi_t.json")
        with open(with_mpi_t, "w") as f:
            json.dump(dict(record("test:mpi_t", now - DAY + 60, "/home/a/mpi_t"), mpi_t=MPI_T,
                           communication=COMMUNICATION), f)
        os.chown(with_mpi_t, uid[USER_A], -1)
        # A's program run at 1, 2, 4 and 8 ranks, six times each; its last run at 4 ranks is
        # 60 % slower in MPI_Allreduce: a model on the trends page and a flagged regression.
        cls.scaling_ids = []
        for ranks in (1, 2, 4, 8):
            for n in range(6):
                slow = 1.6 if (ranks, n) == (4, 5) else 1.0
                jitter = 1 + 0.005 * ((n * 37 + ranks) % 5 - 2)
                allreduce = (0.01 + 0.02 * ranks) * jitter * slow
                rec = make_record(f"scale:{ranks}:{n}", USER_A, uid[USER_A], ranks,
                                  2.0 * jitter + allreduce,
                                  {"MPI_Allreduce": (50 * ranks, allreduce * ranks, 400 * ranks),
                                   "MPI_Send": (10 * ranks, 0.05 * ranks * jitter, 80 * ranks)},
                                  now - 3 * DAY + (n * 4 + ranks) * 600, executable="/home/a/solver")
                rec["routines"]["MPI_Allreduce"]["size_histogram"] = [[8, 50 * ranks]]
                path = os.path.join(spool, f"scale-{ranks}-{n}.json")
                with open(path, "w") as f:
                    json.dump(rec, f)
                os.chown(path, uid[USER_A], -1)
        ingest(cls.url, spool)
        cls.serve()
        cls.jobs = {name: cls.api_as(ADMIN, f"/api/jobs?per_page=500&user={name}")["jobs"]
                    for name in (USER_A, USER_B)}

    @classmethod
    def close_store(cls):
        pass

    def job_of(self, user, executable=None):
        for j in self.jobs[user]:
            if executable is None or j["executable"] == executable:
                return j
        self.fail(f"no job of {user}")

    # ---- plain HTTP ----

    def test_store_holds_both_users_jobs_and_only_token_hashes(self):
        self.assertEqual(len(self.jobs[USER_A]), 46)  # 20 synthetic, the hostile one, the MPI_T one, 24 scaling
        self.assertEqual(len(self.jobs[USER_B]), 20)
        for token in self.tokens.values():
            self.assertRegex(token, r"^strata_[0-9a-f]{64}$")

    def test_authentication_failures(self):
        status, body, _ = self.request("/api/jobs")
        self.assertEqual(status, 401)
        self.assertIn("log in first", json.loads(body)["error"])
        status, _, _ = self.request("/api/jobs", "strata_" + "0" * 64)
        self.assertEqual(status, 401)
        status, _, _ = self.request("/api/jobs", headers={"Cookie": "strata_session=nonsense"})
        self.assertEqual(status, 401)
        status, body, _ = self.request("/login", data=b"token=wrong")
        self.assertEqual(status, 401)
        self.assertIn("Unknown, expired or revoked token", body)
        # Pages send a browser without a session to the login form.
        status, body, _ = self.request("/jobs")
        self.assertEqual(status, 200)
        self.assertIn('name="token"', body)

    def test_login_sets_a_strict_http_only_cookie(self):
        opener = urllib.request.build_opener(urllib.request.HTTPErrorProcessor)
        req = urllib.request.Request(
            self.base + "/login",
            data=urllib.parse.urlencode({"token": self.tokens[USER_A]}).encode())

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kw):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(req, timeout=30)
            self.fail("login did not redirect")
        except urllib.error.HTTPError as e:
            self.assertEqual(e.code, 303)
            cookie = e.headers["Set-Cookie"]
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Strict", cookie)
        value = cookie.split(";")[0]
        status, body, _ = self.request("/api/me", headers={"Cookie": value})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {"user": USER_A, "uid": pwd.getpwnam(USER_A).pw_uid,
                                            "admin": False})

    def test_users_see_only_their_own_jobs(self):
        for me, other in ((USER_A, USER_B), (USER_B, USER_A)):
            listed = self.api_as(me, "/api/jobs?per_page=500")
            self.assertEqual({j["owner"] for j in listed["jobs"]}, {me})
            self.assertEqual(listed["total"], len(self.jobs[me]))
            theirs = self.job_of(other)["id"]
            status, body, _ = self.request(f"/api/job/{theirs}", self.tokens[me])
            self.assertEqual(status, 404, body)
            status, body, _ = self.request(f"/job/{theirs}", self.tokens[me])
            self.assertEqual(status, 404)
            self.assertNotIn(self.job_of(other)["record_id"], body)
            mine = self.job_of(me)["id"]
            self.assertEqual(self.api_as(me, f"/api/job/{mine}")["job"]["owner"], me)
            status, body, _ = self.request(f"/api/jobs?user={other}", self.tokens[me])
            self.assertEqual(status, 403)
            status, body, _ = self.request(f"/api/user/weeks?user={other}", self.tokens[me])
            self.assertEqual(status, 403)
            status, body, _ = self.request("/api/site", self.tokens[me])
            self.assertEqual(status, 403)
            self.assertEqual(self.request("/site", self.tokens[me])[0], 403)
        everyone = self.api_as(ADMIN, "/api/jobs?per_page=500")
        self.assertEqual({j["owner"] for j in everyone["jobs"]}, {USER_A, USER_B})
        self.assertTrue(self.api_as(ADMIN, "/api/me")["admin"])

    def test_filters_sort_and_paging_are_done_by_the_server(self):
        a = self.jobs[USER_A]
        by_mpi = self.api_as(USER_A, "/api/jobs?sort=mpi&per_page=500")["jobs"]
        self.assertEqual([j["mpi_percent"] for j in by_mpi],
                         sorted((j["mpi_percent"] for j in a), reverse=True))
        page2 = self.api_as(USER_A, "/api/jobs?per_page=5&page=2")
        self.assertEqual([j["id"] for j in page2["jobs"]], [j["id"] for j in a[5:10]])
        self.assertEqual(page2["total"], len(a))
        over = self.api_as(USER_A, "/api/jobs?min_mpi=20&per_page=500")["jobs"]
        self.assertEqual(len(over), sum(1 for j in a if j["mpi_percent"] > 20))
        big = self.api_as(USER_A, "/api/jobs?min_ranks=64&per_page=500")["jobs"]
        self.assertEqual(len(big), sum(1 for j in a if j["ranks"] >= 64))
        found = self.api_as(USER_A, "/api/jobs?q=" + urllib.parse.quote("<b>bold"))["jobs"]
        self.assertEqual([j["executable"] for j in found], ["/home/a/<b>bold</b>"])

    def test_site_figures_are_the_report_over_the_same_whole_days(self):
        # The site page reads the small day tables (day_owners, day_shapes, day_mpi); the CLI
        # report over the same days reads day_classes and counts critical jobs from job rows.
        site = self.api_as(ADMIN, "/api/site?days=30")
        self.assertEqual(site["from"] % DAY, 0)
        self.assertEqual(site["to"] - site["from"], 30 * DAY)
        self.assertLessEqual(site["to"] - DAY, time.time())
        self.assertGreater(site["to"], time.time())
        day = lambda t: time.strftime("%Y-%m-%d", time.gmtime(t))
        out = subprocess.run([STRATA, "site", "report", "--db", self.url, "--from", day(site["from"]),
                              "--to", day(site["to"]), "--format", "json"],
                             check=True, capture_output=True, text=True)
        report = json.loads(out.stdout)["site"]
        self.assertEqual(site["totals"]["jobs"], 66)  # 40 synthetic, the hostile one, the MPI_T one, 24 scaling
        # One JSON form: every figure of the report's site part under the same key, with the
        # same value (sums in another order may differ in the last bits), and only the page's
        # own keys besides.
        self.assertEqual(set(site) - set(report),
                         {"days", "from", "to", "by_account", "by_partition", "critical_job_rows"})
        self.assert_same_figures(site, report, "site")
        self.assertGreater(len(report["routines"]), 0)
        self.assertGreater(report["totals"]["mpi_percent"], 0)
        self.assertEqual([j["id"] for j in site["critical_job_rows"]],
                         [j["job_id"] for j in report["critical_jobs"]])

    def assert_same_figures(self, seen, expected, where):
        if isinstance(expected, dict):
            self.assertIsInstance(seen, dict, where)
            for key, value in expected.items():
                self.assertIn(key, seen, f"{where}.{key}")
                self.assert_same_figures(seen[key], value, f"{where}.{key}")
        elif isinstance(expected, list):
            self.assertEqual(len(seen), len(expected), where)
            for i, (a, b) in enumerate(zip(seen, expected)):
                self.assert_same_figures(a, b, f"{where}[{i}]")
        elif isinstance(expected, float):
            self.assertAlmostEqual(seen, expected, delta=1e-9 * max(1.0, abs(expected)), msg=where)
        else:
            self.assertEqual(seen, expected, where)

    def test_bad_parameters_are_400_with_a_clear_message(self):
        for query, words in (("sort=sideways", "parameter sort must be one of"),
                             ("page=0", "parameter page must be an integer from 1"),
                             ("per_page=abc", "parameter per_page must be an integer"),
                             ("min_mpi=200", "parameter min_mpi must be a number from 0"),
                             ("days=1x", "parameter days must be an integer"),
                             ("q=" + "x" * 300, "parameter q is longer than 256 characters")):
            status, body, _ = self.request("/api/jobs?" + query, self.tokens[USER_A])
            self.assertEqual(status, 400, query)
            self.assertIn(words, json.loads(body)["error"])
        status, body, _ = self.request("/api/user/weeks?weeks=-1", self.tokens[USER_A])
        self.assertEqual(status, 400)
        self.assertEqual(self.request("/api/job/99999999", self.tokens[ADMIN])[0], 404)

    def test_strings_from_jobs_are_escaped(self):
        job = self.job_of(USER_A, "/home/a/<b>bold</b>")
        status, body, headers = self.request(f"/job/{job['id']}", self.tokens[USER_A])
        self.assertEqual(status, 200)
        self.assertNotIn("<script>alert(1)</script>", body)
        self.assertNotIn("<script>steal()", body)  # the environment of the sample record
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", body)
        self.assertNotIn("<b>bold</b>", body)
        self.assertIn("script-src 'self'", headers["Content-Security-Policy"])
        # The API hands the string over as JSON data, exactly.
        detail = self.api_as(USER_A, f"/api/job/{job['id']}")
        self.assertIn("<script>alert(1)</script>", detail["argv"])

    def test_job_page_shows_the_mpi_libraries_own_variables(self):
        job = self.job_of(USER_A, "/home/a/mpi_t")
        status, body, _ = self.request(f"/job/{job['id']}", self.tokens[USER_A])
        self.assertEqual(status, 200)
        self.assertIn("MPI library variables (MPI_T)", body)
        self.assertIn("<td>pml_ob1_unexpected_msgq_length</td>", body)
        self.assertIn("&lt;img src=x onerror=alert(2)&gt;", body)
        self.assertNotIn("<img src=x", body)
        self.assertIn("<td>btl_vader_eager_limit</td><td>4096</td>", body)

    def test_job_api_gives_the_stored_collectives_and_every_pair(self):
        job = self.api_as(USER_A, f"/api/job/{self.job_of(USER_A, '/home/a/mpi_t')['id']}")
        c = job["collectives"]
        self.assertEqual([(x["members"], x["calls"], x["bytes"], x["imbalance"])
                          for x in c["communicators"]], [("0-3", 40, 320, 1.0), ("1,3", 6, 40, 1.6)])
        self.assertEqual(c["communicators"][1]["per_member"],
                         [{"rank": 1, "calls": 3, "bytes": 8}, {"rank": 3, "calls": 3, "bytes": 32}])
        self.assertEqual(c["communicators"][1]["bytes_per_member"],
                         {"min": 8, "min_rank": 1, "mean": 20.0, "max": 32, "max_rank": 3})
        self.assertEqual(c["unlisted"], {"calls": 2, "bytes": 16})
        m = job["partners"]["matrix"]
        self.assertEqual(sorted((m["from"][i], m["to"][i], m["kinds"][m["kind"][i]], m["bytes"][i])
                                for i in range(len(m["from"]))),
                         [(0, 1, "point_to_point", 8000), (2, 3, "persistent", 160),
                          (2, 3, "point_to_point", 30), (3, 0, "get", 48)])
        # A job whose record has no communication section has neither.
        other = self.api_as(USER_A, f"/api/job/{self.job_of(USER_A, '/home/a/<b>bold</b>')['id']}")
        self.assertNotIn("collectives", other)
        self.assertNotIn("partners", other)

    def test_revoked_token_no_longer_logs_in(self):
        token = self.token_of("root")
        self.assertEqual(self.request("/api/me", token)[0], 200)
        subprocess.run([STRATA, "site", "token", "--db", self.url, "--revoke"], check=True,
                       capture_output=True)
        self.assertEqual(self.request("/api/me", token)[0], 401)

    def test_root_issues_a_token_for_a_user_and_only_root_may(self):
        out = subprocess.run([STRATA, "site", "token", "--db", self.url, "--user", USER_B],
                             check=True, capture_output=True, text=True)
        self.assertEqual(self.api_as_token(out.stdout.strip(), "/api/me")["user"], USER_B)
        refused = subprocess.run(["runuser", "-u", USER_B, "--", STRATA, "site", "token", "--db",
                                  self.url, "--user", USER_A], capture_output=True, text=True)
        self.assertEqual(refused.returncode, 2)
        self.assertIn("only root may use --user", refused.stderr)
        self.assertEqual(refused.stdout, "")

    def api_as_token(self, token, path):
        status, body, _ = self.request(path, token)
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def test_trends_api_models_history_and_isolation(self):
        models = self.api_as(USER_A, "/api/user/models")
        prog = [p for p in models["programs"] if p["executable"] == "/home/a/solver"][0]
        self.assertTrue(prog["modelled"])
        self.assertEqual(prog["ranks"], [1, 2, 4, 8])
        wall = [m for m in models["models"]
                if m["program_id"] == prog["program_id"] and m["routine"] == "wall"][0]
        self.assertEqual([m["ranks"] for m in wall["medians"]], [1, 2, 4, 8])
        history = self.api_as(USER_A, f"/api/user/history?program={prog['program_id']}")
        at4 = [s for s in history["sizes"] if s["ranks"] == 4][0]["runs"]
        self.assertEqual(len(at4), 6)
        self.assertEqual([r["flagged"] for r in at4], [False] * 5 + [True])
        # The trends page's one request: the models and, for the programs it draws, what their
        # history charts need (the complete runs' points, the flagged runs').
        trends = self.api_as(USER_A, f"/api/user/trends?program={prog['program_id']}")
        self.assertEqual(trends["programs"], models["programs"])
        self.assertEqual([h["program_id"] for h in trends["histories"]], [prog["program_id"]])
        chart4 = [s for s in trends["histories"][0]["sizes"] if s["ranks"] == 4][0]
        self.assertEqual(chart4["end"], [r["end"] for r in at4 if r["complete"]])
        self.assertEqual(chart4["wall_s"], [r["wall_s"] for r in at4 if r["complete"]])
        self.assertEqual(chart4["flagged"], [{"end": at4[5]["end"], "wall_s": at4[5]["wall_s"]}])
        self.assertEqual((chart4["shown"], chart4["all_runs"]), (6, 6))
        status, _, _ = self.request("/api/user/trends?user=" + USER_A, self.tokens[USER_B])
        self.assertEqual(status, 403)
        status, _, _ = self.request(f"/api/user/history?program={prog['program_id']}",
                                    self.tokens[USER_B])
        self.assertEqual(status, 404, "B cannot read A's program")
        status, _, _ = self.request("/api/user/models?user=" + USER_A, self.tokens[USER_B])
        self.assertEqual(status, 403)
        # B sees the models of B's own programs only (the synthetic jobs make a few).
        self.assertEqual({m["owner"] for m in self.api_as(USER_B, "/api/user/models")["models"]}
                         - {USER_B}, set())
        flagged = [j for j in self.jobs[USER_A] if j["record_id"] == "scale:4:5"][0]
        detail = self.api_as(USER_A, f"/api/job/{flagged['id']}")
        self.assertEqual(detail["regression"]["moved"][0]["routine"], "MPI_Allreduce")
        self.assertEqual(detail["previous"]["job"]["record_id"], "scale:4:4")
        rows = {r["name"]: r for r in detail["previous"]["routines"]}
        self.assertAlmostEqual(rows["MPI_Allreduce"]["time_s"] / rows["MPI_Allreduce"]["previous_time_s"],
                               1.6 * (1 + 0.005 * ((5 * 37 + 4) % 5 - 2)) / (1 + 0.005 * ((4 * 37 + 4) % 5 - 2)),
                               places=6)

    def test_metrics_are_the_prometheus_text_format(self):
        text_string_to_metric_families = prometheus_parser()
        status, body, headers = self.request("/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        families = {f.name: f for f in text_string_to_metric_families(body)}
        value = lambda name: families[name].samples[0].value
        self.assertEqual(value("strata_site_jobs"), 66)
        # prometheus_client names counters without their _total.
        self.assertEqual(families["strata_site_jobs_ingested"].type, "counter")
        self.assertEqual(value("strata_site_jobs_ingested"), 66)
        self.assertEqual(value("strata_site_records_quarantined"), 0)
        self.assertGreaterEqual(value("strata_site_ingests"), 1)
        self.assertEqual(value("strata_site_regressions"), 1)
        self.assertGreater(value("strata_site_ingest_lag_max_seconds"), 0)
        self.assertLessEqual(value("strata_site_seconds_since_last_ingest"), 3600)
        # The format's own rules, strictly (names, escapes, one TYPE before the samples, ...).
        check = subprocess.run([os.path.join(os.path.dirname(STRATA), "strata_site_test"),
                                "--gtest_filter=Prometheus.*"], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout)
        for line in body.splitlines():
            self.assertRegex(line, r"^(# (HELP|TYPE) [a-z_:]+ .+|[a-z_:]+ [0-9.e+-]+)$")

    # ---- the browser ----

    def test_browser_two_users_and_an_admin(self):
        users = []
        for me, other in ((USER_A, USER_B), (USER_B, USER_A), (ADMIN, None)):
            own = self.job_of(me if me != ADMIN else USER_A, None if me != USER_A else "/home/a/<b>bold</b>")
            users.append({"name": me, "token": self.tokens[me], "own_job": own["id"],
                          "other_job": self.job_of(other)["id"] if other else own["id"]})
        flagged = [j for j in self.jobs[USER_A] if j["record_id"] == "scale:4:5"][0]
        users[0]["flagged_job"] = flagged["id"]
        users[0]["mpi_t_job"] = self.job_of(USER_A, "/home/a/mpi_t")["id"]
        seen = {s["name"]: s for s in self.run_browser("web_browser.js",
                                                       {"base": self.base, "users": users})}
        for me in (USER_A, USER_B):
            s = seen[me]
            self.assertTrue(s["redirected_to_login"])
            self.assertEqual(s["after_login"], "/jobs")
            self.assertEqual(s["errors"], [])
            self.assertEqual(s["list_owners"], [me])
            self.assertEqual(s["list_rows"], len(self.jobs[me]))
            self.assertIn(f"{len(self.jobs[me])} jobs", s["total"])
            self.assertEqual(s["cookie"], [{"name": "strata_session", "httpOnly": True,
                                            "sameSite": "Strict"}])
            self.assertEqual(s["own_job_status"], 200)
            self.assertEqual(s["other_job_status"], 404)
            self.assertEqual(s["other_job_api_status"], 404)
            self.assertEqual(s["site_status"], 403)
            self.assertEqual(s["user_status"], 200)
            # A comparison where the job has an earlier run of its program at its size.
            own = self.api_as(me, f"/api/job/{users[[u['name'] for u in users].index(me)]['own_job']}")
            self.assert_charts(s["own_job_charts"], {"imbalance": 3, "sizes": 1,
                                                     **({"compare-chart": 2} if own["previous"] else {})})
        models = self.api_as(USER_A, "/api/user/models")
        solver = [p for p in models["programs"] if p["executable"] == "/home/a/solver"][0]["program_id"]
        expected = self.trend_charts(USER_A)
        self.assertEqual(expected[f"history-{solver}"], 5)  # 4 sizes and the flagged regressions
        self.assert_charts_ids(seen[USER_A]["user_charts"], expected)
        history = [c for c in seen[USER_A]["user_charts"] if c["id"] == f"history-{solver}"][0]
        self.assertEqual(history["last_dataset_points"], 1, "one flagged regression")
        # The program's name with the sample's hostile arguments, shown as text.
        solver_names = [t for t in seen[USER_A]["trend_programs"] if t.startswith("/home/a/solver ")]
        self.assertEqual(len(solver_names), 1)
        self.assertIn("<script>alert(1)</script>", solver_names[0])
        self.assert_charts_ids(seen[USER_B]["user_charts"], self.trend_charts(USER_B))
        a = seen[USER_A]
        self.assertEqual(a["flagged_job_status"], 200)
        self.assertIn("Regression: ", a["flagged_job_regression"])
        self.assertIn("MPI_Allreduce", a["flagged_job_regression"])
        self.assert_charts(a["flagged_job_charts"], {"imbalance": 3, "sizes": 1, "compare-chart": 2})
        self.assertIn("MPI_Allreduce", a["flagged_job_compare_rows"])
        # The MPI library's variables as the browser shows them, the hostile description as text.
        self.assertEqual(a["mpi_t_job_status"], 200)
        self.assertRegex(a["mpi_t_job_text"], r"pml_ob1_unexpected_msgq_length\s+size\s+communicator\s+7\s+0\s+0\s+7\s+1\s+4")
        self.assertIn("Unexpected messages <img src=x onerror=alert(2)> per peer", a["mpi_t_job_text"])
        self.assertEqual(a["mpi_t_job_images"], 0)
        # Who talks to whom, from the store: the heaviest pair first; the page's heat map, the
        # only one (the report it carries leaves its own out), which sums the two-sided kinds
        # as the report's did.
        self.assertEqual(a["mpi_t_job_partners"], {
            "first": ["0", "1", "100", "8000", "point to point 100 (8000 B)"], "rows": 3,
            "last": ["3", "0", "2", "48", "get 2 (48 B)"],
            "whole": "The record lists every pair: the heat map has the whole matrix. To the heat map.",
            "map": 1, "cells": 3, "report_maps": 0,
            "two_sided": ["rank 0 to rank 1: 8000 bytes in 100 messages",
                          "rank 2 to rank 3: 190 bytes in 8 messages"]})
        # The collectives by communicator, and a bar per member of each.
        self.assertEqual(a["mpi_t_job_collectives"]["rows"], [
            ["0-3", "4", "10", "40", "320", "80 / 80.0 / 80", "0", "1.00"],
            ["1,3", "2", "3", "6", "40", "8 / 20.0 / 32", "3", "1.60"]])
        self.assertEqual(a["mpi_t_job_collectives"]["bars"], 6)
        self.assertEqual(seen[USER_A]["own_job_script_tags"], 0)  # the hostile argv stays text
        admin = seen[ADMIN]
        self.assertEqual(admin["errors"], [])
        self.assertEqual(sorted(admin["list_owners"]), [USER_A, USER_B])
        self.assertEqual(admin["site_status"], 200)
        self.assert_charts(admin["site_charts"], {"by-size": 3, "by-cpu-class": 3, "by-user": 3,
                                                  "languages": 2, "routines": 1, "groups": 2})
        # Each bar named (a figure read under a wrong key leaves its label undefined).
        self.assertEqual({c["id"]: c["missing_labels"] for c in admin["site_charts"]},
                         {c["id"]: 0 for c in admin["site_charts"]})
        self.assertRegex(admin["site_totals"], r"^Last 28 whole days \(UTC, .*\): [\d,]+ jobs? of "
                                               r"\d+ users?, [\d,]+ CPU hours, MPI [\d,.]+ %\.$")
        critical = self.api_as(ADMIN, "/api/site")["critical_job_rows"]
        self.assertEqual(admin["site_critical_links"], [f"/job/{j['id']}" for j in critical])

    def trend_charts(self, user):
        """The charts the trends page draws for `user`: the weeks, and a scaling and a history
        chart (a dataset per size and one of flagged regressions) per modelled program, the
        eight with the most runs."""
        models = self.api_as(user, "/api/user/models")
        charts = {"weeks-jobs": 2, "weeks-mpi": 1}
        for p in sorted((p for p in models["programs"] if p["modelled"]),
                        key=lambda p: -p["runs"])[:8]:
            history = self.api_as(user, f"/api/user/history?program={p['program_id']}")
            charts[f"scaling-{p['program_id']}"] = 5
            charts[f"history-{p['program_id']}"] = len(history["sizes"]) + 1
        return charts

    def assert_charts_ids(self, charts, datasets):
        """The charts and their datasets; points only where a dataset must have them."""
        by_id = {c["id"]: c for c in charts}
        self.assertEqual(sorted(by_id), sorted(datasets))
        for cid, n in datasets.items():
            self.assertEqual(by_id[cid]["datasets"], n, cid)
            self.assertGreater(by_id[cid]["width"], 0, cid)

    def assert_charts(self, charts, datasets):
        by_id = {c["id"]: c for c in charts}
        self.assertEqual(sorted(by_id), sorted(datasets))
        for cid, n in datasets.items():
            c = by_id[cid]
            self.assertEqual(c["datasets"], n, cid)
            self.assertGreater(c["points"], 0, cid)
            self.assertGreater(c["width"], 0, cid)
            self.assertGreater(c["height"], 0, cid)


class SqliteWebTest(WebTests, unittest.TestCase):
    @classmethod
    def open_store(cls):
        return "sqlite:" + os.path.join(cls.tmp, "site.db")


@unittest.skipIf(postgres_bindir() is None, "PostgreSQL is not installed")
class PostgresWebTest(WebTests, unittest.TestCase):
    @classmethod
    def open_store(cls):
        cls.pg = PostgresServer()
        return cls.pg.start()

    @classmethod
    def close_store(cls):
        cls.pg.stop()


if __name__ == "__main__":
    unittest.main()
