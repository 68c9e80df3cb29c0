"""Every module that writes something, with its output path full, read-only, missing or a file:
the application runs as it would without the tool (exit code, output, within a bound), and each
module says in a few lines what happened to its output, never a raw library message; where a
module keeps its output elsewhere, it is there. A killed rank and a killed tool rank end the job
with the launcher's exit code, within the bound, and leave what the modules promise; a killed
tool rank is named as such."""
import glob
import json
import os
import re
import subprocess
import tempfile
import unittest

from strata_testlib import FLAVOR, STRATA, StrataTestCase, base_env, mpirun, program, run
from test_combinations import BOUND_S, run_bounded
from test_overhead import synthetic_model

ITER = 3

# Module -> (its stack entry, the variable naming its output path, whether that path is a
# directory the module makes, or a file it writes).
WRITERS = {
    "profile": ("profile", "STRATA_SPOOL", "dir"),
    "overhead": ("overhead", "STRATA_SPOOL", "dir"),
    "trace": ("trace", "STRATA_TRACE_DIR", "dir"),
    "monitor": ("monitor:fanout=2", "STRATA_MONITOR_OUT", "file"),
}


class OutputPaths(StrataTestCase):
    def setUp(self):
        super().setUp()
        native = run(mpirun(2) + [program("ring_c"), str(ITER)])
        self.assertRan(native)
        self.native = native.stdout

    def full_fs(self):
        path = self.tmpfs("full", "size=64k")
        self.fill(path)
        return path

    def read_only_fs(self):
        return self.tmpfs("ro", "ro,size=64k")

    def place(self, condition):
        """An output location under CONDITION: a directory to put the module's path in."""
        if condition == "full":
            return self.full_fs()
        if condition == "read-only":
            return self.read_only_fs()
        if condition == "missing":
            return os.path.join(self.out, "no", "such", "dir")
        if condition == "a file":
            path = os.path.join(self.out, "plain-file")
            with open(path, "w") as f:
                f.write("keep me\n")
            return path
        raise ValueError(condition)

    def check(self, module, condition):
        tools, variable, _ = WRITERS[module]
        where = self.place(condition)
        target = os.path.join(where, "out") if condition != "a file" else where
        if module == "monitor" and condition == "a file":
            target = os.path.join(where, "rounds.jsonl")  # a file inside a file
        home = tempfile.mkdtemp(prefix="home-", dir=self.out)
        env = base_env(HOME=home, **{variable: target})
        if module == "overhead":
            model = os.path.join(self.out, "model.json")
            with open(model, "w") as f:
                json.dump(synthetic_model(1e-3), f)
            env["STRATA_MODEL"] = model
        rc, out, err, hung = run_bounded(
            [STRATA, "run", "-np", "2", "--tools", tools, "--", program("ring_c"), str(ITER)],
            env, self.out)
        label = f"{module} with its output {condition}"
        self.assertFalse(hung, f"{label}: no end within {BOUND_S} s")
        self.assertEqual(rc, 0, f"{label}: {err}")
        self.assertEqual(out, self.native, label)
        lines = [l for l in err.splitlines() if l.strip()]
        self.assertFalse([l for l in lines if l.startswith("[OTF2]")], f"{label}: {err}")
        tool_lines = [l for l in lines if not l.startswith("strata: run:")]
        self.assertLessEqual(len(tool_lines), 3, f"{label}: {err}")
        self.assertTrue(all(l.startswith("strata:") for l in tool_lines), f"{label}: {err}")
        if condition == "a file":
            with open(where) as f:
                self.assertEqual(f.read(), "keep me\n", f"{label}: the user's file changed")
        return lines, home

    def check_every_condition(self, module):
        for condition in ("full", "read-only", "missing", "a file"):
            with self.subTest(condition=condition):
                lines, home = self.check(module, condition)
                if module in ("profile", "overhead") and condition != "missing":
                    # The record is kept in the user's own spool, and one line says so.
                    kept = glob.glob(os.path.join(home, ".strata", "spool", "*.json"))
                    self.assertEqual(len(kept), 1, lines)
                    self.assertTrue(any("records go to" in l for l in lines), lines)
                if module == "trace" and condition in ("full", "read-only", "a file"):
                    self.assertTrue(any(re.search(r"no trace written|cannot|not", l)
                                        for l in lines), lines)
                    self.assertFalse(any(re.search(r"\d+ events of \d+ ranks in", l)
                                         for l in lines), lines)

    def test_profile(self):
        self.check_every_condition("profile")

    def test_overhead(self):
        self.check_every_condition("overhead")

    def test_trace(self):
        self.check_every_condition("trace")

    def test_monitor(self):
        self.check_every_condition("monitor")


