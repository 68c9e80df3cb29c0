"""What the web suites (test_web*.py) share: the Unix users they create, records, a store filled
from a spool of files owned by those users, one `strata site serve` over it with each user's
token, plain HTTP requests as a user, and a run of a Chromium script (web_*_browser.js, on
web_testlib.js) whose output the test asserts on. Needs root (useradd, runuser)."""
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
import urllib.request

from strata_testlib import STRATA

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "../.."))
SAMPLE = os.path.join(SOURCE, "src/profiler/record/testdata/sample.json")
NODE_MODULES = os.path.join(SOURCE, "src/site/web/page/node_modules")
USER_A, USER_B, ADMIN = "strata-wta", "strata-wtb", "strata-wtc"
ADMIN_GROUP = "strata-wtadm"
DAY = 86400
created_users, created_groups = [], []


def create_users():
    """Two users and an admin (in ADMIN_GROUP); a suite's setUpModule."""
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


def remove_users():
    """What create_users made; a suite's tearDownModule."""
    while created_users:
        subprocess.run(["userdel", created_users.pop()], check=False)
    while created_groups:
        subprocess.run(["groupdel", created_groups.pop()], check=False)


def uid_of(name):
    return pwd.getpwnam(name).pw_uid


def closed_to_others(path):
    """The first directory above path that other users may not enter, or None."""
    folder = os.path.dirname(os.path.realpath(path))
    while True:
        if not os.stat(folder).st_mode & 0o001:
            return folder
        if folder == os.path.dirname(folder):
            return None
        folder = os.path.dirname(folder)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record(job_id, end, executable, argv=None):
    """The sample record (hostile strings in its argv and environment) as job `job_id`."""
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


def write_spool(spool, records):
    """Writes {file name: (record, owner uid)} into `spool`, each file owned by its uid."""
    os.makedirs(spool, exist_ok=True)
    for name, (rec, uid) in records.items():
        path = os.path.join(spool, name)
        with open(path, "w") as f:
            json.dump(rec, f)
        os.chown(path, uid, -1)


def ingest(url, spool):
    subprocess.run([STRATA, "site", "ingest", "--db", url, spool], check=True,
                   capture_output=True)
    if url.startswith("sqlite:"):
        os.chmod(url[len("sqlite:"):], 0o666)  # users issue their tokens into it


def start_server(url, port, log):
    """`strata site serve` on `port`, once it answers; the process."""
    server = subprocess.Popen([STRATA, "site", "serve", "--db", url, "--port", str(port),
                               "--admin-group", ADMIN_GROUP], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=5).read()
            break
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(0.1)
    return server


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kw):
        return None


class ServedStore:
    """A test class's store (cls.url, files under cls.tmp) and its server: serve() in
    setUpClass starts it and issues cls.tokens; it stops at the class's cleanup."""

    @classmethod
    def make_tmp(cls, prefix):
        """cls.tmp, a directory every user may write to, removed at the class's cleanup."""
        cls.tmp = tempfile.mkdtemp(prefix=prefix)
        os.chmod(cls.tmp, 0o777)  # users issue their tokens into the store (SQLite: a file here)
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)

    @classmethod
    def serve_records(cls, prefix, records, users=(USER_A, USER_B, ADMIN), jobs_as=ADMIN):
        """A SQLite store of `records` (called with USER_A's and USER_B's uids and the time now)
        served, and cls.jobs: its jobs by record id as `jobs_as` lists them."""
        cls.make_tmp(prefix)
        cls.url = "sqlite:" + os.path.join(cls.tmp, "site.db")
        spool = os.path.join(cls.tmp, "spool")
        write_spool(spool, records(uid_of(USER_A), uid_of(USER_B), int(time.time())))
        ingest(cls.url, spool)
        cls.serve(users)
        cls.jobs = {j["record_id"]: j for j in cls.api_as(jobs_as, "/api/jobs?per_page=500")["jobs"]}

    @classmethod
    def serve(cls, users=(USER_A, USER_B, ADMIN)):
        blocked = closed_to_others(STRATA)
        if blocked:
            raise AssertionError(
                f"the web tests run {STRATA} as other users, who may not enter {blocked} "
                f"(mode {os.stat(blocked).st_mode & 0o777:o}): check out Strata where every user "
                "may enter (`mktemp -d` makes a directory only its owner may)")
        cls.tokens = {name: cls.token_of(name) for name in users}
        cls.port = free_port()
        cls.base = f"http://127.0.0.1:{cls.port}"
        cls.log = open(os.path.join(cls.tmp, "serve.log"), "w+")
        cls.server = start_server(cls.url, cls.port, cls.log)
        cls.addClassCleanup(cls.stop_serving)  # also when the rest of the set-up fails
        assert cls.server.poll() is None, cls.server_log()

    @classmethod
    def stop_serving(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.log.close()

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
    def raw(cls, path, headers=None, data=None):
        """(status, body bytes as sent, headers); no redirect followed."""
        req = urllib.request.Request(cls.base + path, data=data, headers=dict(headers or {}))
        try:
            with urllib.request.build_opener(NoRedirect).open(req, timeout=60) as r:
                return r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers

    @classmethod
    def request(cls, path, token=None, data=None, headers=None):
        """(status, body text, headers) with `token` as Bearer; redirects followed."""
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

    def run_browser(self, script, scenario):
        """What the Chromium script `script` (beside this file) printed as JSON, given
        `scenario`; the test is skipped where playwright-core is not installed."""
        if not os.path.exists(os.path.join(NODE_MODULES, "playwright-core")):
            self.skipTest("src/site/web/page/node_modules/playwright-core missing (npm ci there)")
        out = subprocess.run(["node", os.path.join(HERE, script), json.dumps(scenario)],
                             capture_output=True, text=True,
                             env=dict(os.environ, NODE_PATH=NODE_MODULES), timeout=240)
        self.assertEqual(out.returncode, 0, out.stderr + self.server_log())
        return json.loads(out.stdout)

    def browse_jobs_once(self, script):
        """browse_once with USER_A's and the admin's tokens and cls.jobs's ids by record id."""
        return self.browse_once(script, {
            "base": self.base, "token": self.tokens[USER_A], "admin_token": self.tokens[ADMIN],
            "jobs": {k: j["id"] for k, j in self.jobs.items()}})

    def browse_once(self, script, scenario):
        """run_browser's output, one visit for every test of the class that asks; no page
        error on the way."""
        if getattr(type(self), "seen", None) is None:
            type(self).seen = self.run_browser(script, scenario)
        self.assertEqual(self.seen["errors"], [])
        return self.seen
