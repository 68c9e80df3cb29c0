"""Hang diagnosis of real jobs: programs that hang in known ways (tests/programs/hang.c, hang.f90,
python/hang.py) under the profile, watched by `strata run --hang-after 1 --on-hang abort`; the
diagnosis names exactly their ranks, routines and lines; the files the ended job left are read
again by `strata hang SPOOL` and `strata recover`; the module option hang_after under a launch
without the watch; a program that computes longer than the threshold between its calls is
no hang."""
import glob
import json
import os
import re
import subprocess
import time
import unittest

from strata_testlib import (ENDS_WITHOUT_GRACE, FLAVOR, PROGRAMS, SOURCES, STRATA, StrataTestCase,
                            base_env, end_launcher, line_of, program, run,
                            run_until_ranks_are_gone, strata_run)

ABORTED = 3  # strata run's status after ending a hung job



class HangTestCase(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")
        self.env = base_env(STRATA_SPOOL=self.spool, HOME=self.out, **ENDS_WITHOUT_GRACE)

    def watched(self, args, ranks=2, after="1", timeout=90):
        """The program under the profile, watched; ended by the watch, never by the timeout."""
        try:
            return strata_run("profile", args, ranks=ranks, env=self.env, timeout=timeout,
                              extra=["--hang-after", after, "--on-hang", "abort"])
        except subprocess.TimeoutExpired:
            self.fail(f"{' '.join(args)} was not ended within {timeout} s")

    def assertAborted(self, proc):
        self.assertEqual(proc.returncode, ABORTED, proc.stdout + proc.stderr)
        self.assertIn("strata: the job hangs", proc.stderr)
        self.assertIn("strata: ending the job (--on-hang abort)", proc.stderr)

    def spool_diagnosis(self):
        """`strata hang` on the files the ended job left."""
        proc = run([STRATA, "hang", self.spool, "--format", "json", "--hang-after", "1"],
                   env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)


class Deadlocks(HangTestCase):
    def test_two_ranks_receiving_from_each_other(self):
        line = line_of("hang.c", "HANG recv_recv")
        proc = self.watched([program("hang_c"), "recv_recv"], after="1000ms")
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} in MPI_Recv at \S*hang\.c:{line} \(main\)")
            self.assertIn(f"waits for a message from rank {1 - rank} (tag 7)", proc.stderr)
        # What the killed job left says the same.
        d = self.spool_diagnosis()
        self.assertEqual(d["verdict"], "hang")
        self.assertEqual(len(d["deadlocks"]), 1, d)
        cycle = d["deadlocks"][0]["cycle"]
        self.assertEqual(sorted(m["rank"] for m in cycle), [0, 1])
        self.assertEqual({(m["routine"], os.path.basename(m["file"]), m["line"]) for m in cycle},
                         {("MPI_Recv", "hang.c", line)})

    def test_threads_of_a_rank_receiving_from_each_other(self):
        """Under MPI_THREAD_MULTIPLE: each rank's two threads receive from their own rank first;
        every thread's call is described, and each rank's threads are the deadlock."""
        line = line_of("hang.c", "HANG threads")
        proc = self.watched([program("hang_c"), "threads"])
        self.assertAborted(proc)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"DEADLOCK: the threads of rank {rank} wait for each "
                                          r"other in a cycle:\n" +
                             "".join(rf"  rank {rank} \(thread \d+\) in MPI_Recv at "
                                     rf"\S*hang\.c:{line} \((?:main|receive_then_send)\)\n"
                                     rf"    waits for a message from rank {rank} \(tag \d\)\n"
                                     for _ in range(2)))

    def test_threads_of_two_ranks_waiting_for_each_other(self):
        """Under MPI_THREAD_MULTIPLE: the main thread of rank 0 waits for rank 1, whose other
        thread waits for rank 0; each rank's remaining thread waits for its own rank. One
        deadlock, of those two threads across the ranks, each named. The other threads start
        before MPI_Init: they are described all the same."""
        line = line_of("hang.c", "HANG relay")
        proc = self.watched([program("hang_c"), "threads_across"])
        self.assertAborted(proc)
        self.assertEqual(proc.stderr.count("DEADLOCK"), 1, proc.stderr)
        self.assertRegex(proc.stderr,
                         r"DEADLOCK: threads of ranks 0-1 wait for each other in a cycle:\n"
                         rf"  rank 0 \(thread \d+\) in MPI_Recv at \S*hang\.c:{line} "
                         r"\((?:main|relay_message)\)\n"
                         r"    waits for a message from rank 1 \(tag 1\)\n"
                         rf"  rank 1 \(thread \d+\) in MPI_Recv at \S*hang\.c:{line} "
                         r"\((?:main|relay_message)\)\n"
                         r"    waits for a message from rank 0 \(tag 2\)\n")
        cycle = self.spool_diagnosis()["deadlocks"][0]["cycle"]
        self.assertEqual([(m["rank"], m["targets"]) for m in cycle], [(0, [1]), (1, [0])])
        self.assertTrue(all(m.get("thread", 0) > 0 for m in cycle), cycle)

    def test_a_later_thread_reusing_an_ended_threads_table(self):
        """Under MPI_THREAD_MULTIPLE: a thread's send (tag 11) stays pending after the thread
        ended; a later thread takes its table of requests, sends (tag 44) and waits on a receive
        (tag 22). The later thread's requests are described as its own, the ended thread's are
        gone with it: the receives the peer waits on see only the send with tag 44."""
        wait = line_of("hang.c", "HANG reused_table wait")
        proc = self.watched([program("hang_c"), "reused_table"])
        self.assertAborted(proc)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} \(thread \d+\) in MPI_Wait at "
                                          rf"\S*hang\.c:{wait} \(send_then_wait\)\n"
                                          rf"\s+waits for a message from rank {1 - rank} \(tag 22\)")
            self.assertIn(f"rank {1 - rank} sends to it with tag 44 (an MPI_Isend not yet "
                          "completed)", proc.stderr)
        self.assertNotIn("tag 11", proc.stderr)
        unmatched = self.spool_diagnosis()["unmatched_receives"]
        self.assertEqual(sorted((u["receiver"]["rank"], u["tag"]) for u in unmatched),
                         [(0, 22), (0, 33), (1, 22), (1, 33)], unmatched)
        for u in unmatched:
            self.assertEqual([(s["sender"], s["tag"]) for s in u["sends"]],
                             [(1 - u["receiver"]["rank"], 44)], u)

    def test_send_send_with_large_messages(self):
        line = line_of("hang.c", "HANG send_send")
        proc = self.watched([program("hang_c"), "send_send"])
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} in MPI_Send at \S*hang\.c:{line} \(main\)")
            self.assertIn(f"waits for rank {1 - rank} to receive its message (tag 0, 16777216 "
                          "bytes)", proc.stderr)

    def test_fortran(self):
        line = line_of("hang.f90", "HANG fortran")
        proc = self.watched([program("hang_f90")])
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} in MPI_Recv at \S*hang\.f90:{line}")


