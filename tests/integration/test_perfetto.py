"""strata trace export --perfetto and the communication matrix of strata analyze --json, on the
trace of a program with a known pattern (tests/programs/comm_pattern.c: a ring with per-rank
sizes, MPI_Sendrecv pairs, an MPI_Allreduce, inside an annotated region, and one injected late
sender), written by the trace module under real mpirun (each MPI flavor). The JSON is read back
and every slice, flow and wait state checked against what the program did."""
import collections
import json
import os
import re
import subprocess
import unittest

from strata_testlib import (BUILD, FLAVOR, STRATA, StrataTestCase, base_env, line_of, mpirun, program,
                            run, strata_run)

TRACE_MODULE = os.path.join(BUILD, "lib", "strata", FLAVOR, "modules", "trace.so")
WORKER = os.path.join(BUILD, "lib", "strata", FLAVOR, "strata-analyze")
RANKS, ITERATIONS, DELAY_MS = 5, 4, 60
# A hung export is a failure with this message, not a test-suite timeout.
LIMIT_S = 150


def ring_bytes(rank):
    return 8 * (rank + 1)


def expected_pairs():
    """{(from, to, kind): (messages, bytes)} of comm_pattern.c on RANKS ranks."""
    pairs = {}
    for r in range(RANKS):
        pairs[(r, (r + 1) % RANKS, "point_to_point")] = (ITERATIONS, ITERATIONS * ring_bytes(r))
        if r ^ 1 < RANKS:
            pairs[(r, r ^ 1, "sendrecv")] = (ITERATIONS, ITERATIONS * (1000 + r))
    return pairs


class Export:
    """A parsed export: slices by pid, flows by id, wait states."""

    def __init__(self, path):
        with open(path) as f:
            self.doc = json.load(f)
        events = self.doc["traceEvents"]
        self.meta = [e for e in events if e["ph"] == "M"]
        self.slices = collections.defaultdict(list)
        self.waits = []
        for e in events:
            if e["ph"] == "X" and e["cat"] == "wait_state":
                self.waits.append(e)
            elif e["ph"] == "X":
                self.slices[e["pid"] - 1].append(e)
        for rank in self.slices:
            self.slices[rank].sort(key=lambda e: (e["ts"], -e["dur"]))
        starts = {e["id"]: e for e in events if e["ph"] == "s"}
        ends = {e["id"]: e for e in events if e["ph"] == "f"}
        assert len(starts) == len([e for e in events if e["ph"] == "s"]), "flow ids repeat"
        assert starts.keys() == ends.keys(), "a flow without its other end"
        self.flows = [(starts[i], ends[i]) for i in starts]

    def enclosing(self, rank, ts, cat="mpi"):
        """The slice of category cat on rank's track that holds the time ts."""
        found = [s for s in self.slices[rank] if s["cat"] == cat
                 and s["ts"] <= ts <= s["ts"] + s["dur"]]
        assert len(found) == 1, (rank, ts, found)
        return found[0]

    def slice_keys(self):
        return sorted((rank, s["name"], s["ts"], s["dur"], json.dumps(s["args"], sort_keys=True))
                      for rank, slices in self.slices.items() for s in slices)

    def flow_keys(self):
        return sorted((s["pid"], s["ts"], f["pid"], f["ts"]) for s, f in self.flows)

    def wait_keys(self):
        return sorted((w["pid"], w["name"], w["ts"], w["dur"]) for w in self.waits)


