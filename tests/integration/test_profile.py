"""The profile module: exact figures, one record per job, abnormal ends, Pcontrol, reports."""
import glob
import json
import os
import socket
import subprocess

from strata_testlib import (BUILD, CORE, FLAVOR, STRATA, StrataTestCase, base_env, mpirun, program, run,
                            run_until_ranks_are_gone, strata_run)

ITER = 9


class ProfileTestCase(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")
        self.env = base_env(STRATA_SPOOL=self.spool, HOME=self.out)

    def records(self):
        return sorted(glob.glob(os.path.join(self.spool, "*.json")))

    def only_record(self):
        files = self.records()
        self.assertEqual(len(files), 1, os.listdir(self.spool) if os.path.isdir(self.spool) else "no spool")
        with open(files[0]) as f:
            return json.load(f)

    def profile_run(self, prog_args, ranks=2, tools="profile", env=None):
        return strata_run(tools, prog_args, ranks=ranks, env=env or self.env)


class Figures(ProfileTestCase):
    def test_exact_counts_and_bytes(self):
        for prog, language in (("ring_c", "C/C++"), ("ring_f90", "Fortran"), ("ring_f08", "Fortran")):
            with self.subTest(prog=prog):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run([program(prog), str(ITER)])
                self.assertRan(proc)
                rec = self.only_record()
                self.assertEqual(rec["schema"], "strata.job/1")
                job, routines = rec["job"], rec["routines"]
                self.assertEqual(job["ranks"], 2)
                self.assertEqual(job["status"], "finalized")
                self.assertFalse(job["partial"])
                self.assertEqual(job["language"], language)
                self.assertEqual(job["mpi_flavor"], FLAVOR)
                self.assertEqual(job["argv"][-1], str(ITER))
                send, recv = routines["MPI_Send"], routines["MPI_Recv"]
                self.assertEqual(send["calls"], 2 * ITER)
                self.assertEqual(send["bytes_sent"], 2 * ITER * 400)
                self.assertEqual(send["count_sum"], 2 * ITER * 100)
                self.assertEqual(send["size_histogram"], [[256, 2 * ITER]])
                self.assertEqual(recv["calls"], 2 * ITER)
                self.assertEqual(recv["bytes_received"], 2 * ITER * 400)
                self.assertEqual(routines["MPI_Allreduce"]["calls"], 2)
                self.assertEqual(routines["MPI_Allreduce"]["comm_size_histogram"], [[2, 2]])
                self.assertEqual(routines["MPI_Barrier"]["per_rank"]["calls"]["max"], 1)
                self.assertGreater(job["wall_time_s"], 0)
                self.assertLessEqual(job["mpi_time_s"], 2 * job["wall_time_s"])
                self.assertGreaterEqual(job["profiler_overhead_s"], 0)
                # The record reads back through the record library (strata report).
                report = run([STRATA, "report", self.records()[0]])
                self.assertRan(report)
                self.assertIn("MPI_Send", report.stdout)

    def test_polls_counted_exactly_when_sampled(self):
        # Most polls complete nothing; the core times about one in STRATA_PROFILE_POLL_SAMPLE
        # (default 64) and counts the rest untimed: counts stay exact. Bytes do too when every
        # poll is timed, and with STRATA_PROFILE_POLLS=exact (the untimed polls that complete
        # something are decoded); the default lean polls estimate them (the next test).
        for sample, polls in (("", "exact"), ("1", ""), ("", "")):
            with self.subTest(sample=sample, polls=polls):
                for f in self.records():
                    os.remove(f)
                env = dict(self.env, STRATA_PROFILE_POLL_SAMPLE=sample, STRATA_PROFILE_POLLS=polls)
                proc = self.profile_run([program("poll_c"), "20"], env=env)
                self.assertRan(proc)
                line = next(l for l in proc.stdout.splitlines() if l.startswith("rank 0 "))
                made = dict(kv.split("=") for kv in line.split()[2:])
                record = self.only_record()
                routines = record["routines"]
                # Untimed polls are charged the timed calls' mean; a biased estimate (one that
                # kept re-charging an early cold call) pushed HPCC's MPI share past 5000 %.
                self.assertLessEqual(record["job"]["mpi_percent"], 100.0)
                self.assertEqual(routines["MPI_Test"]["calls"], int(made["tests"]))
                self.assertEqual(routines["MPI_Testany"]["calls"], int(made["testanys"]))
                self.assertEqual(routines["MPI_Iprobe"]["calls"], int(made["iprobes"]))
                self.assertGreater(int(made["tests"]) + int(made["testanys"]), 20, "polls that completed nothing")
                lean = polls == "" and sample == ""
                self.assertIs(record["job"]["poll_bytes_estimated"], lean)
                if not lean:
                    self.assertEqual(routines["MPI_Test"]["bytes_received"], 10 * 1000)
                    self.assertEqual(routines["MPI_Testany"]["bytes_received"], 10 * 1000)
                for name in ("MPI_Test", "MPI_Testany", "MPI_Iprobe"):
                    r = routines[name]
                    self.assertGreater(r["time_s"], 0, name)
                    self.assertNotIn("timed", r, name)
                    self.assertLessEqual(r["min_s"] * r["calls"], r["time_s"] * 1.0001, name)
                    self.assertGreaterEqual(r["max_s"] * r["calls"], r["time_s"] * 0.9999, name)
                # Calls that cannot wait are counted exactly, on both ranks, without the clock
                # (the record says so); the 50 made while MPI_Pcontrol(0) paused are not, nor
                # are the paused empty polls (Iprobe above: rank 0's own count).
                each = int(made["cheap_each"])
                self.assertEqual(made["clock_positive"], "1")
                for name in ("MPI_Comm_size", "MPI_Type_size", "MPI_Wtime", "MPI_Get_address",
                             "MPI_Get_count", "MPI_Comm_test_inter"):
                    r = routines[name]
                    self.assertEqual(r["calls"], 2 * each, name)
                    self.assertIs(r["timed"], False, name)
                    self.assertEqual((r["time_s"], r["min_s"], r["max_s"]), (0, 0, 0), name)
                self.assertEqual(routines["MPI_Comm_rank"]["calls"], 2 * (each + 1))
                report = run([STRATA, "report", self.records()[0]])
                self.assertRan(report)
                wtime = next(l for l in report.stdout.splitlines() if l.strip().startswith("MPI_Wtime "))
                self.assertIn("not timed", wtime)
                self.assertIn('"not timed": calls that cannot wait', report.stdout)

    def test_probes_count_the_bytes_of_the_message_they_find(self):
        # Rank 1 probes for messages of 400, 800, 1200 and 1600 bytes with MPI_Probe, MPI_Iprobe,
        # MPI_Mprobe and MPI_Improbe (the polls until one finds it: only that one counts), then
        # receives each. Every poll timed, so that bytes are exact.
        env = dict(self.env, STRATA_PROFILE_POLL_SAMPLE="1")
        proc = self.profile_run([program("probes_c")], env=env)
        self.assertRan(proc)
        line = next(l for l in proc.stdout.splitlines() if l.startswith("rank 1 "))
        made = dict(kv.split("=") for kv in line.split()[2:])
        routines = self.only_record()["routines"]
        for name, calls, received in (("MPI_Probe", 1, 400), ("MPI_Iprobe", int(made["iprobes"]), 800),
                                      ("MPI_Mprobe", 1, 1200),
                                      ("MPI_Improbe", int(made["improbes"]), 1600),
                                      ("MPI_Recv", 2, 1200), ("MPI_Mrecv", 2, 2800)):
            with self.subTest(routine=name):
                self.assertEqual(routines[name]["calls"], calls)
                self.assertEqual(routines[name]["bytes_received"], received)

    def test_lean_polls_estimate_bytes_from_the_timed_ones(self):
        # Lean polls (the default): the core counts an untimed poll and jumps into MPI, so what
        # it completed is not seen; its bytes are the routine's bytes per timed poll. Here every
        # poll completes one 1000-byte message, so the estimate is exact where a poll was timed:
        # always MPI_Test's (a thread's first poll is timed), MPI_Testany's by chance, else 0.
        # Without the estimate MPI_Test would hold only its timed polls' bytes.
        proc = self.profile_run([program("poll_c"), "400", "ready"])
        self.assertRan(proc)
        line = next(l for l in proc.stdout.splitlines() if l.startswith("rank 0 "))
        made = dict(kv.split("=") for kv in line.split()[2:])
        record = self.only_record()
        routines = record["routines"]
        self.assertIs(record["job"]["poll_bytes_estimated"], True)
        tests, testanys = int(made["tests"]), int(made["testanys"])
        self.assertEqual(routines["MPI_Test"]["calls"], tests)
        self.assertEqual(routines["MPI_Testany"]["calls"], testanys)
        self.assertEqual(tests, 200, "each MPI_Test completed its message at once")
        self.assertEqual(routines["MPI_Test"]["bytes_received"], 200 * 1000)
        self.assertIn(routines["MPI_Testany"]["bytes_received"], (0, testanys * 1000))

    def test_a_bad_setting_is_one_line_naming_module_option_and_source(self):
        proc = self.profile_run([program("poll_c"), "10"],
                                env=dict(self.env, STRATA_PROFILE_POLLS="fast"))
        self.assertOneErrorLine(proc, "module 'profile': STRATA_PROFILE_POLLS: 'fast'")
        proc = self.profile_run([program("poll_c"), "10"], tools="profile:poll_sample=0")
        self.assertOneErrorLine(proc, "module 'profile' refused its arguments: "
                                "option 'poll_sample': '0' is not from 1 to 1000000")
        proc = self.profile_run([program("ring_c"), "2"], tools="profile:no_such=1")
        self.assertOneErrorLine(proc, "module 'profile': unknown option 'no_such'")
        self.assertEqual(self.records(), [])

    def test_options_from_the_stack_and_their_older_variables(self):
        out = os.path.join(self.out, "report.txt")
        proc = self.profile_run([program("poll_c"), "10"],
                                tools=f"profile:callsites=1:polls=exact:out={out}"
                                      ":write_timeout_ms=30s")
        self.assertRan(proc)
        record = self.only_record()
        self.assertTrue(record["callsites"], "callsites=1 keeps call sites")
        self.assertIs(record["job"]["poll_bytes_estimated"], False)  # polls=exact
        with open(out) as f:
            self.assertIn("by the profile module of Strata", f.read())
        for f in self.records():
            os.unlink(f)
        # The older names still work, and the stack's argument wins over them.
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1", STRATA_PROFILE_POLLS="exact")
        self.assertRan(self.profile_run([program("poll_c"), "10"], env=env,
                                        tools="profile:callsites=0"))
        record = self.only_record()
        self.assertNotIn("callsites", record)
        self.assertIs(record["job"]["poll_bytes_estimated"], False)
        listed = run([STRATA, "modules", "profile"], env=self.env)
        self.assertRan(listed)
        for text in ("callsites", "poll_sample", "write_timeout_ms", "STRATA_SPOOL",
                     "STRATA_COUNTERS", "STRATA_WRITE_TIMEOUT_MS"):
            self.assertIn(text, listed.stdout)

    def test_arguments_that_are_not_utf8(self):
        args = [STRATA.encode(), b"run", b"-np", b"2", b"--tools", b"profile", b"--",
                program("ring_c").encode(), b"2", b"\xff<b>"]
        proc = subprocess.run(args, env=self.env, capture_output=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.only_record()["job"]["argv"][-1], "\ufffd<b>")

    def test_call_sites_name_the_source_lines(self):
        source = os.path.join(os.path.dirname(__file__), "..", "programs", "ring.c")
        with open(source) as f:
            text = f.readlines()
        send_lines = sorted(i + 1 for i, l in enumerate(text) if l.strip().startswith("MPI_Send("))
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1")
        self.assertRan(self.profile_run([program("ring_c"), str(ITER)], env=env))
        rec = self.only_record()
        sends = [c for c in rec["callsites"] if c["function"] == "MPI_Send"]
        self.assertEqual(sorted(c["line"] for c in sends), send_lines)
        self.assertTrue(all(c["file"].endswith("ring.c") and c["caller"] == "main" for c in sends))
        self.assertEqual(sum(c["calls"] for c in sends), 2 * ITER)
        self.assertEqual(rec["callsites_dropped"], 0)
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        self.assertIn("Call sites by time", report.stdout)
        for line in send_lines:
            self.assertIn(f"ring.c:{line}", report.stdout)

    def test_waiting_rank_is_seen(self):
        proc = self.profile_run([program("late_sender_c"), "150"])
        self.assertRan(proc)
        recv = self.only_record()["routines"]["MPI_Recv"]
        self.assertEqual(recv["per_rank"]["time_s"]["max_rank"], 0)
        self.assertGreaterEqual(recv["time_s"], 0.4)  # 3 waits of 150 ms, minus jitter
        self.assertGreaterEqual(recv["max_s"], 0.13)

    def test_thread_multiple(self):
        iterations = 500
        proc = self.profile_run([program("threads_c"), str(iterations)])
        self.assertRan(proc)
        rec = self.only_record()
        self.assertEqual(rec["job"]["thread_level"], "MPI_THREAD_MULTIPLE")
        sr = rec["routines"]["MPI_Sendrecv"]
        self.assertEqual(sr["calls"], 2 * 2 * iterations)
        self.assertEqual(sr["bytes_sent"], 2 * 2 * iterations * 4)
        self.assertEqual(sr["bytes_received"], 2 * 2 * iterations * 4)

    def test_thread_multiple_killed_loses_nothing_counted(self):
        # The two threads of each rank count into arrays of their own in the rank file; the
        # ranks die by SIGKILL, and strata recover adds the arrays up.
        iterations = 500
        proc = self.profile_run([program("threads_c"), str(iterations), "kill"])
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.records(), [], "no record without MPI_Finalize")
        rec = run_until_ranks_are_gone([STRATA, "recover", self.spool], self.env)
        self.assertRan(rec)
        self.assertIn("partial record from 2 rank files", rec.stdout)
        sr = self.only_record()["routines"]["MPI_Sendrecv"]
        self.assertEqual(sr["calls"], 2 * 2 * iterations)
        self.assertEqual(sr["bytes_received"], 2 * 2 * iterations * 4)

    def test_user_report_and_extra_json(self):
        extra = os.path.join(self.out, "mine.json")
        env = dict(self.env, STRATA_PROFILE_OUT="-", STRATA_PROFILE_JSON=extra)
        proc = self.profile_run([program("ring_c"), str(ITER)], env=env)
        self.assertRan(proc)
        self.assertIn("MPI_Send", proc.stdout)
        self.assertIn("ring:", proc.stdout)
        with open(extra) as f:
            self.assertEqual(json.load(f)["routines"]["MPI_Send"]["calls"], 2 * ITER)

    def test_report_formats(self):
        self.assertRan(self.profile_run([program("ring_c"), str(ITER)]))
        record = self.records()[0]
        for fmt, needle in (("text", "MPI_Send"), ("json", '"strata.job/1"'), ("csv", "MPI_Send,"),
                            ("html", "<table")):
            with self.subTest(fmt=fmt):
                proc = run([STRATA, "report", record, "--format", fmt])
                self.assertRan(proc)
                self.assertIn(needle, proc.stdout)
        with open(record) as f:
            broken = json.load(f)
        broken["job"]["ranks"] = "four"
        bad = os.path.join(self.out, "bad.json")
        with open(bad, "w") as f:
            json.dump(broken, f)
        proc = run([STRATA, "report", bad])
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("job.ranks", proc.stderr)

    def test_the_programs_buffers_stay_where_malloc_puts_them_without_the_profile(self):
        # glibc raises its mmap threshold when a large block is freed: a profile that did so at
        # start would move the program's later buffers of that size from mappings of their own
        # into the heap.
        native = run(mpirun(2) + [program("allocator_c")], env=self.env)
        self.assertRan(native)
        expected = sorted(l for l in native.stdout.splitlines() if l.startswith("allocator:"))
        self.assertEqual(len(expected), 2, native.stdout)
        self.assertIn("160K=mapped", expected[0])  # glibc's default threshold is 128 KiB
        for extra in ({}, {"STRATA_PROFILE_CALLSITES": "1"}):
            proc = self.profile_run([program("allocator_c")], env=dict(self.env, **extra))
            self.assertRan(proc)
            got = sorted(l for l in proc.stdout.splitlines() if l.startswith("allocator:"))
            self.assertEqual(got, expected, extra)

    def test_counters_split_in_and_out_of_mpi(self):
        env = dict(self.env, STRATA_COUNTERS="task-clock,page-faults,cycles")
        proc = self.profile_run([program("late_sender_c"), "100"], env=env)
        self.assertRan(proc)
        counters = self.only_record()["job"]["counters"]
        # Rank 1 computes 300 ms outside MPI while rank 0 polls inside MPI_Recv: both parts get
        # CPU time (less than 300 ms each when the machine is busy: under a load of 15 on two
        # cores a rank gets about 40 ms of it, so the bound only says "clearly more than none").
        self.assertGreater(counters["task-clock"]["in_mpi"], 0.01e9)
        self.assertGreater(counters["task-clock"]["outside_mpi"], 0.01e9)
        self.assertIn("page-faults", counters)
        cycles_lines = [l for l in proc.stderr.splitlines() if "cycles" in l]
        if "cycles" not in counters:  # no PMU here: said once, and profiling went on
            self.assertEqual(len(cycles_lines), 1, proc.stderr)


