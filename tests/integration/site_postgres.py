"""A throwaway PostgreSQL server for the site tests: initdb into a temporary directory as the
unprivileged `postgres` user, listening only on a unix socket in that directory, removed at stop.
"""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile


def postgres_bindir():
    """The directory of Debian's initdb/pg_ctl, or None when PostgreSQL is not installed."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(candidate, "initdb")):
            return candidate
    found = shutil.which("initdb")
    return os.path.dirname(found) if found else None


class PostgresServer:
    """start() -> URL for `--db`; stop() removes the data directory."""

    def __init__(self, user="postgres"):
        self.bindir = postgres_bindir()
        self.user = user
        self.dir = None

    def _as_user(self, *cmd, **kw):
        if os.geteuid() == 0:
            cmd = ("runuser", "-u", self.user, "--") + cmd
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="strata-pg-")
        data = os.path.join(self.dir, "data")
        if os.geteuid() == 0:
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o755)
        self._as_user(os.path.join(self.bindir, "initdb"), "-D", data, "-A", "trust",
                      "-U", "strata", "--no-sync", "-E", "UTF8")
        opts = f"-c listen_addresses='' -k {self.dir} -c fsync=off -p 5432"
        self._as_user(os.path.join(self.bindir, "pg_ctl"), "-D", data, "-o", opts, "-w",
                      "-l", os.path.join(self.dir, "log"), "start")
        self._as_user(os.path.join(self.bindir, "createdb"), "-h", self.dir, "-U", "strata",
                      "site")
        return self.url("site")

    def url(self, db):
        return f"postgresql://strata@/{db}?host={self.dir}"

    def createdb(self, name):
        self._as_user(os.path.join(self.bindir, "createdb"), "-h", self.dir, "-U", "strata", name)
        return self.url(name)

    def stop(self):
        if self.dir is None:
            return
        try:
            self._as_user(os.path.join(self.bindir, "pg_ctl"), "-D",
                          os.path.join(self.dir, "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


if __name__ == "__main__":
    # For manual runs and benchmarks: print the URL, wait for Enter, stop.
    server = PostgresServer()
    print(server.start(), flush=True)
    try:
        input()
    finally:
        server.stop()


class PostgresStores:
    """A TestCase mixin (before the TestCase in the bases): one server for the class, and a fresh
    database of it for each test from new_db()."""

    server = None
    databases = 0

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = PostgresServer()
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        super().tearDownClass()

    def new_db(self):
        cls = type(self)
        cls.databases += 1
        return self.server.createdb(f"{cls.__name__.lower()}{cls.databases}")