@unittest.skipUnless(os.path.exists(TRACE_MODULE), "the trace module is not built")
class PerfettoExport(StrataTestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = __import__("tempfile").TemporaryDirectory(prefix="strata-perfetto-")
        cls.trace = os.path.join(cls.shared.name, "trace")
        proc = strata_run("trace", [program("comm_pattern_c"), str(ITERATIONS), str(DELAY_MS)],
                          ranks=RANKS, env=base_env(STRATA_TRACE_DIR=cls.trace), timeout=180)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cls.program_output = proc.stdout
        cls.full = os.path.join(cls.shared.name, "full.json")
        cls.export_proc = run([STRATA, "trace", "export", "--perfetto", cls.trace, "-o", cls.full],
                              timeout=LIMIT_S)

    @classmethod
    def tearDownClass(cls):
        cls.shared.cleanup()

    def export(self, *options, name="part.json", command=None):
        out = os.path.join(self.out, name)
        proc = run((command or [STRATA, "trace", "export", "--perfetto"]) + [self.trace, "-o", out]
                   + list(options), timeout=LIMIT_S)
        self.assertRan(proc)
        return Export(out)

    def test_every_slice_is_a_call_the_program_made_nested_in_its_region(self):
        self.assertRan(self.export_proc)
        self.assertRegex(self.export_proc.stdout,
                         rf"full\.json: {RANKS} ranks, \d+ operations, \d+ messages, \d+ wait states")
        x = Export(self.full)
        self.assertEqual(sorted(x.slices), list(range(RANKS)))
        names = {(e["pid"], e["name"]): e["args"]["name"] for e in x.meta
                 if e["name"] in ("process_name", "thread_name")}
        for r in range(RANKS):
            self.assertEqual(names[(r + 1, "process_name")], f"rank {r}")
            self.assertEqual(names[(r + 1, "thread_name")], f"rank {r}")
            per_iteration = ["MPI_Irecv", "MPI_Send", "MPI_Wait"]
            if r ^ 1 < RANKS:
                per_iteration.append("MPI_Sendrecv")
            per_iteration.append("MPI_Allreduce")
            regions = [s for s in x.slices[r] if s["cat"] == "user"]
            self.assertEqual([s["name"] for s in regions], ["exchange"] * ITERATIONS)
            calls = [s for s in x.slices[r] if s["cat"] == "mpi"]
            inside = []
            for s in calls:
                if s["name"] == "MPI_Init":
                    self.assertTrue(all(s["ts"] + s["dur"] <= g["ts"] for g in regions))
                    continue
                holders = [g for g in regions if g["ts"] <= s["ts"]
                           and s["ts"] + s["dur"] <= g["ts"] + g["dur"]]
                self.assertEqual(len(holders), 1, (r, s))
                inside.append((regions.index(holders[0]), s["name"]))
            self.assertEqual(sorted(c["name"] for c in calls if c["name"] == "MPI_Init"),
                             ["MPI_Init"])
            self.assertEqual(inside, [(i, n) for i in range(ITERATIONS) for n in per_iteration],
                             r)
            # Calls of one region follow each other, never overlap.
            for a, b in zip(calls, calls[1:]):
                self.assertLessEqual(a["ts"] + a["dur"], b["ts"], (a, b))
            # Arguments: the ring's peers, tags and sizes; the pair's; the collective's.
            sends = [s for s in calls if s["name"] == "MPI_Send"]
            self.assertEqual([s["args"]["sent"] for s in sends],
                             [[{"to": (r + 1) % RANKS, "tag": i, "bytes": ring_bytes(r),
                                "comm": "MPI_COMM_WORLD"}] for i in range(ITERATIONS)])
            waits = [s for s in calls if s["name"] == "MPI_Wait"]
            left = (r + RANKS - 1) % RANKS
            self.assertEqual([s["args"]["received"] for s in waits],
                             [[{"from": left, "tag": i, "bytes": ring_bytes(left),
                                "comm": "MPI_COMM_WORLD"}] for i in range(ITERATIONS)])
            for s in waits:
                self.assertTrue(s["args"]["site"].endswith(".c:%d" % self.marked_line()), s)
            for s in (s for s in calls if s["name"] == "MPI_Sendrecv"):
                self.assertEqual(s["args"]["sent"][0]["to"], r ^ 1)
                self.assertEqual(s["args"]["sent"][0]["bytes"], 1000 + r)
                self.assertEqual(s["args"]["received"][0]["from"], r ^ 1)
                self.assertEqual(s["args"]["received"][0]["bytes"], 1000 + (r ^ 1))
            for s in (s for s in calls if s["name"] == "MPI_Allreduce"):
                self.assertEqual((s["args"]["comm"], s["args"]["bytes_sent"]),
                                 ("MPI_COMM_WORLD", 4))

    def marked_line(self):
        return line_of("comm_pattern.c", "/* RING WAIT */")

    def test_every_message_is_one_flow_from_its_send_to_its_receive(self):
        self.assertRan(self.export_proc)
        x = Export(self.full)
        sent = collections.Counter()
        for s, f in x.flows:
            self.assertEqual((s["name"], s["cat"], f["bp"]), ("message", "message", "e"))
            sender, receiver = s["pid"] - 1, f["pid"] - 1
            send = x.enclosing(sender, s["ts"])
            receive = x.enclosing(receiver, f["ts"])
            self.assertEqual(s["ts"], send["ts"])
            self.assertEqual(f["ts"], receive["ts"])
            self.assertIn(receiver, [m["to"] for m in send["args"]["sent"]], send)
            self.assertIn(sender, [m["from"] for m in receive["args"]["received"]], receive)
            self.assertIn(send["name"], ("MPI_Send", "MPI_Sendrecv"))
            self.assertIn(receive["name"], ("MPI_Wait", "MPI_Sendrecv"))
            sent[(sender, receiver, "sendrecv" if send["name"] == "MPI_Sendrecv"
                  else "point_to_point")] += 1
        # As many flows as messages sent, each pair's count.
        self.assertEqual(dict(sent), {k: v[0] for k, v in expected_pairs().items()})
        reported = [tuple(map(int, m)) for m in
                    re.findall(r"sent (\d+): (\d+) messages", self.program_output)]
        self.assertEqual(sum(m for _, m in reported), len(x.flows))

    def test_the_injected_late_sender_is_marked_inside_the_wait_that_lost_the_time(self):
        self.assertRan(self.export_proc)
        x = Export(self.full)
        for w in x.waits:
            holder = x.enclosing(w["pid"] - 1, w["ts"])
            self.assertEqual(w["ts"], holder["ts"], w)
            self.assertLessEqual(w["dur"], holder["dur"], w)
        late = [w for w in x.waits if w["name"] == "late_sender" and w["pid"] == 2]
        first_wait = [s for s in x.slices[1] if s["name"] == "MPI_Wait"][0]
        marked = [w for w in late if w["ts"] == first_wait["ts"]]
        self.assertEqual(len(marked), 1, late)
        self.assertGreater(marked[0]["dur"], 0.5 * DELAY_MS * 1000, marked)
        self.assertTrue({w["name"] for w in x.waits} <= {"late_sender", "late_receiver",
                                                         "wait_at_nxn"}, x.waits)

    def test_the_pairs_of_analyze_json_are_the_messages_sent(self):
        proc = run([STRATA, "analyze", "--json", self.trace])
        self.assertRan(proc)
        communication = json.loads(proc.stdout)["communication"]
        by_kind = {(p["from"], p["to"], kind): (p["messages"], p["bytes"])
                   for kind, pairs in communication["by_kind"].items() for p in pairs}
        self.assertEqual(by_kind, expected_pairs())
        totals = collections.defaultdict(lambda: [0, 0])
        for (a, b, _), (m, n) in expected_pairs().items():
            totals[(a, b)][0] += m
            totals[(a, b)][1] += n
        self.assertEqual({(p["from"], p["to"]): [p["messages"], p["bytes"]]
                          for p in communication["pairs"]}, dict(totals))
        self.assertEqual(sorted(communication["pairs"], key=lambda p: (p["from"], p["to"])),
                         communication["pairs"])
        # What each rank said it sent.
        for rank, messages, sent_bytes in re.findall(r"sent (\d+): (\d+) messages, (\d+) bytes",
                                                     self.program_output):
            mine = [p for p in communication["pairs"] if p["from"] == int(rank)]
            self.assertEqual(sum(p["messages"] for p in mine), int(messages))
            self.assertEqual(sum(p["bytes"] for p in mine), int(sent_bytes))

    def test_a_time_window_keeps_the_operations_that_overlap_it(self):
        self.assertRan(self.export_proc)
        full = Export(self.full)
        regions = [s for s in full.slices[2] if s["cat"] == "user"]
        begin = "%.6f" % ((regions[1]["ts"] + 1) / 1e6)
        end = "%.6f" % ((regions[2]["ts"] + regions[2]["dur"] / 2) / 1e6)
        part = self.export("--from", begin, "--to", end)
        window_ns = (round(float(begin) * 1e9), round(float(end) * 1e9))

        def overlaps(ts, dur):
            enter = round(ts * 1000)
            return enter + round(dur * 1000) >= window_ns[0] and enter <= window_ns[1]

        kept = sorted(k for k in full.slice_keys() if overlaps(k[2], k[3]))
        self.assertEqual(part.slice_keys(), kept)
        self.assertLess(len(kept), len(full.slice_keys()))
        self.assertEqual([s["name"] for s in part.slices[2] if s["cat"] == "user"],
                         ["exchange"] * 2)
        for s, f in part.flows:
            part.enclosing(s["pid"] - 1, s["ts"])
            part.enclosing(f["pid"] - 1, f["ts"])
        self.assertEqual(part.doc["otherData"]["from_s"], float(begin))

    def test_a_rank_range_keeps_those_ranks_and_the_flows_between_them(self):
        self.assertRan(self.export_proc)
        full = Export(self.full)
        part = self.export("--ranks", "1-3")
        self.assertEqual(sorted(part.slices), [1, 2, 3])
        self.assertEqual(sorted({e["pid"] for e in part.meta}), [2, 3, 4])
        self.assertEqual(part.slice_keys(), [k for k in full.slice_keys() if 1 <= k[0] <= 3])
        self.assertEqual(part.flow_keys(),
                         [k for k in full.flow_keys() if 2 <= k[0] <= 4 and 2 <= k[2] <= 4])
        self.assertEqual(part.wait_keys(), [k for k in full.wait_keys() if 2 <= k[0] <= 4])
        self.assertEqual(part.doc["otherData"]["ranks"], "1-3")
        single = self.export("--ranks", "4", name="single.json")
        self.assertEqual(sorted(single.slices), [4])
        self.assertEqual(single.flows, [])

    @unittest.skipUnless(os.path.exists(WORKER), "the analysis worker is not built")
    def test_the_export_by_several_processes_is_the_serial_one(self):
        self.assertRan(self.export_proc)
        full = Export(self.full)
        for name, command in (("mpirun", mpirun(3) + [STRATA, "trace", "export", "--perfetto"]),
                              ("np", [STRATA, "trace", "export", "--perfetto", "--np", "2",
                                      "--mpi", FLAVOR])):
            with self.subTest(name):
                part = self.export(name=f"{name}.json", command=command)
                self.assertEqual(part.slice_keys(), full.slice_keys())
                self.assertEqual(part.flow_keys(), full.flow_keys())
                self.assertEqual(part.wait_keys(), full.wait_keys())
                self.assertEqual(sorted(json.dumps(m, sort_keys=True) for m in part.meta),
                                 sorted(json.dumps(m, sort_keys=True) for m in full.meta))
        # With a selection too.
        part = self.export("--ranks", "2-4", "--from", "0", name="np-sel.json",
                           command=[STRATA, "trace", "export", "--perfetto", "--np", "2",
                                    "--mpi", FLAVOR])
        self.assertEqual(part.slice_keys(), [k for k in full.slice_keys() if k[0] >= 2])

    def assertOneLine(self, proc, fragment, status):
        self.assertEqual(proc.returncode, status, proc.stdout + proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(fragment, lines[0])

    def test_malformed_options_give_one_clear_line(self):
        out = os.path.join(self.out, "bad.json")
        cases = [
            (["--ranks", "x"], "--ranks 'x' is not a rank range such as 0-15 or 3", 2),
            (["--ranks", "3-1"], "the range ends before it begins", 2),
            (["--ranks", f"0-{RANKS}"], f"the trace has ranks 0 to {RANKS - 1}", 1),
            (["--from", "abc"], "--from abc: not a time in seconds", 2),
            (["--from", "-1"], "--from -1: not a time in seconds", 2),
            (["--from", "2", "--to", "1"], "the window ends before it begins", 2),
        ]
        for options, fragment, status in cases:
            with self.subTest(options=options):
                proc = run([STRATA, "trace", "export", "--perfetto", self.trace, "-o", out]
                           + options)
                self.assertOneLine(proc, fragment, status)
                self.assertFalse(os.path.exists(out))
        proc = run([STRATA, "trace", "export", self.trace])
        self.assertOneLine(proc, "--xml or --perfetto", 2)
        proc = run([STRATA, "trace", "export", "--xml", self.trace, "--ranks", "1"])
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("--perfetto", proc.stderr)

    def test_a_damaged_trace_gives_one_line_and_no_file(self):
        import shutil
        damaged = os.path.join(self.out, "damaged")
        shutil.copytree(self.trace, damaged)
        evt = os.path.join(damaged, "traces", "2.evt")
        os.truncate(evt, os.path.getsize(evt) // 2)
        out = os.path.join(self.out, "damaged.json")
        commands = [[STRATA, "trace", "export", "--perfetto"]]
        if os.path.exists(WORKER):
            commands.append([STRATA, "trace", "export", "--perfetto", "--np", "2", "--mpi",
                             FLAVOR])
        for command in commands:
            with self.subTest(command=command[3:]):
                proc = run(command + [damaged, "-o", out], timeout=LIMIT_S)
                self.assertLess(proc.returncode, 128, "killed by a signal")
                self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
                self.assertEqual(proc.stdout, "")
                # mpirun adds its own lines about the failed processes.
                lines = proc.stderr.strip().splitlines()
                if "--np" in command:
                    lines = [l for l in lines if l.startswith("strata trace export:")]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertTrue(lines[0].startswith("strata trace export: "), lines[0])
                self.assertIn(damaged, lines[0])
                self.assertEqual(os.listdir(self.out), ["damaged"])
        proc = run([STRATA, "trace", "export", "--perfetto", os.path.join(self.out, "none"),
                    "-o", out])
        self.assertOneLine(proc, "no such trace archive", 1)


if __name__ == "__main__":
    unittest.main()