class Waiting(HangTestCase):
    def test_rank_that_never_reaches_the_barrier(self):
        """Rank 2 computes: rank 1 waits for it in MPI_Barrier, rank 0 in MPI_Wait on an
        MPI_Ibarrier that rank 1 started and rank 2 did not."""
        barrier = line_of("hang.c", "HANG sleeper barrier")
        wait = line_of("hang.c", "HANG sleeper wait")
        proc = self.watched([program("hang_c"), "sleeper"], ranks=3)
        self.assertAborted(proc)
        self.assertRegex(proc.stderr, r"WAITING FOR A COMPUTING RANK: rank 2 has been outside MPI "
                                      r"for [0-9.]+ s, since MPI_Barrier at \S*hang\.c:\d+ \(main\)")
        self.assertIn("Waiting for it directly: ranks 0-1", proc.stderr)
        self.assertRegex(proc.stderr, rf"e\.g\. rank 0 in MPI_Wait at \S*hang\.c:{wait} \(main\)\n"
                                      r"\s+waits for rank 2 to enter MPI_Ibarrier on its "
                                      r"communicator \(3 ranks\)")
        self.assertRegex(proc.stderr, rf"rank 1 \(1\): in MPI_Barrier at \S*hang\.c:{barrier} "
                                      r"\(main\), communicator \S+ of 3 ranks")

    def test_receive_with_wrong_tag(self):
        recv = line_of("hang.c", "HANG wrong_tag recv")
        send = line_of("hang.c", "HANG wrong_tag send")
        proc = self.watched([program("hang_c"), "wrong_tag"])
        self.assertAborted(proc)
        self.assertRegex(proc.stderr, rf"UNMATCHED RECEIVE \(wrong tag\): rank 1 in MPI_Recv at "
                                      rf"\S*hang\.c:{recv} \(main\)")
        self.assertIn("waits for a message from rank 0 (tag 5)", proc.stderr)
        self.assertRegex(proc.stderr, rf"rank 0 sends to it with tag 4 .*hang\.c:{send}")


