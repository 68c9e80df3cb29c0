"""The analysis as an MPI job: `mpirun -np N strata analyze` and `strata analyze --np N` give
exactly the report of the serial analyzer (equal JSON) for N = 1 up to the trace's locations,
also N that does not divide them, on real traces of real programs and on a synthetic trace of 64
locations; `strata trace export --xml` the same way gives the serial export's files byte for
byte; a damaged archive gives one line from the first analysis process and every process
exits."""
import json
import os
import shutil
import subprocess
import unittest

from strata_testlib import BUILD, FLAVOR, STRATA, StrataTestCase, base_env, mpirun, program, run, strata_run

TRACE_MODULE = os.path.join(BUILD, "lib", "strata", FLAVOR, "modules", "trace.so")
WORKER = os.path.join(BUILD, "lib", "strata", FLAVOR, "strata-analyze")
EXAMPLES = os.path.join(BUILD, "examples", FLAVOR)
GEN_TRACE = os.path.join(BUILD, "bench", "gen_trace")
# A hung analysis is a failure with this message, not a test-suite timeout.
LIMIT_S = 150


class AnalysisCase(StrataTestCase):
    def bounded(self, args, what, env=None):
        try:
            return run(args, env=env, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            self.fail(f"{what} did not finish within {LIMIT_S} s (hung): {' '.join(args)}")

    def serial(self, trace):
        proc = self.bounded([STRATA, "analyze", "--json", trace], "the serial analysis")
        self.assertRan(proc)
        return json.loads(proc.stdout)

    def assertSameAnalysis(self, trace, counts, launched=(2,)):
        """Serial against mpirun -np N strata analyze, for each N; --np N for those in launched."""
        reference = self.serial(trace)
        for n in counts:
            with self.subTest(processes=n):
                proc = self.bounded(mpirun(n) + [STRATA, "analyze", "--json", trace],
                                    f"mpirun -np {n} strata analyze")
                self.assertRan(proc)
                self.assertEqual(json.loads(proc.stdout), reference)
        for n in launched:
            with self.subTest(launched=n):
                proc = self.bounded([STRATA, "analyze", "--np", str(n), "--mpi", FLAVOR, "--json",
                                     trace], f"strata analyze --np {n}")
                self.assertRan(proc)
                self.assertEqual(json.loads(proc.stdout), reference)
        return reference

    def xml_files(self, directory):
        files = {}
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name), "rb") as f:
                files[name] = f.read()
        return files

    def assertSameXml(self, trace, counts, launched=(2,)):
        """The serial XML export against mpirun -np N strata trace export --xml, byte for byte."""
        serial_dir = os.path.join(self.out, "xml-serial")
        proc = self.bounded([STRATA, "trace", "export", "--xml", trace, "--out", serial_dir],
                            "the serial XML export")
        self.assertRan(proc)
        reference = self.xml_files(serial_dir)
        summary = proc.stdout.replace(serial_dir, "OUT")
        runs = [(n, mpirun(n) + [STRATA, "trace", "export", "--xml"]) for n in counts]
        runs += [(f"--np {n}", [STRATA, "trace", "export", "--xml", "--np", str(n), "--mpi",
                                FLAVOR]) for n in launched]
        for n, command in runs:
            with self.subTest(processes=n):
                out = os.path.join(self.out, f"xml-{n}".replace(" ", ""))
                proc = self.bounded(command + [trace, "--out", out], f"XML export by {n}")
                self.assertRan(proc)
                self.assertEqual(proc.stdout.replace(out, "OUT"), summary)
                self.assertEqual(self.xml_files(out), reference)
        return reference


@unittest.skipUnless(os.path.exists(TRACE_MODULE) and os.path.exists(WORKER),
                     "the trace module or the analysis worker is not built")