class ReductionOverRanks(ProfileTestCase):
    """The record at finalize comes from one packed MPI_Reduce (src/profiler/packed_totals.hpp):
    ranks with different sets of routines, and per-rank maxima on ranks other than 0, must come
    out attributed to the right routine and the right rank."""

    def uneven_record(self, env):
        proc = self.profile_run([program("uneven_c"), "150"], ranks=4, env=env)
        self.assertRan(proc)
        self.assertEqual(proc.stdout.count(" done"), 4, proc.stdout)
        rec = self.only_record()
        job, routines = rec["job"], rec["routines"]
        self.assertEqual((job["ranks"], job["status"]), (4, "finalized"))
        self.assertEqual(job["host_names"], [socket.gethostname()[:63]])
        self.assertEqual(routines["MPI_Comm_size"]["calls"], 2 * (1 + 2 + 3))
        self.assertEqual(routines["MPI_Comm_size"]["per_rank"]["calls"],
                         {"min": 0, "mean": 3, "max": 6, "max_rank": 3})
        self.assertEqual(routines["MPI_Get_processor_name"]["per_rank"]["calls"],
                         {"min": 0, "mean": 2, "max": 8, "max_rank": 3})
        self.assertEqual(routines["MPI_Barrier"]["per_rank"]["calls"],
                         {"min": 1, "mean": 1, "max": 1, "max_rank": 0})
        send, recv = routines["MPI_Send"], routines["MPI_Recv"]
        self.assertEqual((send["calls"], send["bytes_sent"], send["count_sum"]), (3, 1200, 300))
        self.assertEqual(send["per_rank"]["calls"]["max_rank"], 2)
        self.assertEqual(send["per_rank"]["time_s"]["max_rank"], 2)
        self.assertEqual((recv["calls"], recv["bytes_received"]), (3, 1200))
        self.assertEqual(recv["per_rank"]["time_s"]["max_rank"], 1)
        self.assertEqual(recv["per_rank"]["time_s"]["min"], 0)
        self.assertGreaterEqual(recv["time_s"], 0.4)  # 3 waits of 150 ms, minus jitter
        self.assertAlmostEqual(recv["per_rank"]["time_s"]["max"], recv["time_s"])
        self.assertEqual(recv["size_histogram"], [[256, 3]])
        # Rank 1 waits in MPI_Recv while the others sleep outside MPI.
        self.assertEqual(job["mpi_percent_by_rank"]["max_rank"], 1)
        self.assertGreater(job["profiler_finalize_s"], 0)
        return rec

    def test_ranks_with_different_routines(self):
        self.uneven_record(self.env)
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        self.assertIn("record built at finalize in", report.stdout)

    def test_call_sites_of_ranks_with_texts_of_different_lengths(self):
        # Rank 3's call-site text is over twice as long as rank 0's; merged up the finalize tree.
        source = os.path.join(os.path.dirname(__file__), "..", "programs", "uneven.c")
        with open(source) as f:
            text = f.readlines()
        name_lines = [i + 1 for i, l in enumerate(text) if "MPI_Get_processor_name(name" in l]
        self.assertEqual(len(name_lines), 8)
        rec = self.uneven_record(dict(self.env, STRATA_PROFILE_CALLSITES="1"))
        sites = rec["callsites"]
        names = [c for c in sites if c["function"] == "MPI_Get_processor_name"]
        self.assertEqual(sorted(c["line"] for c in names), name_lines)
        self.assertTrue(all(c["calls"] == 1 and c["ranks"] == 1 for c in names), names)
        size = [c for c in sites if c["function"] == "MPI_Comm_size"]
        self.assertEqual([(c["calls"], c["ranks"]) for c in size], [(12, 3)])
        barrier = [c for c in sites if c["function"] == "MPI_Barrier"]
        self.assertEqual([(c["calls"], c["ranks"]) for c in barrier], [(4, 4)])
        self.assertEqual(rec["callsites_dropped"], 0)



