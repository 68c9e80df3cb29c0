"""The web interface under ordinary conditions that test_web.py's store does not meet: browsers'
own Accept-Encoding, a second server on a taken port, sessions ended by logging out, pasted
tokens, strings thousands of characters long, lists paged past their end and the site page's
period. One SQLite store (a few synthetic jobs and hand-made ones owned by test_web.py's users),
one server; headless Chromium (web_pages_browser.js) logs in as a user and as an admin. Needs
root (useradd, runuser)."""
import glob
import gzip
import json
import os
import subprocess
import time
import unittest
import urllib.parse
import urllib.request

from strata_testlib import STRATA
from test_site import make_record
from web_testlib import (ADMIN, DAY, USER_A, USER_B, ServedStore, create_users, ingest, record,
                         remove_users, uid_of, write_spool)

# What Chromium sends with every request (its own choice; a page cannot change it).
BROWSER_ACCEPT_ENCODING = "gzip, deflate, br, zstd"
LONG_EXECUTABLE = "/home/a/" + "x" * 4400
LONG_ARGUMENT = "y" * 20000


def setUpModule():
    create_users()


def tearDownModule():
    remove_users()


class WebPagesTest(ServedStore, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.make_tmp("strata-web-pages-")
        cls.url = "sqlite:" + os.path.join(cls.tmp, "site.db")
        spool = os.path.join(cls.tmp, "spool")
        subprocess.run([STRATA, "site", "synth", "--count", "12", "--users", "2", "--no-chown",
                        "--out", spool], check=True, capture_output=True)
        uid = {n: uid_of(n) for n in (USER_A, USER_B)}
        for i, path in enumerate(sorted(glob.glob(os.path.join(spool, "*.json")))):
            os.chown(path, uid[USER_A if i % 2 == 0 else USER_B], -1)
        now = int(time.time())
        records = {"long.json": record("test:long", now - DAY, LONG_EXECUTABLE,
                                       ["./x", LONG_ARGUMENT])}
        # A program with a long path run at four sizes: a model and a history on the trends page.
        for ranks in (1, 2, 4, 8):
            for n in range(3):
                records[f"scale-{ranks}-{n}.json"] = make_record(
                    f"scale:{ranks}:{n}", USER_A, uid[USER_A], ranks, 2.0 + 0.01 * n,
                    {"MPI_Allreduce": (50 * ranks, 0.02 * ranks, 400 * ranks)},
                    now - 2 * DAY + (n * 4 + ranks) * 600, executable=LONG_EXECUTABLE + "/solver")
        write_spool(spool, {name: (rec, uid[USER_A]) for name, rec in records.items()})
        ingest(cls.url, spool)
        cls.serve()
        cls.jobs = cls.api_as(USER_A, "/api/jobs?per_page=500")["jobs"]

    def job(self, record_id):
        return [j for j in self.jobs if j["record_id"] == record_id][0]

    def browse(self):
        """What web_pages_browser.js saw as USER_A and as the admin: one visit for every test
        that asks."""
        # As pasted from a terminal, with a space after (a password field drops line ends).
        return self.browse_once("web_pages_browser.js", {
            "base": self.base, "token": self.tokens[USER_A] + " ",
            "admin_token": self.tokens[ADMIN], "long_job": self.job("test:long")["id"]})

    # ---- compression ----

    def test_answers_to_browsers_are_gzip_never_slow_brotli(self):
        plain = self.raw("/api/jobs?per_page=500", {"Authorization": "Bearer " + self.tokens[USER_A]})
        self.assertEqual(plain[0], 200)
        self.assertIsNone(plain[2]["Content-Encoding"])
        for path in ("/assets/strata-web.js", "/api/jobs?per_page=500"):
            status, body, headers = self.raw(path, {
                "Authorization": "Bearer " + self.tokens[USER_A],
                "Accept-Encoding": BROWSER_ACCEPT_ENCODING})
            self.assertEqual(status, 200, path)
            self.assertEqual(headers["Content-Encoding"], "gzip", path)
            self.assertIn("Accept-Encoding", headers["Vary"])
            if path.startswith("/api"):
                self.assertEqual(gzip.decompress(body), plain[1])
        # A client that refuses gzip, or knows only Brotli, gets the body as it is.
        for accept in ("br", "gzip;q=0, br", "identity"):
            status, body, headers = self.raw("/api/jobs?per_page=500", {
                "Authorization": "Bearer " + self.tokens[USER_A], "Accept-Encoding": accept})
            self.assertIsNone(headers["Content-Encoding"], accept)
            self.assertEqual(body, plain[1], accept)

    def test_browser_receives_gzip(self):
        seen = self.browse()
        self.assertEqual(seen["encodings"], {"script": "gzip", "jobs_api": "gzip"})

    # ---- the port ----

    def test_second_server_on_a_taken_port_fails_naming_the_port(self):
        with open(os.path.join(self.tmp, "second.log"), "w+") as log:
            second = subprocess.Popen([STRATA, "site", "serve", "--db", self.url, "--port",
                                       str(self.port)], stdout=log, stderr=subprocess.STDOUT)
            try:
                returncode = second.wait(timeout=60)
            except subprocess.TimeoutExpired:
                second.terminate()
                second.wait(timeout=30)
                returncode = None
            log.seek(0)
            message = log.read()
        self.assertEqual(returncode, 1, "a second server started on a port in use: " + message)
        self.assertEqual(message.count("\n"), 1, message)
        self.assertIn(f"port {self.port} is already in use", message)
        # The first server answers every request still.
        for _ in range(20):
            self.assertEqual(self.api_as(USER_A, "/api/me")["user"], USER_A)

    def test_monitor_on_a_taken_port_fails_naming_the_port(self):
        rounds = os.path.join(self.tmp, "rounds.jsonl")
        open(rounds, "w").close()
        proc = subprocess.run([STRATA, "monitor", "serve", rounds, "--port", str(self.port)],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn(f"port {self.port} is already in use", proc.stderr)

    # ---- sessions ----

    def login(self, token):
        """The session cookie ("name=value") that logging in with `token` sets."""
        status, body, headers = self.raw("/login", data=urllib.parse.urlencode(
            {"token": token}).encode())
        self.assertEqual(status, 303, body)
        self.assertEqual(headers["Location"], "/jobs")
        return headers["Set-Cookie"].split(";")[0]

    def test_logout_ends_the_session_on_the_server(self):
        token = self.tokens[USER_A]
        cookie = self.login(token)
        other = self.login(token)  # another browser of the same user
        self.assertTrue(cookie.startswith("strata_session="))
        self.assertNotIn(token, cookie, "the cookie holds the token itself")
        self.assertNotEqual(cookie, other)
        me = lambda c: self.raw("/api/me", {"Cookie": c})[0]
        self.assertEqual(me(cookie), 200)
        status, _, headers = self.raw("/logout", {"Cookie": cookie}, data=b"")
        self.assertEqual(status, 303)
        self.assertIn("Max-Age=0", headers["Set-Cookie"])
        # A copy of the cookie kept after logging out opens nothing.
        self.assertEqual(me(cookie), 401)
        status, _, headers = self.raw("/jobs", {"Cookie": cookie})
        self.assertEqual((status, headers["Location"]), (303, "/login"))
        self.assertEqual(me(other), 200)
        # Revoking the token ends the sessions it opened.
        token = self.token_of(USER_B)
        cookie = self.login(token)
        self.assertEqual(me(cookie), 200)
        subprocess.run(["runuser", "-u", USER_B, "--", STRATA, "site", "token", "--db", self.url,
                        "--revoke"], check=True, capture_output=True)
        self.assertEqual(me(cookie), 401)
        self.tokens[USER_B] = self.token_of(USER_B)

    def test_pasted_token_with_blanks_and_bearer_in_any_case(self):
        token = self.tokens[USER_A]
        for pasted in (token + "\n", " " + token + " \r\n", "\t" + token):
            self.assertEqual(self.raw("/api/me", {"Cookie": self.login(pasted)})[0], 200)
        for header in ("bearer " + token, "BEARER " + token, "Bearer  " + token):
            status, body, _ = self.raw("/api/me", {"Authorization": header})
            self.assertEqual(status, 200, header)
            self.assertEqual(json.loads(body)["user"], USER_A)
        self.assertEqual(self.raw("/api/me", {"Authorization": "Basic " + token})[0], 401)
        status, body, _ = self.raw("/login", data=urllib.parse.urlencode(
            {"token": token[:-1] + " "}).encode())
        self.assertEqual(status, 401)

    def test_browser_logs_in_with_a_pasted_token_and_out_for_good(self):
        seen = self.browse()
        self.assertEqual(seen["after_login"], "/jobs")
        self.assertEqual(seen["after_logout"], "/login")
        self.assertEqual(seen["old_cookie_after_logout"], 401)

    # ---- long strings ----

    def test_long_strings_leave_pages_as_wide_as_the_window(self):
        seen = self.browse()
        for name, w in seen["widths"].items():
            self.assertLessEqual(w["scroll"], w["window"], name)
        # Shortened in the list, the whole path on demand (the title).
        self.assertIn(LONG_EXECUTABLE, seen["executable_titles"])
        self.assertIn(LONG_EXECUTABLE + "/solver", seen["executable_titles"])
        self.assertTrue(any(LONG_EXECUTABLE in t for t in seen["program_titles"]))
        # The report's argument: its start, and the whole of it at the button.
        self.assertEqual(len(seen["report_cut"]), 2)  # the executable and the arguments
        self.assertTrue(all(n <= 301 for n in seen["report_cut"]))
        self.assertIn(LONG_ARGUMENT, seen["report_expanded"][-1])

    def test_long_strings_reach_the_page_whole(self):
        detail = self.api_as(USER_A, f"/api/job/{self.job('test:long')['id']}")
        self.assertEqual(detail["job"]["executable"], LONG_EXECUTABLE)
        self.assertEqual(detail["argv"], ["./x", LONG_ARGUMENT])

    # ---- lists ----

    def test_lists_count_to_the_end_and_stop_at_the_last_page(self):
        seen = self.browse()["lists"]
        n = len(self.jobs)
        self.assertEqual(n, 19)  # 6 synthetic, the long one, 12 runs of the program
        self.assertEqual(seen["first"]["total"], "19 jobs, page 1 of 4")
        self.assertEqual(seen["first"]["rows"], 5)
        self.assertEqual(seen["first"]["links"], [["next", 2], ["last (4)", 4]])
        self.assertEqual(seen["past"]["total"], "19 jobs: page 99 is past the last page, 4")
        self.assertEqual(seen["past"]["rows"], 0)
        self.assertEqual(seen["past"]["links"], [["first", 1], ["previous", 4]])
        self.assertEqual(seen["one"]["total"], "1 job, page 1 of 1")
        self.assertEqual(seen["one"]["links"], [])

    def test_count_counts_every_match(self):
        for query, expected in (("", 19), ("q=test:long", 1), ("min_ranks=4", 6 + sum(
                1 for j in self.jobs if j["ranks"] >= 4 and not j["record_id"].startswith("scale:")))):
            self.assertEqual(self.api_as(USER_A, "/api/jobs/count?" + query)["total"], expected, query)
        admin = self.api_as(ADMIN, "/api/jobs/count")["total"]
        self.assertEqual(admin, self.api_as(ADMIN, "/api/jobs?per_page=1")["total"])
        self.assertGreater(admin, 19)
        status, _, _ = self.raw(f"/api/jobs/count?user={USER_B}",
                                {"Authorization": "Bearer " + self.tokens[USER_A]})
        self.assertEqual(status, 403)

    def test_site_page_shows_the_period_asked_for(self):
        site = self.browse()["site"]
        self.assertTrue(site["default"]["totals"].startswith("Last 28 whole days"), site)
        self.assertEqual(site["default"]["chosen"], "28")
        self.assertTrue(site["asked"]["totals"].startswith("Last 7 whole days"), site)
        self.assertEqual(site["asked"]["chosen"], "7")
        self.assertEqual(site["chosen"]["url"], "/site?days=90")
        self.assertTrue(site["chosen"]["totals"].startswith("Last 90 whole days"), site)

    # ---- facts ----

    def test_favicon_is_served(self):
        status, body, headers = self.raw("/favicon.ico")  # browsers ask without a session
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "image/x-icon")
        self.assertEqual(body[:6], bytes([0, 0, 1, 0, 1, 0]))  # an icon directory of one image
        self.assertEqual((body[6], body[7]), (16, 16))
        self.assertEqual(len(body), 22 + 40 + 16 * 16 * 4 + 16 * 4)

    def test_monitor_view_has_the_sites_security_headers(self):
        names = ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options",
                 "Referrer-Policy")
        site = self.raw("/login")[2]
        rounds = os.path.join(self.tmp, "live.jsonl")
        with open(rounds, "w") as f:
            f.write('{"round": 1}\n')
        monitor = subprocess.Popen([STRATA, "monitor", "serve", rounds, "--port", "0"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = monitor.stdout.readline().split()[1]
            for path in ("", "view.js", "rounds", "metrics"):
                with urllib.request.urlopen(url + path, timeout=30) as r:
                    self.assertEqual(r.status, 200, path)
                    for name in names:
                        self.assertEqual(r.headers[name], site[name], (path, name))
        finally:
            monitor.terminate()
            monitor.communicate(timeout=30)


if __name__ == "__main__":
    unittest.main()