class Nonblocking(HangTestCase):
    """Ranks stuck in MPI_Wait and MPI_Waitall: the requests they wait for, and the sends
    pending in other ranks' queues, from the message queue each rank keeps."""

    def test_wait_on_receives_from_each_other_and_a_send_with_another_tag(self):
        wait = line_of("hang.c", "HANG irecv_wait wait")
        proc = self.watched([program("hang_c"), "irecv_wait"])
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} in MPI_Wait at \S*hang\.c:{wait} \(main\)")
        self.assertIn("waits for a message from rank 1 (tag 7)", proc.stderr)
        self.assertRegex(proc.stderr, rf"UNMATCHED RECEIVE \(wrong tag\): rank 1 in MPI_Wait at "
                                      rf"\S*hang\.c:{wait} \(main\)\n\s+waits for a message from "
                                      r"rank 0 \(tag 5\)")
        self.assertIn("rank 0 sends to it with tag 4 (an MPI_Isend not yet completed)", proc.stderr)

    def test_wildcard_receive_that_nothing_matches(self):
        wait = line_of("hang.c", "HANG wildcard wait")
        proc = self.watched([program("hang_c"), "wildcard"])
        self.assertAborted(proc)
        self.assertRegex(proc.stderr, rf"UNMATCHED RECEIVE \(nothing matches\): rank 0 in "
                                      rf"MPI_Waitall at \S*hang\.c:{wait} \(main\)\n\s+waits for a "
                                      r"message from any rank of its communicator \(any tag\)")
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)

    def test_waitall_on_a_wildcard_beside_another_receive(self):
        # Rank 0 needs rank 1's message and anyone's; ranks 1 and 2 wait for rank 0.
        wait = line_of("hang.c", "HANG waitall_wildcard wait")
        proc = self.watched([program("hang_c"), "waitall_wildcard"], ranks=3)
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        self.assertRegex(proc.stderr, rf"rank 0 in MPI_Waitall at \S*hang\.c:{wait} \(main\)\n"
                                      r"\s+waits for a message from any rank of its communicator "
                                      r"\(tag 9\); a message from rank 1 \(tag 5\)")
        self.assertIn("Also blocked behind it: rank 2", proc.stderr)
        d = self.spool_diagnosis()
        self.assertEqual(len(d["deadlocks"]), 1, d)
        self.assertEqual([m["rank"] for m in d["deadlocks"][0]["cycle"]], [0, 1])
        self.assertEqual(d["deadlocks"][0]["blocked_behind"], "2")
        self.assertEqual(d["deadlocks"][0]["cycle"][0]["targets"], [1])


class Sessions(HangTestCase):
    def test_ranks_of_a_session_receiving_from_each_other(self):
        if not os.path.exists(program("sessions")):
            self.skipTest(f"no MPI-4 Sessions in {FLAVOR}")
        line = line_of("sessions.c", "HANG sessions")
        proc = self.watched([program("sessions"), "hang", "1"])
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} in MPI_Recv at \S*sessions\.c:{line} "
                                          r"\(main\)\n\s+waits for a message from rank "
                                          rf"{1 - rank} \(tag 9\)")