class KilledProcesses(StrataTestCase):
    def test_a_killed_rank_ends_the_job_under_every_module(self):
        for module, (tools, variable, _) in WRITERS.items():
            if module == "overhead":
                continue  # the profile's paths, with a model
            with self.subTest(module=module):
                work = tempfile.mkdtemp(prefix="killed-", dir=self.out)
                env = base_env(HOME=work, STRATA_SPOOL=os.path.join(work, "spool"),
                               STRATA_TRACE_DIR=os.path.join(work, "trace"),
                               STRATA_MONITOR_OUT=os.path.join(work, "rounds.jsonl"),
                               STRATA_WRITE_TIMEOUT_MS="2000")
                rc, out, err, hung = run_bounded(
                    [STRATA, "run", "-np", "2", "--tools", tools, "--", program("crash_c"),
                     "kill"], env, work)
                self.assertFalse(hung, f"{module}: no end within {BOUND_S} s")
                self.assertNotEqual(rc, 0, err)
                # An application's rank ended the job: no tool rank is blamed.
                self.assertNotIn("tool ranks the stack added", err + out)
                if module == "profile":
                    self.assertEqual(len(glob.glob(os.path.join(work, "spool", "*.prof"))), 2)

    def test_a_killed_tool_rank_ends_the_job_within_the_bound(self):
        # The monitor's tool rank is the last process; killing it must not leave the
        # application's ranks waiting for it forever (both MPIs then end the whole job).
        work = tempfile.mkdtemp(prefix="killed-tool-", dir=self.out)
        env = base_env(HOME=work, STRATA_MONITOR_OUT=os.path.join(work, "rounds.jsonl"))
        proc = subprocess.Popen(
            [STRATA, "run", "-np", "2", "--tools", "monitor:fanout=2", "--",
             program("monitor_app"), "400", "sleep"], env=env, cwd=work, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            tool = None
            for _ in range(200):
                tool = self.tool_rank_pid(proc.pid)
                if tool is not None:
                    break
                subprocess.run(["sleep", "0.05"])
            self.assertIsNotNone(tool, "no tool rank found")
            # Killed once the job runs (its root tool rank opened the rounds' file), as a user
            # or the out-of-memory killer would.
            for _ in range(200):
                if os.path.exists(os.path.join(work, "rounds.jsonl")):
                    break
                subprocess.run(["sleep", "0.05"])
            subprocess.run(["sleep", "0.5"])
            os.kill(tool, 9)
            out, err = proc.communicate(timeout=BOUND_S)
            # The launcher's own words blame "process rank 2" (Open MPI) or a pid (MPICH, often
            # one it killed while cleaning up); strata run says that the tool rank ended first
            # (under MPICH: the process seen to end first) and the application was stopped with it.
            self.assertNotEqual(proc.returncode, 0)
            said = [l for l in err.splitlines() if "tool ranks the stack added" in l]
            # Under MPICH, strata run names the tool rank only when it saw it end before any
            # other process had gone far enough in its own exit to have been the cause (about 1
            # run in 4 here); otherwise it cannot tell which was first and says nothing rather
            # than guess (an application's rank's end must never be blamed on a tool rank).
            self.assertEqual(len(said), 1 if FLAVOR == "openmpi" else len(said[:1]), err + out)
            for line in said:
                self.assertRegex(line, r"\(rank 2\b.*not the application's \(ranks 0-1\)")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.communicate()
            self.fail(f"a killed tool rank left the job running past {BOUND_S} s")

    @staticmethod
    def tool_rank_pid(launcher):
        """The process of the job's last rank (the tool rank): a descendant of the launcher
        whose environment names rank 2 of 3."""
        rank_vars = ("OMPI_COMM_WORLD_RANK=2", "PMI_RANK=2")
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if b"monitor_app" in cmdline and any(v.encode() in environ for v in rank_vars):
                if KilledProcesses.descends_from(int(pid), launcher):
                    return int(pid)
        return None

    @staticmethod
    def descends_from(pid, ancestor):
        while pid > 1:
            if pid == ancestor:
                return True
            try:
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return False
        return False


if __name__ == "__main__":
    unittest.main()