class CallSitesOverRanks(ProfileTestCase):
    """Call sites merged per source line on the way up the finalize tree, 2 to 8 ranks: shared
    lines sum every rank, a rank's own lines stay its own, the counts exact."""

    def test_exact_counts_from_2_to_8_ranks(self):
        source = os.path.join(os.path.dirname(__file__), "..", "programs", "sites.c")
        with open(source) as f:
            text = f.readlines()
        line_of = lambda mark: next(i + 1 for i, l in enumerate(text) if f"/* {mark} */" in l)
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1")
        for ranks in range(2, 9):
            with self.subTest(ranks=ranks):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run([program("sites_c")], ranks=ranks, env=env)
                self.assertRan(proc)
                self.assertEqual(proc.stdout.count(" done"), ranks, proc.stdout)
                rec = self.only_record()
                self.assertEqual(rec["job"]["ranks"], ranks)
                self.assertEqual(rec["job"]["host_names"], [socket.gethostname()[:63]])
                self.assertEqual(rec["callsites_dropped"], 0)
                sites = {(c["function"], c["line"]): c for c in rec["callsites"]
                         if c["file"].endswith("sites.c")}
                figures = lambda function, mark: (
                    (sites[(function, line_of(mark))]["calls"], sites[(function, line_of(mark))]["ranks"])
                    if (function, line_of(mark)) in sites else None)
                self.assertEqual(figures("MPI_Comm_rank", "rank"), (ranks * (ranks + 1) // 2, ranks))
                self.assertEqual(figures("MPI_Barrier", "barrier"), (ranks, ranks))
                for k in range(3):
                    mine = [r for r in range(ranks) if r % 3 == k]
                    self.assertEqual(figures("MPI_Comm_size", f"size {k}"),
                                     (sum(r + 1 for r in mine), len(mine)) if mine else None)
                self.assertEqual(figures("MPI_Isend", "isend"), (ranks, ranks))
                isend = sites[("MPI_Isend", line_of("isend"))]
                self.assertEqual(isend["bytes"], 4 * sum(r + 1 for r in range(ranks)))
                for r in range(8):
                    self.assertEqual(figures("MPI_Get_processor_name", f"name {r}"),
                                     (1, 1) if r < ranks else None)
                # No site twice: merged per function, file and line.
                keys = [(c["function"], c["file"], c["line"]) for c in rec["callsites"]]
                self.assertEqual(len(keys), len(set(keys)))
                # Every rank's own call sites, summed, are the routine's calls.
                for routine in ("MPI_Comm_rank", "MPI_Barrier", "MPI_Comm_size", "MPI_Isend", "MPI_Get_processor_name"):
                    self.assertEqual(sum(c["calls"] for c in rec["callsites"] if c["function"] == routine),
                                     rec["routines"][routine]["calls"], routine)


    def test_a_subtree_that_does_not_answer_in_time_is_named_and_left_out(self):
        # Rank 3 of 5 (its subtree in the finalize tree: ranks 3 and 4) holds its figures past
        # its parent's deadline (STRATA_WRITE_TIMEOUT_MS per round below: 2 x 2 s) by the
        # module's fault injection; rank 0 goes on without them and the job ends.
        source = os.path.join(os.path.dirname(__file__), "..", "programs", "sites.c")
        with open(source) as f:
            text = f.readlines()
        line_of = lambda mark: next(i + 1 for i, l in enumerate(text) if f"/* {mark} */" in l)
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1", STRATA_WRITE_TIMEOUT_MS="2000",
                   STRATA_PROFILE_FAULT_STALL="3:10000")
        try:
            proc = self.profile_run([program("sites_c")], ranks=5, env=env)
        except subprocess.TimeoutExpired:
            self.fail("a job with a rank that stalls in finalize hung (no end within 120 s)")
        self.assertRan(proc)
        self.assertEqual(proc.stdout.count(" done"), 5, proc.stdout)
        self.assertIn("holding this rank's figures 10000 ms", proc.stderr)
        self.assertIn("the figures of ranks 3-4 did not arrive in time; the record goes on "
                      "without them", proc.stderr)
        rec = self.only_record()
        self.assertEqual((rec["job"]["ranks"], rec["job"]["ranks_reported"]), (5, 3))
        self.assertTrue(rec["job"]["partial"])
        # What is in the record is ranks 0-2's, exactly; ranks 3 and 4 are not in it.
        sites = {(c["function"], c["line"]): (c["calls"], c["ranks"]) for c in rec["callsites"]
                 if c["file"].endswith("sites.c")}
        self.assertEqual(sites[("MPI_Comm_rank", line_of("rank"))], (1 + 2 + 3, 3))
        self.assertEqual(sites[("MPI_Barrier", line_of("barrier"))], (3, 3))
        for r in range(5):
            self.assertEqual(("MPI_Get_processor_name", line_of(f"name {r}")) in sites, r < 3, r)
        # The routines' figures leave out the same ranks: one more MPI_Comm_rank per rank.
        self.assertEqual(rec["routines"]["MPI_Comm_rank"]["calls"], (1 + 2 + 3) + 3)
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        self.assertIn("only 3 of 5 ranks reported", report.stdout)
        # Nothing counted is lost: every rank's file stays, and strata recover rebuilds the
        # record from all five, ranks 3 and 4 included.
        self.assertIn("the record holds 3 of 5 ranks; every rank's file stays in the spool",
                      proc.stderr)
        rank_files = glob.glob(os.path.join(self.spool, "*.prof"))
        self.assertEqual(len(rank_files), 5, os.listdir(self.spool))
        recovered = run([STRATA, "recover", self.spool], self.env)
        self.assertRan(recovered)
        self.assertIn("partial record from 5 rank files", recovered.stdout)
        rec = self.only_record()
        self.assertEqual((rec["job"]["ranks"], rec["job"]["ranks_reported"]), (5, 5))
        self.assertEqual(rec["routines"]["MPI_Comm_rank"]["calls"], sum(r + 2 for r in range(5)))

    def test_profile_and_overhead_each_leave_out_a_rank_that_did_not_answer(self):
        # Both modules send their finalize tree over the tools' world, which the stack shares:
        # rank 1 holds its figures past rank 0's deadline in each (STRATA_PROFILE_FAULT_STALL is
        # read by both), so the profile's figures arrive late, after rank 0 went on. The overhead
        # module, whose tree comes next, must not take that late message for its own: both
        # records hold rank 0 only.
        from test_overhead import synthetic_model
        model = os.path.join(self.out, "model.json")
        with open(model, "w") as f:
            json.dump(synthetic_model(200e-6), f)
        env = dict(self.env, STRATA_MODEL=model, STRATA_WRITE_TIMEOUT_MS="1000",
                   STRATA_PROFILE_FAULT_STALL="1:2500")
        try:
            proc = self.profile_run([program("ring_c"), "3"], ranks=2, tools="profile,overhead",
                                    env=env)
        except subprocess.TimeoutExpired:
            self.fail("a job with a rank that stalls in finalize hung (no end within 120 s)")
        self.assertRan(proc)
        self.assertEqual(proc.stderr.count("holding this rank's figures 2500 ms"), 2, proc.stderr)
        self.assertEqual(proc.stderr.count("the figures of ranks 1-1 did not arrive in time"), 2,
                         proc.stderr)
        modules = {}
        for path in self.records():
            with open(path) as f:
                rec = json.load(f)
            modules[rec["job"].get("module", "profile")] = rec
        self.assertEqual(sorted(modules), ["overhead", "profile"], self.records())
        for name, rec in modules.items():
            self.assertEqual((rec["job"]["ranks"], rec["job"]["ranks_reported"]), (2, 1), name)
            self.assertTrue(rec["job"]["partial"], name)
        # The MPI library's variables go up the same tree: read on rank 0 only (none under
        # MPICH as Debian builds it).
        pvars = modules["profile"]["mpi_t"]["pvars"]
        self.assertEqual(bool(pvars), FLAVOR == "openmpi")
        self.assertEqual({p["ranks"] for p in pvars if not p["unread"]}, {1} if pvars else set(),
                         pvars[:2])

    def test_a_malformed_stall_is_one_line_and_ignored(self):
        # STRATA_PROFILE_FAULT_STALL wants RANK:MS; anything else is said once (by rank 0) and
        # the job's finalize goes on as without it: no rank holds its figures, the record is whole.
        for value in ("soon", "1:10ms"):
            with self.subTest(value=value):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run([program("ring_c"), str(ITER)],
                                        env=dict(self.env, STRATA_PROFILE_FAULT_STALL=value))
                self.assertRan(proc)
                lines = [l for l in proc.stderr.splitlines() if "STRATA_PROFILE_FAULT_STALL" in l]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertIn(f"STRATA_PROFILE_FAULT_STALL: '{value}' is not RANK:MS; ignored",
                              lines[0])
                self.assertNotIn("holding this rank's figures", proc.stderr)
                rec = self.only_record()
                self.assertEqual((rec["job"]["ranks"], rec["job"]["ranks_reported"]), (2, 2))
                self.assertFalse(rec["job"].get("partial", False))


class CppCallers(ProfileTestCase):
    def test_a_cpp_caller_is_named_as_its_source_names_it_in_record_and_report(self):
        out = os.path.join(self.out, "report.txt")
        proc = self.profile_run([program("hello_cpp")], tools=f"profile:callsites=1:out={out}")
        self.assertRan(proc)
        callers = {c["function"]: c["caller"] for c in self.only_record()["callsites"]}
        self.assertEqual(callers["MPI_Allreduce"], "hello::sum_of_ranks(int)")
        with open(out) as f:
            report = f.read()
        self.assertIn("hello::sum_of_ranks(int)", report)
        self.assertNotIn("_ZN5hello", report)


class CoreSums(ProfileTestCase):
    """The core sums the profile's timed calls into its slots (strata_module_timed_counts_v1)
    unless core_sums=0, which hands every timed call to the profile's callback as an event."""

    FIGURES = ("calls", "count_sum", "bytes_sent", "bytes_received", "size_histogram",
               "comm_size_histogram")

    def figures(self, prog_args, sums, ranks=2):
        for f in self.records():
            os.remove(f)
        proc = self.profile_run(prog_args, ranks=ranks,
                                env=dict(self.env, STRATA_PROFILE_CORE_SUMS=sums))
        self.assertRan(proc)
        return {name: {k: r.get(k) for k in self.FIGURES}
                for name, r in self.only_record()["routines"].items()}

    def test_the_same_figures_as_events_but_the_times(self):
        # Point to point with derived and predefined types, requests, collectives over
        # communicators of several sizes, and the ring in three languages.
        for prog_args, ranks in (([program("ring_c"), str(ITER)], 2),
                                 ([program("ring_f90"), str(ITER)], 2),
                                 ([program("datatypes_c")], 2),
                                 ([program("requests_c"), "10"], 4),
                                 ([program("uneven_c"), "150"], 4)):
            with self.subTest(prog=os.path.basename(prog_args[0])):
                summed = self.figures(prog_args, "1", ranks)
                self.assertEqual(summed, self.figures(prog_args, "0", ranks))
                self.assertGreater(sum(r["calls"] for r in summed.values()), 0)

    def test_a_timed_call_takes_fewer_instructions_without_an_event(self):
        # Counted by callgrind, which is exact where wall time is not (no timing here): one
        # rank's MPI_Barrier(MPI_COMM_SELF) loop, the difference between 2N and N calls. The
        # core's sum leaves out the event and the callback, about 100 instructions a call.
        bench = os.path.join(BUILD, "bench", FLAVOR, "timed_call")
        if not os.path.exists(bench):
            self.skipTest("no bench/timed_call in this build")

        def instructions(sums, calls):
            out = os.path.join(self.out, f"cg.{sums}.{calls}")
            env = dict(self.env, LD_PRELOAD=CORE, STRATA_TOOLS="profile",
                       STRATA_PROFILE_CORE_SUMS=sums)
            proc = run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", bench,
                        "--callgrind-iters", str(calls), "--callgrind-call", "barrier"], env=env)
            self.assertRan(proc)
            with open(out) as f:
                return next(int(line.split()[1]) for line in f if line.startswith("totals:"))

        per_call = {sums: (instructions(sums, 4000) - instructions(sums, 2000)) / 2000
                    for sums in ("1", "0")}
        self.assertLess(per_call["1"] + 50, per_call["0"], per_call)


