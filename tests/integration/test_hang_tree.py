"""The hang diagnosis through the monitor's tree of tool ranks: a job hung under the profile and
the monitor (transport=tree) is diagnosed by rank 0's watch (hang_after) and by `strata hang
--now` from the states the tool ranks read and merged, and that diagnosis is the one the files
give (`strata hang SPOOL`): the same classes, deadlocks, members and lines; the output says it
came through the tree; `strata run --hang-after` asks the tree too. Without the monitor, `--now`
reads the files, and says nothing of a tree."""
import glob
import json
import os
import signal
import subprocess
import time
import unittest

from strata_testlib import (ENDS_WITHOUT_GRACE, STRATA, StrataTestCase, base_env, end_launcher,
                            line_of, program, run, run_until_ranks_are_gone)


def comparable(d):
    """What must agree between two diagnoses made moments apart (times aside)."""
    return {
        "verdict": d["verdict"],
        "world_size": d["world_size"],
        "missing_ranks": d["missing_ranks"],
        "classes": sorted((c["ranks"], c["routine"], os.path.basename(c["file"]), c["line"],
                           c["function"], c["phase"]) for c in d["classes"]),
        "deadlocks": sorted(tuple((m["rank"], m["routine"], os.path.basename(m["file"]), m["line"],
                                   m["waits_for"]) for m in dl["cycle"])
                            for dl in d["deadlocks"]),
        "waiting_for": sorted((w["rank"], w["state"]) for w in d["waiting_for"]),
        "unmatched": len(d["unmatched_receives"]),
    }


