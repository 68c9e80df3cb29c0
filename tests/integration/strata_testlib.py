"""Shared helpers for the integration tests: real programs, real mpirun, one MPI flavor per run."""
import atexit
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

BUILD = os.path.abspath(os.environ.get("STRATA_BUILD", os.path.join(os.path.dirname(__file__), "../../build")))
FLAVOR = os.environ.get("STRATA_FLAVOR", "openmpi")
OTHER_FLAVOR = "mpich" if FLAVOR == "openmpi" else "openmpi"
STRATA = os.path.join(BUILD, "bin", "strata")
PROGRAMS = os.path.join(BUILD, "tests", FLAVOR)
TEST_MODULES = os.path.join(PROGRAMS, "modules")
CORE = os.path.join(BUILD, "lib", "strata", FLAVOR, "libstrata.so")
SOURCES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "programs"))

# Open MPI's session directories under a base of this test process's own: ctest runs suites side
# by side, and two mpiruns that start at once race to create and remove the shared
# /tmp/ompi.<host>.<uid> ("mkdir ... File exists", orte_init failed). Open like /tmp, for tests
# that run as another user.
if "OMPI_MCA_orte_tmpdir_base" not in os.environ:
    _session_base = tempfile.mkdtemp(prefix="strata-test-ompi-")
    os.chmod(_session_base, 0o1777)
    atexit.register(shutil.rmtree, _session_base, True)
    os.environ["OMPI_MCA_orte_tmpdir_base"] = _session_base



def line_of(name, marker):
    """The line of tests/programs/NAME that holds MARKER, which must be there once."""
    with open(os.path.join(SOURCES, name)) as f:
        lines = [n for n, text in enumerate(f, 1) if marker in text]
    if len(lines) != 1:
        raise AssertionError(f"{marker} in {name}: {lines}")
    return lines[0]

def base_env(**extra):
    env = dict(os.environ)
    for key in ("STRATA_TOOLS", "STRATA_CONFIG", "STRATA_DISABLE", "LD_PRELOAD"):
        env.pop(key, None)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "STRATA_MODULE_PATH": TEST_MODULES,
    })
    env.update(extra)
    return env


# Open MPI's mpirun, ending a job (as the hang watch's --on-hang abort and end_launcher end it),
# waits odls_base_sigkill_timeout (1 s) before the signal that ends the ranks, which spin in MPI
# meanwhile (MPICH's mpiexec ends them at once): suites that end a job in nearly every test do not
# wait for it. Not for tests of what a rank does on SIGTERM.
ENDS_WITHOUT_GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}


def program(name):
    return os.path.join(PROGRAMS, name)


def run(args, env=None, timeout=120, cwd=None):
    return subprocess.run(args, env=env or base_env(), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def mpirun(ranks):
    cmd = [f"mpirun.{FLAVOR}", "-np", str(ranks)]
    if FLAVOR == "openmpi":
        cmd[1:1] = ["--allow-run-as-root", "--oversubscribe"]
    return cmd


def strata_run(tools, prog_args, ranks=2, env=None, timeout=120, extra=()):
    args = [STRATA, "run", "-np", str(ranks)]
    if tools is not None:
        args += ["--tools", tools]
    args += list(extra) + ["--"] + prog_args
    return run(args, env=env, timeout=timeout)


def end_launcher(launcher, sig=signal.SIGTERM):
    """Ends a launcher started in a session of its own (start_new_session=True) and its ranks:
    SIG to the whole session, SIGKILL if it has not ended within 20 s. Its standard error, once
    (empty when read already)."""
    if launcher.poll() is None:
        os.killpg(launcher.pid, sig)
    try:
        _, err = launcher.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        _, err = launcher.communicate()
    except ValueError:  # ended and read already
        err = ""
    return err or ""


def run_until_ranks_are_gone(args, env, limit_s=60):
    """Runs a spool command (recover, ingest) until it no longer skips a job as still running.

    The launcher may return before its last rank is reaped, and recover leaves live jobs alone,
    so a cron job would simply try again; on a loaded machine that can take seconds."""
    deadline = time.monotonic() + limit_s
    while True:
        proc = run(args, env=env)
        if "still running" not in proc.stderr or time.monotonic() > deadline:
            return proc
        time.sleep(0.25)


def read_counts(path):
    """probe's per-rank file: 'FUNC calls sent received time_ns' lines and a few extra lines."""
    counts, extra = {}, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0].startswith("MPI_"):
                counts[parts[0]] = tuple(int(x) for x in parts[1:])
            else:
                extra.append(line.strip())
    return counts, extra


class StrataTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="strata-test-")
        self.out = self.tmp.name
        self.mounts = []

    def tearDown(self):
        for mount in reversed(self.mounts):
            subprocess.run(["umount", "-l", mount], check=True)
        self.tmp.cleanup()

    def tmpfs(self, name, options):
        """A tmpfs of our own at OUT/NAME, unmounted at the test's end; the test is skipped when
        mounting is refused."""
        path = os.path.join(self.out, name)
        os.makedirs(path)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs ({proc.stderr.strip()})")
        self.mounts.append(path)
        return path

    def fill(self, path, leave=0):
        """Fills the file system at PATH until it has no room, then frees LEAVE bytes."""
        filler = os.path.join(path, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError as e:
            self.assertEqual(e.errno, errno.ENOSPC, e)
        finally:
            os.close(fd)
        os.truncate(filler, os.path.getsize(filler) - leave)

    def assertRan(self, proc):
        self.assertEqual(proc.returncode, 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")

    def assertOneErrorLine(self, proc, fragment):
        """The run failed with exactly one 'strata: error:' line containing fragment."""
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata: error:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(fragment, lines[0])
        self.assertNotIn("ring:", proc.stdout, "the application must not have run")