class Pcontrol(ProfileTestCase):
    def test_levels(self):
        proc = self.profile_run([program("pcontrol_c")])
        self.assertRan(proc)
        routines = self.only_record()["routines"]
        self.assertNotIn("MPI_Allreduce", routines, "reset by MPI_Pcontrol(2)")
        self.assertEqual(routines["MPI_Barrier"]["calls"], 2 * (10 + 4), "5 paused barriers not counted")
        self.assertIn("rank 0 subtotal", proc.stderr)
        self.assertIn("rank 1 subtotal", proc.stderr)
        self.assertEqual(proc.stderr.count("MPI_Barrier") >= 3, True, proc.stderr)


class SiteDefault(ProfileTestCase):
    """docs/site-setup.md: the site's compiler wrappers link -lstrata, the site config lists
    `profile`, so every job is profiled with nothing set by the user; STRATA_DISABLE=1 opts out."""

    def build_with_site_wrapper(self):
        libdir = os.path.dirname(CORE)
        exe = os.path.join(self.out, "ring_site")
        source = os.path.join(os.path.dirname(__file__), "..", "programs", "ring.c")
        env = base_env()
        if FLAVOR == "openmpi":
            env["OMPI_LIBS"] = f"-L{libdir} -Wl,-rpath,{libdir} -lstrata -lmpi"
            cmd = ["mpicc.openmpi", source, "-o", exe]
        else:
            profile = os.path.join(self.out, "strata")
            with open(profile + ".conf", "w") as f:
                f.write(f'PROFILE_PRELIB="-L{libdir} -Wl,-rpath,{libdir} -lstrata"\n')
            cmd = ["mpicc.mpich", f"-profile={profile}", source, "-o", exe]
        proc = run(cmd, env=env)
        self.assertRan(proc)
        return exe

    def test_every_job_profiled_by_default_with_opt_out(self):
        exe = self.build_with_site_wrapper()
        site = os.path.join(self.out, "site.conf")
        with open(site, "w") as f:
            f.write("profile\n")
        env = dict(self.env, STRATA_SITE_CONFIG=site)
        self.assertRan(run(mpirun(2) + [exe, "3"], env=env))
        self.assertEqual(self.only_record()["routines"]["MPI_Send"]["calls"], 6)
        os.remove(self.records()[0])
        self.assertRan(run(mpirun(2) + [exe, "3"], env=dict(env, STRATA_DISABLE="1")))
        self.assertEqual(self.records(), [])


