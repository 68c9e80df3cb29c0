"""strata analyze and strata trace export --xml on traces of real programs, written by the trace
module under real mpirun (each MPI flavor)."""
import json
import os
import re
import shutil
import unittest

from strata_testlib import (BUILD, FLAVOR, STRATA, StrataTestCase, base_env, line_of, program, run,
                            strata_run)

TRACE_MODULE = os.path.join(BUILD, "lib", "strata", FLAVOR, "modules", "trace.so")


@unittest.skipUnless(os.path.exists(TRACE_MODULE), "the trace module is not built")
class AnalyzeRealTraces(StrataTestCase):
    def traced(self, prog_args, ranks=2, output=None, tools="trace"):
        trace = os.path.join(self.out, "trace")
        proc = strata_run(tools, prog_args, ranks=ranks, env=base_env(STRATA_TRACE_DIR=trace),
                          timeout=180)
        self.assertRan(proc)
        if output is not None:
            output.append(proc.stdout)
        return trace

    def analyze(self, trace):
        proc = run([STRATA, "analyze", "--json", trace])
        self.assertRan(proc)
        return json.loads(proc.stdout)

    def test_injected_delay_is_a_late_sender_at_the_receive_line(self):
        iterations, delay_ms = 12, 100
        output = []
        trace = self.traced([program("injected_delay_c"), str(iterations), str(delay_ms)],
                            output=output)
        report = self.analyze(trace)
        injected_s = (iterations // 4) * delay_ms / 1000
        self.assertIn(f"injected {int(injected_s * 1000)} ms", output[0])
        # Rank 0's own measure of its time in the marked receive: the injected delay plus
        # whatever this busy machine's scheduling added.
        waited_s = float(re.search(r"waited ([0-9.]+) ms", output[0]).group(1)) / 1000
        line = line_of("injected_delay.c", "/* LATE SENDER */")
        rows = [w for w in report["wait_states"]
                if w["pattern"] == "late_sender" and w["rank"] == 0 and w["line"] == line]
        self.assertEqual(len(rows), 1, report["wait_states"])
        self.assertEqual(rows[0]["function"], "MPI_Recv")
        self.assertTrue(rows[0]["file"].endswith("injected_delay.c"), rows[0])
        # A late sender is at most the time in the receive, and holds at least most of the
        # injected delay (rank 1 computes it after the barrier both left). Not a share of the
        # receive's whole time: on a loaded machine the message can take long after the send
        # starts (measured: 409 of 648 ms, load 15).
        self.assertLessEqual(rows[0]["time_s"], waited_s + 0.001, (rows[0], waited_s))
        self.assertGreater(rows[0]["time_s"], 0.65 * injected_s, (rows[0], waited_s))
        # The injected time is the largest late sender in the trace.
        senders = [w for w in report["wait_states"] if w["pattern"] == "late_sender"]
        self.assertEqual(max(senders, key=lambda w: w["time_s"]), rows[0])
        self.assertEqual(report["unmatched_sends"] + report["unmatched_receives"], 0)
        self.assertEqual(report["messages"], iterations)

    def test_isend_irecv_waitall_with_wildcards_match_on_a_real_trace(self):
        iterations, delay_ms, ranks = 6, 200, 3
        output = []
        trace = self.traced([program("nonblocking_wildcard_c"), str(iterations), str(delay_ms)],
                            ranks=ranks, output=output)
        report = self.analyze(trace)
        self.assertEqual(report["messages"], iterations * ranks, report["warnings"])
        self.assertEqual(report["unmatched_sends"] + report["unmatched_receives"], 0)
        line = line_of("nonblocking_wildcard.c", "/* WAITALL */")
        rows = [w for w in report["wait_states"]
                if w["pattern"] == "late_sender" and w["rank"] == 1 and w["line"] == line]
        self.assertEqual(len(rows), 1, report["wait_states"])
        self.assertEqual(rows[0]["function"], "MPI_Waitall")
        # At most rank 1's own measure of its time in the Waitalls of that line (the delay plus
        # the other iterations' waits and what a busy machine's scheduling added), at least most
        # of the delay.
        waited_s = float(re.search(r"waited ([0-9.]+) ms", output[0]).group(1)) / 1000
        self.assertLessEqual(rows[0]["time_s"], waited_s + 0.001, (rows[0], waited_s))
        self.assertGreater(rows[0]["time_s"], 0.65 * delay_ms / 1000, (rows[0], waited_s))
        ops = {(o["rank"], o["operation"]): o["count"] for o in report["operations"]
               if o["line"] == line}
        for r in range(ranks):
            self.assertEqual(ops[(r, "MPI_Waitall")], iterations)

    def test_levels_of_annotated_regions(self):
        iterations = 5
        trace = self.traced([program("levels_cpp"), str(iterations)], ranks=2)
        report = self.analyze(trace)
        levels = {(l["rank"], l["level"]): l["count"] for l in report["levels"]}
        mpi_line = line_of("levels.cpp", "/* MPI BCAST */")
        # A region's call site is the line of its STRATA_REGION (the trace module's convention).
        group_line = line_of("levels.cpp", 'STRATA_REGION("Group::bcast")')
        grid_line = line_of("levels.cpp", 'STRATA_REGION("TopologyGrid::bcast")')
        barrier_line = line_of("levels.cpp", "MPI_Barrier(MPI_COMM_WORLD);")
        for r in range(2):
            # Level 1: only Group::bcast; level 2: only MPI_Bcast.
            self.assertEqual(levels.get((r, 1)), iterations, report["levels"])
            self.assertEqual(levels.get((r, 2)), iterations, report["levels"])
            self.assertNotIn((r, 3), levels)
            rows = {(o["category"], o["operation"], o["line"]): o for o in report["operations"]
                    if o["rank"] == r}
            self.assertEqual(rows[("mpi", "MPI_Bcast", mpi_line)]["count"], iterations, rows)
            self.assertEqual(rows[("user", "Group::bcast", group_line)]["count"], iterations, rows)
            self.assertEqual(rows[("user", "TopologyGrid::bcast", grid_line)]["count"], iterations)
            self.assertEqual(rows[("mpi", "MPI_Barrier", barrier_line)]["count"], 1, rows)
        totals = {(t["category"], t["operation"]): t["count"] for t in report["totals"]}
        self.assertEqual(totals[("mpi", "MPI_Bcast")], 2 * iterations)
        self.assertEqual(totals[("user", "TopologyGrid::bcast")], 2 * iterations)
        # The XML keeps the nesting: grid > group > broadcast.
        out = os.path.join(self.out, "xml")
        self.assertRan(run([STRATA, "trace", "export", "--xml", trace, "--out", out]))
        import xml.etree.ElementTree as ET
        root = ET.parse(os.path.join(out, "trace1.xml")).getroot()
        grids = [e for e in root if e.get("name") == "TopologyGrid::bcast"]
        self.assertEqual(len(grids), iterations)
        for grid in grids:
            self.assertEqual(grid.get("class"), "TopologyGrid")
            self.assertEqual(grid.get("method"), "bcast")
            (group,) = list(grid)
            self.assertEqual(group.get("name"), "Group::bcast")
            (mpi,) = list(group)
            self.assertEqual((mpi.tag, mpi.get("operation"), mpi.get("root")),
                             ("hieraMPI", "broadcast", "0"))
            self.assertLessEqual(float(grid.get("start_time")), float(mpi.get("start_time")))
            self.assertLessEqual(float(mpi.get("finish_time")), float(grid.get("finish_time")))

    def test_a_stripped_program_has_call_sites_by_binary_and_offset_as_in_the_profile(self):
        # No line information: the trace names each call site as the profile's record does,
        # binary+offset with line 0, and the analyzer's tables keep them.
        stripped = os.path.join(self.out, "ring_stripped")
        shutil.copy(program("ring_c"), stripped)
        self.assertRan(run(["strip", stripped]))
        trace, spool = os.path.join(self.out, "trace"), os.path.join(self.out, "spool")
        proc = strata_run("trace,profile:callsites=1", [stripped, "3"],
                          env=base_env(STRATA_TRACE_DIR=trace, STRATA_SPOOL=spool))
        self.assertRan(proc)
        traced = {(row["operation"], row["file"], row["line"])
                  for row in self.analyze(trace)["operations"] if row["operation"] != "MPI_Init"}
        [record] = [os.path.join(spool, f) for f in os.listdir(spool) if f.endswith(".json")]
        with open(record) as f:
            profiled = {(site["function"], site["file"], site["line"])
                        for site in json.load(f)["callsites"]}
        self.assertIn(("MPI_Send", ), {(op, ) for op, _, _ in traced})
        for operation, file, line in traced:
            self.assertRegex(file, r"ring_stripped\+0x[0-9a-f]+$", operation)
            self.assertEqual(line, 0)
        # The trace counts cheap calls (MPI_Comm_rank, ...) without recording them.
        operations = {op for op, _, _ in traced}
        self.assertEqual(traced, {site for site in profiled if site[0] in operations})

    def test_text_and_csv_name_the_same_call_sites(self):
        trace = self.traced([program("injected_delay_c"), "4", "10"])
        text = run([STRATA, "analyze", trace])
        self.assertRan(text)
        self.assertIn("Operations per level and process", text.stdout)
        line = line_of("injected_delay.c", "/* LATE SENDER */")
        self.assertRegex(text.stdout, rf"late_sender\s+MPI_Recv\s+\S*injected_delay.c\s+{line}\s+0")
        csv = run([STRATA, "analyze", "--csv", trace])
        self.assertRan(csv)
        self.assertRegex(csv.stdout, rf"wait_states,late_sender,MPI_Recv,[^,]*injected_delay.c,{line},0,")

    def test_a_truncated_trace_is_said_by_every_reader(self):
        # timer_loop's 80,000 MPI_Wtime and MPI_Comm_rank a rank recorded as events
        # (cheap_calls=record) overflow limit=1M: both ranks drop events, messages among them.
        trace = os.path.join(self.out, "trace")
        proc = strata_run("trace:limit=1M:cheap_calls=record",
                          [program("timer_loop_c"), "40", "1000"], ranks=2,
                          env=base_env(STRATA_TRACE_DIR=trace), timeout=180)
        self.assertRan(proc)
        dropped = {int(r): int(d) for r, d in re.findall(r"rank (\d) dropped (\d+) events",
                                                           proc.stderr)}
        self.assertEqual(sorted(dropped), [0, 1], proc.stderr)
        total = sum(dropped.values())

        report = self.analyze(trace)
        self.assertEqual(report["dropped_events"], total)
        self.assertEqual({t["rank"]: t["dropped_events"] for t in report["truncation"]}, dropped)
        for t in report["truncation"]:
            self.assertGreater(t["missing_after_s"], 0, t)
        said = [w for w in report["warnings"] if "truncated" in w]
        self.assertEqual(len(said), 1, report["warnings"])
        self.assertIn(f"{total} events", said[0])

        def truncation_lines(proc):
            self.assertRan(proc)
            return [l for l in (proc.stdout + proc.stderr).splitlines() if "truncated" in l]

        text = truncation_lines(run([STRATA, "analyze", trace]))
        self.assertEqual(len(text), 1, text)
        self.assertRegex(text[0], rf"{total} events .*rank 0: {dropped[0]} after [0-9.]+ s")
        csv = run([STRATA, "analyze", "--csv", trace])
        self.assertEqual(len(truncation_lines(csv)), 1)
        self.assertRegex(csv.stdout, rf"\ntruncation,0,{dropped[0]},[0-9.]+,\n")
        xml = truncation_lines(run([STRATA, "trace", "export", "--xml", trace, "--out",
                                    os.path.join(self.out, "xml")]))
        self.assertEqual(len(xml), 1, xml)
        self.assertIn(f"{total} events", xml[0])

        # Counted rather than recorded (the default), the same run is complete: no reader says
        # anything of a truncation.
        shutil.rmtree(trace)
        output = []
        trace = self.traced([program("timer_loop_c"), "40", "1000"], ranks=2, output=output,
                            tools="trace:limit=1M")
        report = self.analyze(trace)
        self.assertEqual((report["dropped_events"], report["truncation"]), (0, []))
        self.assertEqual(report["messages"], 80)
        for args in (["analyze", trace], ["analyze", "--csv", trace],
                     ["trace", "export", "--xml", trace, "--out", os.path.join(self.out, "xml2")]):
            self.assertEqual(truncation_lines(run([STRATA] + args)), [], args)
        text = run([STRATA, "analyze", trace]).stdout
        wtimes = int(re.search(r"timer_loop rank 1: MPI_Wtime=(\d+)", output[0]).group(1))
        self.assertRegex(text, rf"\n\s+1\s+MPI_Wtime\s+{wtimes}\n")

    def test_xml_export_of_a_real_trace(self):
        ranks = 3
        trace = self.traced([program("nonblocking_wildcard_c"), "2", "1"], ranks=ranks)
        out = os.path.join(self.out, "xml")
        proc = run([STRATA, "trace", "export", "--xml", trace, "--out", out])
        self.assertRan(proc)
        with open(os.path.join(out, "hieraCollector.xml")) as f:
            config = f.read()
        self.assertIn(f'count_proc="{ranks}"', config)
        import xml.etree.ElementTree as ET
        for r in range(ranks):
            self.assertIn(f'<collect_file rank="P{r}">trace{r}.xml</collect_file>', config)
            root = ET.parse(os.path.join(out, f"trace{r}.xml")).getroot()
            self.assertEqual(root.tag, "processor")
            self.assertEqual(root.get("rank"), f"P{r}")
            ops = [e.get("operation") for e in root.iter("hieraMPI")]
            self.assertEqual(ops.count("isend"), 2)
            self.assertEqual(ops.count("irecv"), 2)
            self.assertEqual(ops.count("waitall"), 2)
            for e in root.iter("hieraMPI"):
                self.assertLessEqual(float(e.get("start_time")), float(e.get("finish_time")))
                if e.get("operation") == "isend":
                    self.assertEqual(e.get("dest"), str((r + 1) % ranks))
                if e.get("operation") == "waitall":
                    self.assertEqual(e.get("rem"), str((r + ranks - 1) % ranks))


class AnalyzeBadArchives(StrataTestCase):
    """Damaged archives: one line on stderr naming the problem, a non-zero exit, no crash."""

    def make_trace(self):
        # The unit tests' builder is not a program; the benchmark generator writes a valid archive.
        trace = os.path.join(self.out, "trace")
        proc = run([os.path.join(BUILD, "bench", "gen_trace"), trace, "2", "2000"])
        self.assertRan(proc)
        return trace

    def assertCleanFailure(self, trace, fragment):
        proc = run([STRATA, "analyze", trace])
        self.assertNotEqual(proc.returncode, 0)
        self.assertLess(proc.returncode, 128, "killed by a signal")
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(fragment, lines[0])
        return lines[0]

    def test_missing_archive(self):
        self.assertCleanFailure(os.path.join(self.out, "nothing"), "no such trace archive")

    def test_deleted_event_file(self):
        trace = self.make_trace()
        os.remove(os.path.join(trace, "traces", "1.evt"))
        self.assertCleanFailure(trace, trace)

    def test_truncated_anchor_and_definitions(self):
        trace = self.make_trace()
        anchor = os.path.join(trace, "traces.otf2")
        os.truncate(anchor, os.path.getsize(anchor) // 2)
        self.assertCleanFailure(trace, "traces.otf2")
        shutil.rmtree(trace)
        trace = self.make_trace()
        defs = os.path.join(trace, "traces.def")
        os.truncate(defs, os.path.getsize(defs) // 2)
        self.assertCleanFailure(trace, "definitions")

    def test_random_bytes_event_file(self):
        trace = self.make_trace()
        evt = os.path.join(trace, "traces", "0.evt")
        with open(evt, "wb") as f:
            f.write(os.urandom(os.path.getsize(evt) if os.path.exists(evt) else 4096))
        self.assertCleanFailure(trace, trace)

    def test_xml_export_of_a_missing_archive(self):
        proc = run([STRATA, "trace", "export", "--xml", os.path.join(self.out, "nothing")])
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no such trace archive", proc.stderr)


if __name__ == "__main__":
    unittest.main()