class ManyThreads(HangTestCase):
    def test_threads_beyond_the_list_and_the_slots(self):
        """More threads at once than libstrata lists (64): each beyond has a request table of
        its own, given back when it ends; the diagnosis says how many threads it cannot
        describe (the 70 threads and the main one, 16 slots)."""
        line = line_of("hang.c", "HANG many_threads")
        proc = self.watched([program("hang_c"), "many_threads"], ranks=1)
        self.assertAborted(proc)
        for round in (1, 2):
            self.assertIn(f"round {round}: 70 threads running, 7 unlisted", proc.stdout)
            self.assertIn(f"round {round}: threads ended, 0 unlisted", proc.stdout)
        self.assertIn("round 3: 70 threads running, 7 unlisted", proc.stdout)
        self.assertIn("Not described: 55 threads of rank 0 (more threads than the state keeps)",
                      proc.stderr)
        self.assertRegex(proc.stderr, rf"in MPI_Recv at \S*hang\.c:{line} ")
        d = self.spool_diagnosis()
        self.assertEqual(d["threads_not_described"], [{"rank": 0, "threads": 55}])


class UndescribedThreads(HangTestCase):
    def test_a_rank_with_a_thread_never_described_is_not_in_a_deadlock(self):
        """Ranks 0 and 1 receive from each other, but rank 1 has a thread that made one MPI
        call the profile only counts, then computes: its state counts it as not described, and
        the diagnosis names rank 1 as what rank 0 waits for rather than a deadlock."""
        line = line_of("hang.c", "HANG quiet recv")
        proc = self.watched([program("hang_c"), "quiet_thread"])
        self.assertAborted(proc)
        self.assertNotIn("DEADLOCK", proc.stderr)
        self.assertIn("Not described: 1 thread of rank 1", proc.stderr)
        self.assertRegex(proc.stderr, r"WAITING FOR A RANK WITH THREADS NOT DESCRIBED: rank 1 has 1 "
                                      r"thread that called MPI and that its state does not "
                                      r"describe \(they may compute or send\); its described "
                                      rf"threads wait inside MPI, e.g. in MPI_Recv at "
                                      rf"\S*hang\.c:{line} \(main\)\n"
                                      r"  Waiting for it directly: rank 0\n")
        d = self.spool_diagnosis()
        self.assertEqual(d["threads_not_described"], [{"rank": 1, "threads": 1}])
        self.assertEqual([(w["rank"], w["state"]) for w in d["waiting_for"]],
                         [(1, "not_described")])


class Stacks(HangTestCase):
    def test_a_launch_without_a_stack_gets_the_profile(self):
        # --hang-after reads the state the profile writes: a launch that names no module gets
        # it (one line says so), and the hang is found.
        try:
            proc = strata_run(None, [program("hang_c"), "recv_recv"], env=self.env, timeout=90,
                              extra=["--hang-after", "1", "--on-hang", "abort"])
        except subprocess.TimeoutExpired:
            self.fail("a launch without a stack was not watched")
        self.assertIn("--hang-after: the profile module added to the stack", proc.stderr)
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)

    def test_a_stack_without_the_profile_is_refused(self):
        proc = strata_run("trace", [program("hang_c"), "recv_recv"], env=self.env, timeout=60,
                          extra=["--hang-after", "1"])
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--hang-after needs the profile module", proc.stderr)
        self.assertIn("for example --tools profile,trace", proc.stderr)
        disabled = run([STRATA, "run", "-np", "2", "--hang-after", "1", "--",
                        program("hang_c"), "recv_recv"], env={**self.env, "STRATA_DISABLE": "1"},
                       timeout=60)
        self.assertEqual(disabled.returncode, 2, disabled.stderr)
        self.assertIn("Strata is disabled (STRATA_DISABLE)", disabled.stderr)