class ParallelAnalysisOfRealTraces(AnalysisCase):
    def traced(self, prog_args, ranks):
        trace = os.path.join(self.out, "trace")
        proc = strata_run("trace", prog_args, ranks=ranks, env=base_env(STRATA_TRACE_DIR=trace),
                          timeout=180)
        self.assertRan(proc)
        return trace

    def test_every_wait_state_on_sub_communicators_equal_at_1_to_5_processes(self):
        trace = self.traced([program("wait_patterns_c"), "20"], ranks=5)
        report = self.assertSameAnalysis(trace, (1, 2, 3, 4, 5))
        # The trace holds what the comparison is about: every pattern, wildcard and out-of-order
        # messages all matched, collectives on three communicators.
        patterns = {w["pattern"] for w in report["wait_states"]}
        self.assertEqual(patterns, {"late_sender", "late_receiver", "wait_at_nxn",
                                    "wait_at_barrier", "late_broadcast", "early_reduce"})
        self.assertEqual(report["unmatched_sends"] + report["unmatched_receives"], 0, report)
        self.assertEqual(report["incomplete_collectives"], 0, report)
        # Per communicator of size s: 2 + (s - 1) + 2 + s messages; world 5, halves 3 and 2,
        # pairs 2, 2 (and one of size 1, which sends nothing).
        per_comm = lambda s: 2 + (s - 1) + 2 + s
        self.assertEqual(report["messages"],
                         per_comm(5) + per_comm(3) + per_comm(2) + 2 * per_comm(2))
        self.assertEqual(report["warnings"], [])

    def test_xml_export_byte_for_byte_at_1_to_5_processes(self):
        trace = self.traced([program("wait_patterns_c"), "5"], ranks=5)
        files = self.assertSameXml(trace, (1, 2, 3, 5))
        self.assertEqual(len(files), 6)  # hieraCollector.xml and one file per rank
        for r in range(5):
            self.assertIn(b'operation="barrier"', files[f"trace{r}.xml"])
            self.assertIn(b"<hieraMPI", files[f"trace{r}.xml"])

    def test_wildcard_nonblocking_trace_equal_at_1_to_3_processes(self):
        trace = self.traced([program("nonblocking_wildcard_c"), "6", "20"], ranks=3)
        report = self.assertSameAnalysis(trace, (1, 2, 3), launched=(3,))
        self.assertEqual(report["messages"], 18)

    @unittest.skipUnless(os.path.exists(os.path.join(EXAMPLES, "ljmd_mpi")), "no LJ example")
    def test_lennard_jones_trace_equal_at_1_to_4_processes(self):
        trace = self.traced([os.path.join(EXAMPLES, "ljmd_mpi"), "4", "10", "10"], ranks=4)
        report = self.assertSameAnalysis(trace, (1, 2, 3, 4))
        self.assertGreater(report["messages"], 0)
        self.assertGreater(report["collectives"], 0)

    def test_in_job_analysis_equals_post_mortem(self):
        trace = os.path.join(self.out, "trace")
        proc = strata_run("trace:analyze=1", [program("wait_patterns_c"), "10"], ranks=4,
                          env=base_env(STRATA_TRACE_DIR=trace), timeout=LIMIT_S)
        self.assertRan(proc)
        # The time it added to MPI_Finalize is reported, and the archive is whole.
        self.assertRegex(proc.stderr, r"strata: trace: analysis in .*analysis\.json .*"
                                      r"[0-9.]+ s added to MPI_Finalize")
        with open(os.path.join(trace, "analysis.json")) as f:
            in_job = json.load(f)
        self.assertEqual(in_job, self.serial(trace))
        self.assertGreater(len(in_job["wait_states"]), 0)
        text = self.bounded([STRATA, "analyze", trace], "the serial analysis")
        with open(os.path.join(trace, "analysis.txt")) as f:
            self.assertEqual(f.read(), text.stdout)

    def test_in_job_analysis_over_its_limit_is_skipped_and_the_trace_kept(self):
        trace = os.path.join(self.out, "trace")
        proc = strata_run("trace:analyze=1:analyze_limit=0", [program("wait_patterns_c"), "1"],
                          ranks=2, env=base_env(STRATA_TRACE_DIR=trace), timeout=LIMIT_S)
        self.assertRan(proc)
        self.assertIn("analysis skipped", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(trace, "analysis.json")))
        self.assertGreater(self.serial(trace)["messages"], 0)


@unittest.skipUnless(os.path.exists(WORKER) and os.path.exists(GEN_TRACE),
                     "the analysis worker or gen_trace is not built")
