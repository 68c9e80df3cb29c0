"""The web interface (`strata site token`, `strata site serve`) on a real store (SQLite, and a
PostgreSQL server the test starts) filled by `strata site synth` + `ingest`, with records owned
by two real Unix users the test creates, and an admin in a Unix group. Headless Chromium
(Debian's, driven by playwright-core from web/node_modules) logs in as each; plain HTTP checks
authentication, isolation, escaping and parameter errors. Needs root (useradd, runuser)."""
import glob
import grp
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from site_postgres import PostgresServer, postgres_bindir
from strata_testlib import STRATA

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "../.."))
SAMPLE = os.path.join(SOURCE, "src/profiler/record/testdata/sample.json")
NODE_MODULES = os.path.join(SOURCE, "web/node_modules")
USER_A, USER_B, ADMIN = "strata-wta", "strata-wtb", "strata-wtc"
ADMIN_GROUP = "strata-wtadm"
DAY = 86400
created_users, created_groups = [], []


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root to create the test users")
    try:
        grp.getgrnam(ADMIN_GROUP)
    except KeyError:
        subprocess.run(["groupadd", ADMIN_GROUP], check=True)
        created_groups.append(ADMIN_GROUP)
    for name, extra in ((USER_A, []), (USER_B, []), (ADMIN, ["-G", ADMIN_GROUP])):
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", *extra, name], check=True)
            created_users.append(name)


def tearDownModule():
    for name in created_users:
        subprocess.run(["userdel", name], check=False)
    for name in created_groups:
        subprocess.run(["groupdel", name], check=False)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record(job_id, end, executable, argv=None):
    with open(SAMPLE) as f:
        rec = json.load(f)
    job = rec["job"]
    wall = job["wall_time_s"]
    job.update({"id": job_id, "executable": executable,
                "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - wall)),
                "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))})
    if argv is not None:
        job["argv"] = argv
    return rec


class WebTests:
    """Each backend class sets cls.url; setUpClass fills the store and starts the server."""

    @classmethod
    def open_store(cls):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="strata-web-")
        os.chmod(cls.tmp, 0o777)  # users issue their tokens into the store (SQLite: a file here)
        cls.url = cls.open_store()
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
        subprocess.run([STRATA, "site", "ingest", "--db", cls.url, spool], check=True,
                       capture_output=True)
        if cls.url.startswith("sqlite:"):
            os.chmod(cls.url[len("sqlite:"):], 0o666)
        cls.tokens = {name: cls.token_of(name) for name in (USER_A, USER_B, ADMIN)}
        cls.port = free_port()
        cls.base = f"http://127.0.0.1:{cls.port}"
        cls.log = open(os.path.join(cls.tmp, "serve.log"), "w+")
        cls.server = subprocess.Popen(
            [STRATA, "site", "serve", "--db", cls.url, "--port", str(cls.port),
             "--admin-group", ADMIN_GROUP], stdout=cls.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                urllib.request.urlopen(cls.base + "/login", timeout=5).read()
                break
            except OSError:
                if cls.server.poll() is not None:
                    break
                time.sleep(0.1)
        assert cls.server.poll() is None, cls.server_log()
        cls.jobs = {name: cls.api_as(ADMIN, f"/api/jobs?per_page=500&user={name}")["jobs"]
                    for name in (USER_A, USER_B)}

    @classmethod
    def tearDownClass(cls):
        server = getattr(cls, "server", None)
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        cls.close_store()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def close_store(cls):
        pass

    @classmethod
    def server_log(cls):
        cls.log.seek(0)
        return cls.log.read()

    @classmethod
    def token_of(cls, user, *extra):
        out = subprocess.run(["runuser", "-u", user, "--", STRATA, "site", "token", "--db",
                              cls.url, *extra], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    @classmethod
    def request(cls, path, token=None, data=None, headers=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        req = urllib.request.Request(cls.base + path, data=data, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers

    @classmethod
    def api_as(cls, user, path):
        status, body, _ = cls.request(path, cls.tokens[user])
        assert status == 200, (path, status, body)
        return json.loads(body)

    def job_of(self, user, executable=None):
        for j in self.jobs[user]:
            if executable is None or j["executable"] == executable:
                return j
        self.fail(f"no job of {user}")

    # ---- plain HTTP ----

    def test_store_holds_both_users_jobs_and_only_token_hashes(self):
        self.assertEqual(len(self.jobs[USER_A]), 21)  # 20 synthetic + the hostile one
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
        self.assertEqual(site["totals"]["jobs"], 41)  # 40 synthetic jobs and the hostile one
        for key in ("jobs", "mpi_calls", "mpi_bytes"):
            self.assertEqual(site["totals"][key], report["totals"][key], key)
        self.assertAlmostEqual(site["totals"]["cpu_time_s"], report["totals"]["cpu_time_s"], 3)
        self.assertEqual(site["users"], report["users"])
        self.assertEqual(site["critical_job_count"], report["critical_job_count"])
        self.assertEqual(sorted(j["id"] for j in site["critical_jobs"]),
                         sorted(j["job_id"] for j in report["critical_jobs"]))
        for key in ("by_user", "by_size", "by_cpu_class", "by_cpu_class_c", "by_cpu_class_fortran"):
            self.assertEqual([(l["label"], l["jobs"]) for l in site[key]],
                             [(l["label"], l["jobs"]) for l in report[key]], key)
        self.assertEqual([(r["name"], r["calls"]) for r in site["routines"]],
                         [(r["routine"], r["calls"]) for r in report["routines"]])

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

    # ---- the browser ----

    def test_browser_two_users_and_an_admin(self):
        if not os.path.exists(os.path.join(NODE_MODULES, "playwright-core")):
            self.skipTest("web/node_modules/playwright-core missing (npm ci in web/)")
        users = []
        for me, other in ((USER_A, USER_B), (USER_B, USER_A), (ADMIN, None)):
            own = self.job_of(me if me != ADMIN else USER_A, None if me != USER_A else "/home/a/<b>bold</b>")
            users.append({"name": me, "token": self.tokens[me], "own_job": own["id"],
                          "other_job": self.job_of(other)["id"] if other else own["id"]})
        env = dict(os.environ, NODE_PATH=NODE_MODULES)
        out = subprocess.run(["node", os.path.join(HERE, "web_browser.js"),
                              json.dumps({"base": self.base, "users": users})],
                             capture_output=True, text=True, env=env, timeout=240)
        self.assertEqual(out.returncode, 0, out.stderr + self.server_log())
        seen = {s["name"]: s for s in json.loads(out.stdout)}
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
            self.assert_charts(s["own_job_charts"], {"imbalance": 3, "sizes": 1})
            self.assert_charts(s["user_charts"], {"weeks-jobs": 2, "weeks-mpi": 1})
        self.assertEqual(seen[USER_A]["own_job_script_tags"], 0)  # the hostile argv stays text
        admin = seen[ADMIN]
        self.assertEqual(admin["errors"], [])
        self.assertEqual(sorted(admin["list_owners"]), [USER_A, USER_B])
        self.assertEqual(admin["site_status"], 200)
        self.assert_charts(admin["site_charts"], {"by-size": 3, "by-cpu-class": 3, "by-user": 3,
                                                  "languages": 2, "routines": 1, "groups": 2})

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