class NoHang(HangTestCase):
    def test_computing_longer_than_the_threshold_is_no_hang(self):
        proc = self.watched([program("hang_c"), "compute", "2.5"])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotIn("hangs", proc.stderr)
        self.assertNotIn("DEADLOCK", proc.stderr)
        # Finished with its record written: the state files are gone with the rank files.
        self.assertEqual(len(glob.glob(os.path.join(self.spool, "*.json"))), 1)
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.hang")), [])


class ModuleOption(HangTestCase):
    def test_hang_after_without_strata_run(self):
        """The option alone (a plain launch): rank 0 says why, on standard error and in the
        spool; the job then hangs on, so the test ends it."""
        line = line_of("hang.c", "HANG recv_recv")
        # A duration with a unit: 1000ms is 1 s (read as 1000 s, nothing would come in 60 s).
        args = [STRATA, "run", "-np", "2", "--tools", "profile:hang_after=1000ms", "--",
                program("hang_c"), "recv_recv"]
        launcher = subprocess.Popen(args, env=self.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            reports = []
            while not reports and time.monotonic() < deadline:
                time.sleep(0.2)
                reports = glob.glob(os.path.join(self.spool, "*.hang.txt"))
            # The running job asked for its diagnosis by its key, in the spool of its files.
            key = os.path.basename(reports[0])[:-len(".hang.txt")] if reports else "none"
            now = run([STRATA, "hang", "--now", key, self.spool, "--hang-after", "1s"],
                      env=self.env)
        finally:
            err = end_launcher(launcher)
        self.assertEqual(len(reports), 1, f"no diagnosis in the spool within 60 s:\n{err}")
        with open(reports[0]) as f:
            text = f.read()
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", text)
        self.assertRegex(text, rf"rank 1 in MPI_Recv at \S*hang\.c:{line} \(main\)")
        self.assertIn("strata: the job hangs (hang_after=1 s", err)
        self.assertEqual(now.returncode, 0, now.stderr)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", now.stdout)
        self.assertRegex(now.stdout, rf"rank 1 in MPI_Recv at \S*hang\.c:{line} \(main\)")
        # Not a duration: one line, before anything starts.
        bad = run([STRATA, "run", "-np", "2", "--hang-after", "soon", "--", program("hang_c")],
                  env=self.env)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--hang-after: 'soon' is not a duration above 0 such as 90, 90s or 5m",
                      bad.stderr)
        # Ended, the job is no longer running; an unknown one is said so.
        gone = run([STRATA, "hang", "--now", "no-such-job", self.spool], env=self.env)
        self.assertEqual(gone.returncode, 2, gone.stderr)
        self.assertIn("job no-such-job is unknown", gone.stderr)