class ParallelAnalysisOfSyntheticTraces(AnalysisCase):
    def test_64_locations_equal_at_1_to_4_and_7_processes(self):
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "64", "200000"]))
        report = self.assertSameAnalysis(trace, (1, 2, 3, 4, 7))
        self.assertEqual(report["ranks"], 64)
        self.assertGreater(report["messages"], 0)

    def test_xml_export_of_64_locations_byte_for_byte_at_3_and_7_processes(self):
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "64", "100000"]))
        files = self.assertSameXml(trace, (3, 7), launched=())
        self.assertEqual(len(files), 65)
        self.assertIn(b'count_proc="64"', files["hieraCollector.xml"])

    def test_many_exchange_rounds_give_the_same_report(self):
        # Small rounds: the partners of a message or a collective are read in different rounds.
        # The smallest at 2 processes: with more processes than cores, each of a round's
        # collectives waits for a process the others' busy polling keeps off a core (MPICH's
        # ranks spin while they wait); 5 processes at batch 50 took 29 s and 42 CPU-seconds on
        # 2 cores, at batch 250 about 5 s.
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "12", "60000"]))
        reference = self.serial(trace)
        for n, batch in ((2, 50), (3, 777), (5, 250)):
            with self.subTest(processes=n, batch=batch):
                proc = self.bounded(mpirun(n) + [WORKER, "--json", "--batch", str(batch), trace],
                                    f"mpirun -np {n} strata-analyze --batch {batch}")
                self.assertRan(proc)
                self.assertEqual(json.loads(proc.stdout), reference)

    def test_more_processes_than_locations_is_one_line(self):
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "2", "2000"]))
        proc = self.bounded(mpirun(3) + [STRATA, "analyze", trace], "mpirun -np 3 strata analyze")
        self.assertNotEqual(proc.returncode, 0)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata analyze:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("3 analysis processes for a trace of 2 locations", lines[0])

    def assertCleanParallelFailure(self, trace, fragment, processes=3):
        proc = self.bounded(mpirun(processes) + [STRATA, "analyze", "--json", trace],
                            f"mpirun -np {processes} strata analyze of a damaged archive")
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout, "", "no partial report")
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata analyze:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(fragment, lines[0])

    def test_damaged_archives_give_one_line_and_every_process_exits(self):
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "4", "20000"]))
        # One process's events cut short: the others read theirs, and all stop.
        evt = os.path.join(trace, "traces", "3.evt")
        os.truncate(evt, os.path.getsize(evt) // 2)
        self.assertCleanParallelFailure(trace, trace)
        shutil.rmtree(trace)
        self.assertRan(run([GEN_TRACE, trace, "4", "20000"]))
        os.remove(os.path.join(trace, "traces", "2.evt"))
        self.assertCleanParallelFailure(trace, "rank 2")
        shutil.rmtree(trace)
        self.assertRan(run([GEN_TRACE, trace, "4", "20000"]))
        defs = os.path.join(trace, "traces.def")
        os.truncate(defs, os.path.getsize(defs) // 2)
        self.assertCleanParallelFailure(trace, "definitions")
        self.assertCleanParallelFailure(os.path.join(self.out, "nothing"), "no such trace archive")

    def test_the_anchor_is_probed_once_per_job(self):
        # The analyzer has otf2-print read the anchor file in a process of its own before
        # opening it; process 0 does it for all, and the export's three readers share it. A
        # printer first in PATH counts its starts and keeps their arguments.
        printer = shutil.which("otf2-print")
        if printer is None:
            self.skipTest("otf2-print is not installed (otf2-tools)")
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "4", "20000"]))
        bindir = os.path.join(self.out, "bin")
        os.makedirs(bindir)
        starts = os.path.join(self.out, "starts")
        with open(os.path.join(bindir, "otf2-print"), "w") as f:
            f.write(f'#!/bin/sh\necho "$@" >> {starts}\nexec {printer} "$@"\n')
        os.chmod(os.path.join(bindir, "otf2-print"), 0o755)
        env = base_env(PATH=bindir + os.pathsep + os.environ["PATH"])

        def probes(command):
            if os.path.exists(starts):
                os.remove(starts)
            proc = self.bounded(command, " ".join(command), env=env)
            with open(starts) as f:
                return proc, len(f.readlines())

        out = os.path.join(self.out, "xml")
        for command in (mpirun(3) + [STRATA, "analyze", "--json", trace],
                        mpirun(3) + [STRATA, "trace", "export", "--xml", trace, "--out", out],
                        [STRATA, "trace", "export", "--xml", trace, "--out", out + "-serial"]):
            with self.subTest(command=" ".join(command)):
                proc, count = probes(command)
                self.assertRan(proc)
                self.assertEqual(count, 1)
        # The printer reads the anchor file alone, whatever the archive holds: its output is the
        # anchor's few lines, not the archive's 20,000 events (which could outlast its 30 s).
        with open(starts) as f:
            printed = run([printer] + f.readline().split())
        self.assertRan(printed)
        self.assertLess(len(printed.stdout.splitlines()), 100, printed.stdout[:2000])
        # A damaged anchor: process 0's verdict is every process's, one line, no hang.
        anchor = os.path.join(trace, "traces.otf2")
        with open(anchor, "rb") as f:
            data = bytearray(f.read())
        data[data.index(b"STRATA::VERSION") - 1] = 0x80
        with open(anchor, "wb") as f:
            f.write(data)
        proc, count = probes(mpirun(3) + [STRATA, "analyze", "--json", trace])
        self.assertNotEqual(proc.returncode, 0)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata analyze:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("a damaged OTF2 anchor file", lines[0])
        self.assertEqual(count, 1)

    def test_xml_export_of_a_damaged_archive_is_one_line_and_no_collector_file(self):
        trace = os.path.join(self.out, "trace")
        self.assertRan(run([GEN_TRACE, trace, "4", "20000"]))
        evt = os.path.join(trace, "traces", "3.evt")
        os.truncate(evt, os.path.getsize(evt) // 2)
        out = os.path.join(self.out, "xml")
        for command in (mpirun(3) + [STRATA, "trace", "export", "--xml", trace, "--out", out],
                        mpirun(5) + [STRATA, "trace", "export", "--xml", trace, "--out", out]):
            with self.subTest(command=" ".join(command)):
                proc = self.bounded(command, "the XML export of a damaged archive")
                self.assertNotEqual(proc.returncode, 0)
                self.assertEqual(proc.stdout, "")
                lines = [l for l in proc.stderr.splitlines()
                         if l.startswith("strata trace export:")]
                self.assertEqual(len(lines), 1, proc.stderr)
                # The configuration names complete files only: it is not written.
                self.assertFalse(os.path.exists(os.path.join(out, "hieraCollector.xml")))
        self.assertIn(trace, lines[0])


if __name__ == "__main__":
    unittest.main()
