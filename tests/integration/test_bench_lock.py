"""The benchmarks' advisory lock (bench/lock.sh): two of Strata's benchmarks never overlap, and no
benchmark stops, pauses or renices a process it did not start."""
import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

BENCH = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../bench"))

# A benchmark in miniature: takes the lock, says it started, leaves a child running past its own
# end (as a server a benchmark starts may), and ends when told to.
MINI_BENCH = """#!/usr/bin/env bash
set -euo pipefail
source "{bench}/lock.sh"
sleep 60 &
echo $! >"$1/child.pid"
touch "$1/started"
while [[ ! -e $1/release ]]; do sleep 0.05; done
"""


def wait_for(path, limit_s=30):
    deadline = time.monotonic() + limit_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)


def lock_is_free(lock):
    return subprocess.run(["flock", "--nonblock", lock, "true"]).returncode == 0


class BenchLock(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="strata-bench-lock-")
        self.lock = os.path.join(self.dir, "lock")
        self.script = os.path.join(self.dir, "run_mini.sh")
        with open(self.script, "w") as f:
            f.write(MINI_BENCH.format(bench=BENCH))
        self.env = dict(os.environ, STRATA_BENCH_LOCK=self.lock)
        self.env.pop("STRATA_BENCH_LOCKED", None)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_held_while_the_benchmark_runs_and_not_by_what_it_leaves_behind(self):
        proc = subprocess.Popen(["bash", self.script, self.dir], env=self.env)
        child = None
        try:
            wait_for(os.path.join(self.dir, "started"))
            with open(os.path.join(self.dir, "child.pid")) as f:
                child = int(f.read())
            self.assertFalse(lock_is_free(self.lock), "a running benchmark must hold the lock")
            open(os.path.join(self.dir, "release"), "w").close()
            self.assertEqual(proc.wait(timeout=30), 0)
            os.kill(child, 0)  # the benchmark's child still runs
            self.assertTrue(lock_is_free(self.lock), "a benchmark's leftover child held the lock")
        finally:
            proc.kill()
            proc.wait()
            if child:
                try:
                    os.kill(child, 9)
                except ProcessLookupError:
                    pass

    def test_second_benchmark_waits_and_says_so(self):
        with open(self.lock, "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # another benchmark of ours, running
            open(os.path.join(self.dir, "release"), "w").close()
            proc = subprocess.Popen(["bash", self.script, self.dir], env=self.env,
                                    stderr=subprocess.PIPE, text=True)
            try:
                line = proc.stderr.readline()
                self.assertIn("waiting for another Strata benchmark", line)
                self.assertFalse(os.path.exists(os.path.join(self.dir, "started")))
            except BaseException:
                proc.kill()
                raise
        # the lock's holder closed it: the benchmark now runs
        self.assertEqual(proc.wait(timeout=30), 0)
        proc.stderr.close()
        self.assertTrue(os.path.exists(os.path.join(self.dir, "started")))
        with open(os.path.join(self.dir, "child.pid")) as f:
            try:
                os.kill(int(f.read()), 9)
            except ProcessLookupError:
                pass

    def test_every_benchmark_takes_it(self):
        scripts = sorted(glob.glob(os.path.join(BENCH, "run_*.sh")))
        self.assertTrue(scripts)
        for path in scripts:
            with open(path) as f:
                self.assertTrue('source "$(dirname "$0")/lock.sh"' in f.read(), path)

    def test_no_benchmark_stops_or_renices_other_processes(self):
        signals = re.compile(r"kill\s+-(STOP|TSTP|SIGSTOP|SIGTSTP|CONT|19|20)\b|\brenice\b|"
                             r"\bpkill\b|\bkillall\b|\bionice\b")
        for path in sorted(glob.glob(os.path.join(BENCH, "*.sh"))):
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    self.assertIsNone(signals.search(line), f"{path}:{number}: {line.strip()}")


if __name__ == "__main__":
    unittest.main()
