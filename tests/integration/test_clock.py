"""The event clock: the time-stamp counter where the CPU says it is invariant, checked at
MPI_Finalize and at subtotals against CLOCK_MONOTONIC, its result in the job record; a forced
bad calibration caught and corrected, a thread moved to another CPU in the middle of a call."""
import glob
import json
import os
import platform
import re
import shutil

from strata_testlib import CORE, STRATA, StrataTestCase, base_env, program, run, strata_run

# STRATA_CLOCK_TEST_RATE_ERROR_PPM scales the calibrated rate: the event clock runs 20 % fast.
FORCED_PPM = 200000


def invariant_tsc():
    if platform.machine() != "x86_64":
        return False
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return "constant_tsc" in flags and "nonstop_tsc" in flags


def kernel_clocksource():
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


class ClockTestCase(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")

    def profile(self, prog_args, **env):
        for f in glob.glob(os.path.join(self.spool, "*.json")):
            os.remove(f)
        proc = strata_run("profile", prog_args, env=base_env(STRATA_SPOOL=self.spool, HOME=self.out, **env))
        self.assertRan(proc)
        files = glob.glob(os.path.join(self.spool, "*.json"))
        self.assertEqual(len(files), 1, proc.stderr)
        with open(files[0]) as f:
            return proc, json.load(f), files[0]

    def assertRecvWithinWall(self, record, at_least_s):
        """Rank 0's MPI_Recv waited at least at_least_s, and no rank's time in it can exceed
        the job's wall time (CLOCK_MONOTONIC): a clock running 20 % fast would."""
        recv = record["routines"]["MPI_Recv"]["per_rank"]["time_s"]
        self.assertGreaterEqual(recv["max"], at_least_s)
        self.assertLessEqual(recv["max"], record["job"]["wall_time_s"])


class Source(ClockTestCase):
    def test_record_says_which_clock_and_that_it_held(self):
        _, record, _ = self.profile([program("ring_c"), "20"])
        clock = record["job"]["clock"]
        self.assertEqual(clock["kernel_clocksource"], kernel_clocksource())
        self.assertEqual(clock["status"], "ok", clock)
        if not invariant_tsc():
            self.assertEqual(clock["source"], "monotonic")
            return
        # Whatever the kernel keeps time with (kvm-clock in most virtual machines).
        self.assertEqual(clock["source"], "tsc")
        self.assertGreater(clock["tsc_hz"], 1e8)
        self.assertLess(clock["rate_spread_ppm"], 100)
        self.assertTrue(clock["offset_ns"] <= 1000 or clock["drift_ppm"] <= 100, clock)

    def test_monotonic_forces_the_safe_path(self):
        _, record, _ = self.profile([program("ring_c"), "5"], STRATA_CLOCK="monotonic",
                                    STRATA_CLOCK_TEST_RATE_ERROR_PPM=str(FORCED_PPM))
        clock = record["job"]["clock"]
        self.assertEqual((clock["source"], clock["tsc_hz"], clock["status"]), ("monotonic", 0, "ok"))
        self.assertEqual(clock["offset_ns"], 0)


class Check(ClockTestCase):
    def setUp(self):
        super().setUp()
        if not invariant_tsc():
            self.skipTest("the CPU's time-stamp counter is not invariant: the clock is clock_gettime")

    def test_forced_bad_calibration_is_caught_and_corrected(self):
        _, record, path = self.profile([program("late_sender_c"), "150"],
                                       STRATA_CLOCK_TEST_RATE_ERROR_PPM=str(FORCED_PPM))
        clock = record["job"]["clock"]
        self.assertEqual(clock["status"], "corrected", clock)
        self.assertAlmostEqual(clock["drift_ppm"], FORCED_PPM, delta=FORCED_PPM * 0.05)
        self.assertGreater(clock["offset_ns"], 50_000_000)  # 20 % of half a second at least
        self.assertRecvWithinWall(record, 0.4)  # 3 waits of 150 ms
        report = run([STRATA, "report", path])
        self.assertRan(report)
        self.assertIn("times corrected for a calibration error", report.stdout)

    def test_subtotal_checks_the_clock_too(self):
        proc, record, _ = self.profile([program("pcontrol_c")],
                                       STRATA_CLOCK_TEST_RATE_ERROR_PPM=str(FORCED_PPM))
        # MPI_Pcontrol(4) prints the job's subtotal, checked and corrected as the record is.
        self.assertIn("times corrected for a calibration error", proc.stderr)
        self.assertEqual(record["job"]["clock"]["status"], "corrected")


class Migration(ClockTestCase):
    def setUp(self):
        super().setUp()
        if os.cpu_count() < 2:
            self.skipTest("one CPU: nowhere to migrate to")

    def migrate(self, **env):
        proc, record, _ = self.profile([program("migrate_c"), "200"], **env)
        moved = [line.split() for line in proc.stdout.splitlines() if line.startswith("migrated from")]
        self.assertEqual(len(moved), 1, proc.stdout)
        self.assertNotEqual(moved[0][2], moved[0][4], "taskset did not move rank 0")
        return record

    def test_a_call_across_cpus_keeps_its_time(self):
        record = self.migrate()
        clock = record["job"]["clock"]
        if clock["source"] == "tsc":
            self.assertTrue(clock["migrated"], clock)
        # This machine's CPUs agree; where they did not, the record would say "flagged".
        self.assertEqual(clock["status"], "ok", clock)
        self.assertRecvWithinWall(record, 0.18)

    def test_bad_calibration_caught_after_a_migration(self):
        if not invariant_tsc():
            self.skipTest("the CPU's time-stamp counter is not invariant")
        record = self.migrate(STRATA_CLOCK_TEST_RATE_ERROR_PPM=str(FORCED_PPM))
        clock = record["job"]["clock"]
        self.assertTrue(clock["migrated"], clock)
        # The check asked the CPU of the calibration again: the same error there, a rate error.
        self.assertEqual(clock["status"], "corrected", clock)
        self.assertRecvWithinWall(record, 0.18)


class Valgrind(StrataTestCase):
    def test_no_instruction_valgrind_runs_only_on_some_machines(self):
        # Valgrind's own CPUID tells the program every x86-64 has rdtscp, but valgrind decodes
        # it only where the host's CPUID says so, and RDPID nowhere: either ends a program under
        # valgrind with SIGILL on some machines (AMD EPYC virtual machines among them).
        if platform.machine() != "x86_64":
            self.skipTest("not an x86-64 machine")
        objdump = shutil.which("objdump")
        if objdump is None:
            self.skipTest("no objdump")
        libraries = [CORE] + sorted(glob.glob(os.path.join(os.path.dirname(CORE), "modules", "*.so")))
        for library in libraries:
            proc = run([objdump, "-d", "--no-show-raw-insn", library])
            self.assertRan(proc)
            found = sorted({m for m in re.findall(r"\t(rdtscp|rdpid)\b", proc.stdout)})
            self.assertEqual(found, [], library)


class Trace(ClockTestCase):
    def test_trace_says_when_its_clock_failed(self):
        if not invariant_tsc():
            self.skipTest("the CPU's time-stamp counter is not invariant")
        args = [STRATA, "run", "-np", "2", "--tools", "trace", "--", program("late_sender_c"), "100"]
        proc = run(args, env=base_env(STRATA_CLOCK_TEST_RATE_ERROR_PPM=str(FORCED_PPM)), cwd=self.out)
        self.assertRan(proc)
        # Its offsets to rank 0 align the ranks, not an error they share: each rank says so.
        for rank in (0, 1):
            said = re.search(rf"trace: rank {rank}: the time-stamp counter was ([0-9.]+) ppm", proc.stderr)
            self.assertIsNotNone(said, proc.stderr)
            # The forced error plus what a loaded machine adds to the calibration and the check.
            self.assertAlmostEqual(float(said.group(1)), FORCED_PPM, delta=FORCED_PPM * 0.05, msg=proc.stderr)
        proc = run(args, env=base_env(), cwd=self.out)
        self.assertRan(proc)
        self.assertNotIn("time-stamp counter", proc.stderr)