class Spool(ProfileTestCase):
    def test_unwritable_spool_falls_back_with_one_message(self):
        env = dict(self.env, STRATA_SPOOL="/proc/strata-cannot-be-here")
        proc = self.profile_run([program("ring_c"), "2"], env=env)
        self.assertRan(proc)
        lines = [l for l in proc.stderr.splitlines() if "not writable" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        fallback = os.path.join(self.out, ".strata", "spool")
        self.assertIn(fallback, lines[0])
        self.assertEqual(len(glob.glob(os.path.join(fallback, "*.json"))), 1)

    def test_record_owned_by_user_and_atomic(self):
        self.assertRan(self.profile_run([program("ring_c"), "2"]))
        files = os.listdir(self.spool)
        self.assertEqual([f for f in files if ".tmp." in f], [])
        st = os.stat(self.records()[0])
        self.assertEqual(st.st_uid, os.getuid())
        self.assertEqual(st.st_mode & 0o002, 0)

    def test_disable_leaves_no_record(self):
        env = dict(self.env, STRATA_DISABLE="1")
        self.assertRan(self.profile_run([program("ring_c"), "2"], env=env))
        self.assertEqual(self.records(), [])


def call_lines(binary, routine):
    """The source lines of the program's calls of ROUTINE's Fortran bindings, as its debug
    information gives them for each call instruction (objdump and addr2line, binutils)."""
    stem = routine[4:].lower()
    dump = subprocess.run(["objdump", "-d", binary], capture_output=True, text=True).stdout
    addresses = []
    for line in dump.splitlines():
        target = line.rsplit("<", 1)[-1] if "call" in line else ""
        if target.rstrip(">").split("@")[0] in (f"mpi_{stem}_", f"mpi_{stem}_f08_",
                                                f"mpi_{stem}_f08ts_"):
            addresses.append(hex(int(line.split(":")[0], 16)))
    if not addresses:
        return []
    out = subprocess.run(["addr2line", "-e", binary] + addresses, capture_output=True,
                         text=True).stdout
    return sorted({int(l.rsplit(":", 1)[1].split()[0]) for l in out.splitlines()})


class FortranAndConversions(ProfileTestCase):
    """Fortran programs (`use mpi`, `use mpi_f08`) on both MPIs: call sites name the program's
    lines, not the MPI's Fortran bindings, and the bindings' own handle conversions are not
    counted as the program's calls."""

    def test_call_sites_name_the_fortran_lines(self):
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1")
        for prog, source in (("ring_f90", "ring.f90"), ("ring_f08", "ring_f08.f90"),
                             ("nonblocking_f90", "nonblocking.f90")):
            with self.subTest(prog=prog):
                self.assertRan(self.profile_run([program(prog), str(ITER)], env=env))
                rec = self.only_record()
                os.remove(self.records()[0])
                self.assertEqual(rec["job"]["language"], "Fortran")
                # The lines the program's debug information gives its call instructions (the
                # source's call lines, but gfortran files some calls under a loop's or the
                # program statement's line).
                for routine in ("MPI_Send", "MPI_Irecv", "MPI_Waitall", "MPI_Wait", "MPI_Test",
                                "MPI_Allreduce"):
                    expected = call_lines(program(prog), routine)
                    sites = [c for c in rec["callsites"] if c["function"] == routine]
                    self.assertEqual(sorted({c["line"] for c in sites}), expected, routine)
                    self.assertTrue(all(c["file"].endswith(source) for c in sites), sites)

    def test_language_is_what_the_program_called(self):
        # A C++ program that links a Fortran library (and libgfortran) calls MPI from C++.
        self.assertRan(self.profile_run([program("cpp_with_fortran")]))
        self.assertIn("libgfortran", subprocess.run(["ldd", program("cpp_with_fortran")],
                                                    capture_output=True, text=True).stdout)
        self.assertEqual(self.only_record()["job"]["language"], "C/C++")

    def test_bindings_conversions_are_not_the_programs_calls(self):
        self.assertRan(self.profile_run([program("nonblocking_f90"), str(ITER)]))
        routines = self.only_record()["routines"]
        os.remove(self.records()[0])
        conversions = [r for r in routines if r.endswith(("_f2c", "_c2f", "_c2f08", "_f082c"))]
        self.assertEqual(conversions, [])
        self.assertEqual(routines["MPI_Irecv"]["calls"], 2 * (ITER + 2))
        self.assertEqual(routines["MPI_Waitall"]["calls"], 2 * ITER)
        # A C program's own conversions are its calls (under MPICH they are macros, no calls).
        self.assertRan(self.profile_run([program("conversions_c")]))
        routines = self.only_record()["routines"]
        called = subprocess.run(["nm", "-D", "--undefined-only", program("conversions_c")],
                                capture_output=True, text=True).stdout
        for name in ("MPI_Comm_c2f", "MPI_Comm_f2c", "MPI_Type_c2f", "MPI_Type_f2c"):
            if f" {name}\n" in called + "\n" or called.endswith(f" {name}"):
                self.assertEqual(routines[name]["calls"], 6, name)
            else:
                self.assertNotIn(name, routines)