class ThroughTheTree(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")
        self.env = base_env(STRATA_SPOOL=self.spool, HOME=self.out, **ENDS_WITHOUT_GRACE,
                            STRATA_MONITOR_OUT=os.path.join(self.out, "rounds.jsonl"))

    def hung_job(self, tools, ranks):
        """Starts hang_c recv_recv (pairs of ranks receiving from each other) with rank 0
        watching; returns the launcher and the watch's report once written."""
        args = [STRATA, "run", "-np", str(ranks), "--tools", tools, "--",
                program("hang_c"), "recv_recv"]
        launcher = subprocess.Popen(args, env=self.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.addCleanup(end_launcher, launcher)
        deadline = time.monotonic() + 90
        reports = []
        while not reports and time.monotonic() < deadline and launcher.poll() is None:
            time.sleep(0.2)
            reports = glob.glob(os.path.join(self.spool, "*.hang.txt"))
        if not reports:
            self.fail(f"no diagnosis in the spool within 90 s:\n{end_launcher(launcher)}")
        time.sleep(0.3)  # written whole by now
        self.launcher = launcher
        with open(reports[0]) as f:
            return os.path.basename(reports[0])[:-len(".hang.txt")], f.read()

    def diagnoses(self, key):
        now = run([STRATA, "hang", "--now", key, self.spool, "--format", "json",
                   "--hang-after", "1s"], env=self.env)
        self.assertEqual(now.returncode, 0, now.stderr)
        files = run([STRATA, "hang", self.spool, "--job", key, "--format", "json",
                     "--hang-after", "1s"], env=self.env)
        self.assertEqual(files.returncode, 0, files.stderr)
        return json.loads(now.stdout), json.loads(files.stdout)

    def test_four_ranks_under_a_fanout_2_tree(self):
        line = line_of("hang.c", "HANG recv_recv")
        key, report = self.hung_job("profile:hang_after=1000ms,monitor:fanout=2", 4)
        # Rank 0's watch asked the tree: 4 ranks under 2 + 1 tool ranks.
        self.assertIn("Merged through 3 tool ranks of the monitor's tree", report)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", report)
        self.assertIn("DEADLOCK: ranks 2-3 wait for each other in a cycle:", report)
        tree, files = self.diagnoses(key)
        self.assertEqual(tree["merged_through"]["tool_ranks"], 3, tree)
        self.assertEqual(tree["merged_through"]["unread"], [])
        self.assertGreater(tree["merged_through"]["root_bytes"], 0)
        self.assertNotIn("merged_through", files)
        self.assertEqual(comparable(tree), comparable(files))
        self.assertEqual(tree["verdict"], "hang")
        self.assertEqual(len(tree["deadlocks"]), 2, tree)
        for dl in tree["deadlocks"]:
            for m in dl["cycle"]:
                self.assertEqual((m["routine"], os.path.basename(m["file"]), m["line"]),
                                 ("MPI_Recv", "hang.c", line))
        text = run([STRATA, "hang", "--now", key, self.spool, "--hang-after", "1s"], env=self.env)
        self.assertIn("Merged through 3 tool ranks", text.stdout)

    def test_eight_ranks_under_a_deeper_tree(self):
        key, report = self.hung_job("profile:hang_after=1000ms,monitor:fanout=2", 8)
        # 8 ranks, fanout 2: 4 + 2 + 1 tool ranks, the states merged twice on the way up.
        self.assertIn("Merged through 7 tool ranks of the monitor's tree", report)
        tree, files = self.diagnoses(key)
        self.assertEqual(tree["merged_through"]["tool_ranks"], 7, tree)
        self.assertEqual(comparable(tree), comparable(files))
        self.assertEqual(len(tree["deadlocks"]), 4, tree)

    def test_strata_run_hang_after_asks_the_tree(self):
        args = [STRATA, "run", "-np", "4", "--tools", "profile,monitor:fanout=2",
                "--hang-after", "1", "--on-hang", "abort", "--", program("hang_c"), "recv_recv"]
        try:
            proc = run(args, env=self.env, timeout=120)
        except subprocess.TimeoutExpired:
            self.fail("the hung job was not ended within 120 s")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertIn("strata: the job hangs", proc.stderr)
        self.assertIn("Merged through 3 tool ranks of the monitor's tree", proc.stderr)
        self.assertIn("DEADLOCK: ranks 2-3 wait for each other in a cycle:", proc.stderr)

    def job_processes(self):
        """The launcher's descendants (MPICH's proxy runs in a session of its own)."""
        children = {}
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # ended meanwhile
            children.setdefault(ppid, []).append(pid)
        found, todo = [], [self.launcher.pid]
        while todo:
            kids = children.get(todo.pop(), [])
            found += kids
            todo += kids
        return found

    def tool_ranks(self, ranks):
        """The pids of the job's tool ranks: its processes of world rank RANKS and up."""
        pids = []
        for pid in self.job_processes():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            except OSError:
                continue  # ended meanwhile
            rank = env.get(b"OMPI_COMM_WORLD_RANK", env.get(b"PMI_RANK"))
            if rank is not None and int(rank) >= ranks:
                pids.append(pid)
        return pids

    def test_two_asks_at_once_are_each_answered(self):
        """Two `strata hang --now` ask before the root takes either (its tool ranks stopped
        meanwhile): neither replaces the other, both get the tree's diagnosis."""
        key, _ = self.hung_job("profile:hang_after=1000ms,monitor:fanout=2", 4)
        tools = self.tool_ranks(4)
        self.assertEqual(len(tools), 3, tools)
        asks = os.path.join(self.spool, f"tree-{key.rsplit('-', 1)[1]}.hang-asks")
        for pid in tools:
            os.kill(pid, signal.SIGSTOP)
        try:
            askers = [subprocess.Popen([STRATA, "hang", "--now", key, self.spool, "--format",
                                        "json", "--hang-after", "1s"], env=self.env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                      for _ in range(2)]
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and len(
                    [n for n in os.listdir(asks) if ".tmp." not in n]) < 2:
                time.sleep(0.05)
            waiting = [n for n in os.listdir(asks) if ".tmp." not in n]
        finally:
            for pid in tools:
                os.kill(pid, signal.SIGCONT)
        self.assertEqual(len(waiting), 2, waiting)
        for asker in askers:
            out, err = asker.communicate(timeout=60)
            self.assertEqual(asker.returncode, 0, err)
            d = json.loads(out)
            self.assertEqual(d["merged_through"]["tool_ranks"], 3, d)
            self.assertEqual(len(d["deadlocks"]), 2, d)
        self.assertEqual(os.listdir(asks), [])
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.hang-merged-*")), [])

    def test_recover_removes_what_a_killed_tree_left(self):
        """A job killed with its tree leaves the root's door and asks; an answer that came after
        its asker stopped waiting stays too: `strata recover` removes them with the job's files,
        and leaves another job's answer."""
        key, _ = self.hung_job("profile:hang_after=1000ms,monitor:fanout=2", 2)
        pid = key.rsplit("-", 1)[1]
        door = os.path.join(self.spool, f"tree-{pid}.hang-door")
        asks = os.path.join(self.spool, f"tree-{pid}.hang-asks")
        self.assertTrue(os.path.exists(door))
        late = os.path.join(self.spool, f"{key}.hang-merged-1-2")
        other = os.path.join(self.spool, "other-1.hang-merged-1-2")
        for path in (late, other):
            with open(path, "w") as f:
                f.write("an answer nobody waits for")
        for pid in self.job_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        end_launcher(self.launcher, signal.SIGKILL)
        self.assertTrue(os.path.exists(door), "the killed root's door")
        proc = run_until_ranks_are_gone([STRATA, "recover", self.spool], self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(f"{key}: partial record", proc.stdout)
        self.assertFalse(os.path.exists(door))
        self.assertFalse(os.path.exists(asks))
        self.assertFalse(os.path.exists(late))
        self.assertTrue(os.path.exists(other))

    def test_without_the_monitor_the_files_are_read(self):
        key, report = self.hung_job("profile:hang_after=1000ms", 2)
        self.assertNotIn("tool rank", report)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", report)
        tree, files = self.diagnoses(key)
        self.assertNotIn("merged_through", tree)
        self.assertEqual(comparable(tree), comparable(files))


if __name__ == "__main__":
    unittest.main()