class Recovered(HangTestCase):
    def test_partial_record_of_a_hung_job_has_its_hang(self):
        line = line_of("hang.c", "HANG recv_recv")
        self.assertAborted(self.watched([program("hang_c"), "recv_recv"]))
        # The launcher may return before its ranks are reaped; recover leaves a live job alone.
        proc = run_until_ranks_are_gone([STRATA, "recover", self.spool], self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.hang")), [], proc.stderr)
        records = glob.glob(os.path.join(self.spool, "*.json"))
        self.assertEqual(len(records), 1, records)
        with open(records[0]) as f:
            rec = json.load(f)
        hang = rec["hang"]
        self.assertEqual(hang["verdict"], "hang")
        cycle = hang["deadlocks"][0]["cycle"]
        self.assertEqual(sorted(m["rank"] for m in cycle), [0, 1])
        self.assertTrue(all(m["routine"] == "MPI_Recv" and m["line"] == line for m in cycle))
        report = run([STRATA, "report", records[0]], env=self.env)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn("DEADLOCK: ranks 0-1", report.stdout)
        # The diagnosis line by line as the record holds it, after the report.
        self.assertTrue(report.stdout.endswith(
            "\nWhy the job hung (strata hang, from the ranks' last states):\n" + hang["text"]))


@unittest.skipUnless(FLAVOR == "openmpi", "Debian packages mpi4py for Open MPI only")
class Python(HangTestCase):
    """The call site of a Python rank is the script's line, read from the waiting thread's
    Python frame (mpi4py released the GIL around the call)."""
    SCRIPT = os.path.join(SOURCES, "python", "hang.py")
    # mpi4py receives a pickled object with a matched probe, then MPI_Mrecv.
    RECEIVE = r"MPI_(Mprobe|Probe|Recv)"

    def setUp(self):
        super().setUp()
        from test_python import PYTHON
        self.assertIsNotNone(PYTHON, "no python3 with mpi4py")
        self.python = PYTHON

    def site(self, mark, function):
        line = line_of(os.path.join("python", "hang.py"), f"MARK:{mark}")
        return rf"at \S*/python/hang\.py:{line} \({re.escape(function)}\)"

    def test_mpi4py_ranks_receiving_from_each_other(self):
        line = line_of(os.path.join("python", "hang.py"), "MARK:recv")
        site = self.site("recv", "<module>")
        proc = self.watched([self.python, self.SCRIPT])
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: ranks 0-1 wait for each other in a cycle:", proc.stderr)
        for rank in (0, 1):
            self.assertRegex(proc.stderr, rf"rank {rank} in {self.RECEIVE} {site}\n")
        # One class: the ranks wait at the same line.
        self.assertRegex(proc.stderr, rf"ranks 0-1 \(2\): in {self.RECEIVE} {site}, ")
        # The files the ended job left, read again, and the record strata recover makes of them.
        cycle = self.spool_diagnosis()["deadlocks"][0]["cycle"]
        self.assertEqual(sorted(m["rank"] for m in cycle), [0, 1])
        for m in cycle:
            self.assertTrue(m["file"].endswith("/python/hang.py"), m)
            self.assertEqual((m["line"], m["function"]), (line, "<module>"))
        proc = run([STRATA, "recover", self.spool], env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        records = glob.glob(os.path.join(self.spool, "*.json"))
        self.assertEqual(len(records), 1, records)
        with open(records[0]) as f:
            hang = json.load(f)["hang"]
        [only] = hang["classes"]
        self.assertEqual((only["ranks"], only["line"], only["function"]), ("0-1", line, "<module>"))
        self.assertTrue(only["file"].endswith("/python/hang.py"), only)

    def test_mpi4py_rank_computing_after_a_call_that_lasted(self):
        """Rank 1 computes for good after a receive that lasted a second: its last call keeps
        the line read while it was in it. Watched after 3 s, not 1: rank 0 computes for a second
        while rank 1 waits, which on a loaded machine could outlast 1 s and be reported first."""
        proc = self.watched([self.python, self.SCRIPT, "compute"], after="3")
        self.assertAborted(proc)
        last_call = self.site("last_call", "<module>")
        self.assertRegex(proc.stderr, r"WAITING FOR A COMPUTING RANK: rank 1 has been outside "
                                      rf"MPI for [\d.]+ s, since MPI_Recv {last_call}\n")
        waiting = self.site("wait_for_computing", "<module>")
        self.assertRegex(proc.stderr, rf"rank 0 in MPI_Recv {waiting}\n")

    def test_mpi4py_threads_each_at_their_own_line(self):
        """A second thread of each rank receives too: each thread's own line, found by its
        OS thread id among the interpreter's threads."""
        proc = self.watched([self.python, self.SCRIPT, "threads"])
        self.assertAborted(proc)
        self.assertIn("DEADLOCK: threads of ranks 0-1 wait for each other in a cycle:",
                      proc.stderr)
        for rank in (0, 1):
            for mark, function in (("recv", "<module>"), ("thread_recv", "receive_in_thread")):
                self.assertRegex(proc.stderr, rf"rank {rank} \(thread \d+\) in {self.RECEIVE} "
                                              rf"{self.site(mark, function)}\n")


if __name__ == "__main__":
    unittest.main()
