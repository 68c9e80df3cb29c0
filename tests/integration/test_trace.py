"""The trace module: real programs under real mpirun, archives read back with otf2-print (the OTF2
reader library, not our writer's code). Conventions checked here are those of docs/tracing.md."""
import json
import os
import re
import subprocess
import unittest

from strata_testlib import (STRATA, StrataTestCase, base_env, mpirun, program, run,
                            strata_run)

SOURCES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "programs"))


def marked_line(source, mark):
    """The line of the comment MARK:<mark> in tests/programs/<source> (MARK-NEXT: the next one)."""
    with open(os.path.join(SOURCES, source)) as f:
        for number, line in enumerate(f, 1):
            if f"MARK:{mark}" in line:
                return number
            if f"MARK-NEXT:{mark}" in line:
                return number + 1
    raise AssertionError(f"no MARK:{mark} in {source}")


class Event:
    def __init__(self, kind, location, time, fields):
        self.kind = kind
        self.location = location
        self.time = time
        self.fields = fields
        self.call_site = None  # (basename, line)
        self.attributes = ""  # otf2-print's attribute lines after the event

    def field(self, name):
        m = re.search(name + r': ("[^"]*"|[^,]+)', self.fields)
        if not m:
            return None
        return m.group(1).strip().strip('"')

    def number(self, name):
        value = self.field(name)
        return None if value is None else int(value.split()[0])

    @property
    def region(self):
        return self.field("Region")

    def __repr__(self):
        return f"{self.kind}@{self.location} {self.fields} {self.call_site or ''}"


def clock_uncertainty_ns(anchor, location):
    """The largest StdDev of a location's CLOCK_OFFSET definitions, in ticks (nanoseconds)."""
    proc = subprocess.run(["otf2-print", "-C", anchor], capture_output=True, text=True,
                          timeout=120)
    found = [float(m.group(1)) for m in re.finditer(
        rf"^CLOCK_OFFSET\s+{location}\s.*StdDev: (\S+)$", proc.stdout, re.M)]
    if len(found) != 2:
        raise AssertionError(f"expected 2 clock offsets of location {location}:\n{proc.stdout}")
    return max(found)


def read_events(anchor):
    """Every event of the archive, per location, in order, as otf2-print reads them."""
    proc = subprocess.run(["otf2-print", anchor], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"otf2-print failed:\n{proc.stderr}")
    events = {}
    last = None
    for line in proc.stdout.splitlines():
        m = re.match(r"^([A-Z_]+)\s+(\d+)\s+(\d+)\s*(.*)$", line)
        if m:
            last = Event(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))
            events.setdefault(last.location, []).append(last)
            continue
        if last is not None:
            last.attributes += line + "\n"
        site = re.search(r'"strata:call_site".*SOURCE_CODE_LOCATION; "([^"]*):(\d+)"', line)
        if site and last is not None:
            last.call_site = (os.path.basename(site.group(1)), int(site.group(2)))
    return events


def read_definitions(anchor):
    proc = subprocess.run(["otf2-print", "-G", anchor], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"otf2-print -G failed:\n{proc.stderr}")
    return proc.stdout


def enclosing(events, index):
    """Names of the regions open around events[index], outermost first."""
    stack = []
    for e in events[:index]:
        if e.kind == "ENTER":
            stack.append(e.region)
        elif e.kind == "LEAVE":
            assert stack and stack[-1] == e.region, f"unbalanced leave {e}"
            stack.pop()
    return stack


def calls(events, function):
    return [e for e in events if e.kind == "ENTER" and e.region == function]


def polls(event):
    """The number of calls an Enter stands for: its strata:polls attribute, else 1."""
    m = re.search(r'"strata:polls" <\d+>; UINT64; (\d+)', event.attributes)
    return int(m.group(1)) if m else 1


def poll_time_ns(event):
    m = re.search(r'"strata:poll_time_ns" <\d+>; UINT64; (\d+)', event.attributes)
    return int(m.group(1)) if m else None


def inside(events, index):
    """The events between events[index] (an Enter) and its Leave."""
    depth = 0
    for j in range(index, len(events)):
        depth += {"ENTER": 1, "LEAVE": -1}.get(events[j].kind, 0)
        if depth == 0:
            return events[index + 1:j]
    raise AssertionError(f"no leave for {events[index]}")


def analyze(anchor):
    """strata analyze --json of the archive: it must read it."""
    proc = subprocess.run([STRATA, "analyze", "--json", anchor], capture_output=True, text=True,
                          timeout=180)
    if proc.returncode != 0:
        raise AssertionError(f"strata analyze failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


class TraceTest(StrataTestCase):
    def trace(self, prog_args, ranks=4, tools="trace", env_extra=None):
        trace_dir = os.path.join(self.out, "trace")
        env = base_env(STRATA_TRACE_DIR=trace_dir, **(env_extra or {}))
        proc = strata_run(tools, prog_args, ranks=ranks, env=env, timeout=240)
        self.assertRan(proc)
        anchor = os.path.join(trace_dir, "traces.otf2")
        self.assertTrue(os.path.exists(anchor), proc.stderr)
        return proc, anchor

    def test_known_calls_partners_requests_and_call_sites(self):
        proc, anchor = self.trace([program("traced_c")])
        self.assertIn("events of 4 ranks in", proc.stderr)
        events = read_events(anchor)
        self.assertEqual(sorted(events), [0, 1, 2, 3])
        everything = [e for loc in events.values() for e in loc]
        count = lambda fn: len(calls(everything, fn))
        self.assertEqual(count("MPI_Allreduce"), 4 * 4)  # once + 3 loop iterations, 4 ranks
        self.assertEqual(count("MPI_Waitall"), 4)
        self.assertEqual(count("MPI_Isend"), 4)
        self.assertEqual(count("MPI_Irecv"), 8)
        self.assertEqual(count("MPI_Send"), 1 + 4 + 2)  # tag 42, tag 11 per rank, two halves
        self.assertEqual(count("MPI_Recv"), 1 + 2)
        self.assertEqual(count("MPI_Sendrecv"), 4)
        self.assertEqual(count("MPI_Wait"), 4)

        # Rank 0 -> 1, tag 42, 10 ints; rank 1 received with MPI_ANY_SOURCE/MPI_ANY_TAG, yet the
        # record names the real source and tag.
        send = [e for e in events[0] if e.kind == "MPI_SEND" and e.number("Tag") == 42]
        self.assertEqual(len(send), 1)
        self.assertEqual(send[0].number("Receiver"), 1)
        self.assertEqual(send[0].number("Length"), 40)
        recv = [e for e in events[1] if e.kind == "MPI_RECV" and e.number("Tag") == 42]
        self.assertEqual(len(recv), 1)
        self.assertEqual(recv[0].number("Sender"), 0)
        self.assertEqual(recv[0].number("Length"), 40)
        self.assertEqual(recv[0].field("Communicator").split()[0], "MPI_COMM_WORLD")
        # Clocks aligned: the message leaves before it arrives, on the common time line, within
        # the uncertainty the archive states for the two ranks' offsets (half the best ping-pong
        # round trip: about 0.15 us on a quiet machine, milliseconds for a descheduled MPICH rank
        # on a loaded one).
        slack = clock_uncertainty_ns(anchor, 0) + clock_uncertainty_ns(anchor, 1)
        self.assertLess(send[0].time, recv[0].time + slack)
        recv_enter = calls(events[1], "MPI_Recv")[0]
        self.assertEqual(recv_enter.call_site, ("traced.c", marked_line("traced.c", "recv_any")))
        send_enter = calls(events[0], "MPI_Send")[0]
        self.assertEqual(send_enter.call_site, ("traced.c", marked_line("traced.c", "send")))

        # Irecv from prev / Isend to next, completed in one Waitall (MPI_STATUSES_IGNORE).
        for rank, loc in events.items():
            prev, nxt = (rank + 3) % 4, (rank + 1) % 4
            irecv_requests = [e.number("Request") for e in loc if e.kind == "MPI_IRECV_REQUEST"]
            isend = [e for e in loc if e.kind == "MPI_ISEND"]
            self.assertEqual(len(isend), 1)
            self.assertEqual(isend[0].number("Receiver"), nxt)
            self.assertEqual(isend[0].number("Tag"), 5)
            self.assertEqual(isend[0].number("Length"), 800)
            waitall = loc.index(calls(loc, "MPI_Waitall")[0])
            leave = next(i for i in range(waitall, len(loc)) if loc[i].kind == "LEAVE")
            inside = loc[waitall + 1:leave]
            completed = [e for e in inside if e.kind == "MPI_IRECV"]
            self.assertEqual(len(completed), 1, inside)
            self.assertEqual(completed[0].number("Sender"), prev)
            self.assertEqual(completed[0].number("Tag"), 5)
            self.assertEqual(completed[0].number("Length"), 800)
            self.assertIn(completed[0].number("Request"), irecv_requests)
            self.assertEqual([e.number("Request") for e in inside if e.kind == "MPI_ISEND_COMPLETE"],
                             [isend[0].number("Request")])
            self.assertEqual(enclosing(loc, waitall), ["p2p", "halo"])
            self.assertEqual(loc[waitall].call_site, ("traced.c", marked_line("traced.c", "waitall")))
            # Sendrecv: a send and a receive, both with the partner.
            sr = loc.index(calls(loc, "MPI_Sendrecv")[0])
            self.assertEqual(loc[sr + 1].kind, "MPI_SEND")
            self.assertEqual(loc[sr + 1].number("Receiver"), rank ^ 1)
            self.assertEqual(loc[sr + 2].kind, "MPI_RECV")
            self.assertEqual(loc[sr + 2].number("Sender"), rank ^ 1)
            self.assertEqual(loc[sr + 2].number("Tag"), 9)
            # The Irecv completed by MPI_Wait.
            wait = loc.index(calls(loc, "MPI_Wait")[0])
            self.assertEqual(loc[wait + 1].kind, "MPI_IRECV")
            self.assertEqual(loc[wait + 1].number("Sender"), rank ^ 1)
            self.assertEqual(loc[wait + 1].number("Tag"), 11)
            # Collectives: begin/end pairs with the operation, communicator and root.
            bcast = loc.index(calls(loc, "MPI_Bcast")[0])
            self.assertEqual(loc[bcast + 1].kind, "MPI_COLLECTIVE_BEGIN")
            self.assertEqual(loc[bcast + 2].kind, "MPI_COLLECTIVE_END")
            self.assertEqual(loc[bcast + 2].field("Operation"), "BCAST")
            self.assertEqual(loc[bcast + 2].number("Root"), 1)
            barrier = calls(loc, "MPI_Barrier")[0]
            self.assertEqual(barrier.call_site, ("traced.c", marked_line("traced.c", "barrier")))
            # Regions: p2p holds halo; the loop region three times, each around one Allreduce.
            user = [(e.kind, e.region) for e in loc if e.kind in ("ENTER", "LEAVE")
                    and not e.region.startswith("MPI_")]
            self.assertEqual(user[:4], [("ENTER", "p2p"), ("ENTER", "halo"), ("LEAVE", "halo"),
                                        ("LEAVE", "p2p")])
            self.assertEqual(user.count(("ENTER", "loop")), 3)
            p2p = next(e for e in loc if e.kind == "ENTER" and e.region == "p2p")
            self.assertEqual(p2p.call_site, ("traced.c", marked_line("traced.c", "region_p2p")))
            loop_calls = [i for i, e in enumerate(loc) if e.kind == "ENTER" and
                          e.region == "MPI_Allreduce"]
            self.assertEqual([enclosing(loc, i) for i in loop_calls[1:]], [["loop"]] * 3)

        # The halves: world ranks 0 and 2 form one communicator; its rank 0 sends to its rank 1.
        defs = read_definitions(anchor)
        half_send = [e for e in events[0] if e.kind == "MPI_SEND" and e.number("Tag") == 3][0]
        self.assertEqual(half_send.number("Receiver"), 1)
        comm = half_send.field("Communicator")
        self.assertNotEqual(comm.split()[0], "MPI_COMM_WORLD")
        comm_id = int(re.search(r"<(\d+)>", half_send.fields.split("Communicator:")[1]).group(1))
        comm_line = re.search(rf"^COMM\s+{comm_id}\s+.*Group: \"[^\"]*\" <(\d+)>", defs, re.M)
        group_line = re.search(rf"^GROUP\s+{comm_line.group(1)}\s+.*Members: (.*)$", defs, re.M)
        self.assertEqual(re.findall(r"(\d+) \(", group_line.group(1)), ["0", "2"])
        # Definitions every reader relies on.
        self.assertIn("Ticks per Seconds: 1000000000", defs)
        self.assertRegex(defs, r'ATTRIBUTE\s+\d+\s+Name: "strata:call_site".*Type: SOURCE_CODE_LOCATION')
        for r in range(4):
            self.assertRegex(defs, rf'LOCATION_GROUP\s+{r}\s+Name: "rank {r}".*Type: PROCESS')
            self.assertRegex(defs, rf'LOCATION\s+{r}\s+Name: "rank {r}".*Type: CPU_THREAD')
        self.assertRegex(defs, r'REGION\s+\d+\s+Name: "MPI_Send".*Role: POINT2POINT, Paradigm: "MPI"')
        self.assertRegex(defs, r'REGION\s+\d+\s+Name: "MPI_Barrier".*Role: BARRIER')
        self.assertRegex(defs, r'REGION\s+\d+\s+Name: "halo".*Role: FUNCTION, Paradigm: "user"')
        self.assertRegex(defs, r'LOCATION_PROPERTY.*"strata:dropped_events".*Value: 0')
        # Clocks: one offset definition per rank at init and at finalize.
        offsets = subprocess.run(["otf2-print", "-C", anchor], capture_output=True, text=True)
        self.assertEqual(len(re.findall(r"^CLOCK_OFFSET", offsets.stdout, re.M)), 8)

    def test_cpp_scopes_and_functions_nest_with_their_lines(self):
        _, anchor = self.trace([program("traced_cpp")], ranks=2)
        events = read_events(anchor)
        for rank, loc in events.items():
            sr = [i for i, e in enumerate(loc) if e.kind == "ENTER" and e.region == "MPI_Sendrecv"]
            self.assertEqual(len(sr), 2)
            for i in sr:
                self.assertEqual(enclosing(loc, i), ["step", "void solver::exchange(int, int)"])
            step = next(e for e in loc if e.kind == "ENTER" and e.region == "step")
            self.assertEqual(step.call_site, ("traced.cpp", marked_line("traced.cpp", "step")))
            fn = next(e for e in loc if e.kind == "ENTER" and e.region.startswith("void solver"))
            self.assertEqual(fn.call_site, ("traced.cpp", marked_line("traced.cpp", "function")))

    @unittest.skipUnless(os.path.exists(program("traced_f90")), "no Fortran compiler")
    def test_fortran_module_regions(self):
        proc, anchor = self.trace([program("traced_f90")], ranks=2)
        self.assertIn("traced_f90: total 1", proc.stdout)
        events = read_events(anchor)
        for loc in events.values():
            allreduce = loc.index(calls(loc, "MPI_Allreduce")[0])
            self.assertEqual(enclosing(loc, allreduce), ["fortran_outer", "fortran_inner"])
            barrier = loc.index(calls(loc, "MPI_Barrier")[0])
            self.assertEqual(enclosing(loc, barrier), ["fortran_outer"])  # end() without a name
            outer = next(e for e in loc if e.kind == "ENTER" and e.region == "fortran_outer")
            self.assertEqual(outer.call_site, ("traced.f90", marked_line("traced.f90", "f_outer")))
            self.assertEqual(loc[-1].kind, "LEAVE")

    def test_annotated_programs_run_without_strata_and_without_a_region_module(self):
        programs = ["traced_c", "traced_cpp"]
        if os.path.exists(program("traced_f90")):
            programs.append("traced_f90")
        for prog in programs:
            proc = run(mpirun(2) + [program(prog)], env=base_env())
            self.assertRan(proc)
            self.assertRegex(proc.stdout, "done|total 1")
        proc = strata_run("empty", [program("traced_c")], ranks=2, env=base_env())
        self.assertRan(proc)
        self.assertIn("traced: done", proc.stdout)

    def test_function_and_region_filters(self):
        # A list with commas goes through the environment (--tools separates modules by commas).
        _, anchor = self.trace([program("traced_c")], ranks=2, tools="trace:regions=lo*",
                               env_extra={"STRATA_TRACE_FUNCTIONS": "MPI_Allreduce,MPI_Isend"})
        for loc in read_events(anchor).values():
            regions = {e.region for e in loc if e.kind == "ENTER"}
            self.assertEqual(regions, {"MPI_Allreduce", "MPI_Isend", "loop"})
            self.assertEqual(len(calls(loc, "MPI_Allreduce")), 4)

    def test_time_window(self):
        # Two seconds of sleep before the loop; recording starts one second after MPI_Init.
        _, anchor = self.trace([program("traced_c"), "3", "2000"], ranks=2,
                               env_extra={"STRATA_TRACE_START": "1.0"})
        for loc in read_events(anchor).values():
            self.assertEqual({e.region for e in loc if e.kind == "ENTER"},
                             {"MPI_Allreduce", "loop"})
            self.assertEqual(len(calls(loc, "MPI_Allreduce")), 3)

    def test_size_limit_stop_and_ring(self):
        iterations = "12000"  # about 36000 records per rank; 1M holds one chunk of 8192
        proc, anchor = self.trace([program("traced_c"), iterations], ranks=2,
                                  tools="trace:limit=1M:policy=stop")
        self.assertRegex(proc.stderr, r"rank \d dropped \d+ events at limit=1048576 bytes \(policy stop\)")
        self.assertRegex(proc.stderr, r"events of 2 ranks in .* \(\d+ dropped at the size limit\)")
        defs = read_definitions(anchor)
        dropped = [int(v) for v in re.findall(r'"strata:dropped_events".*Value: (\d+)', defs)]
        self.assertEqual(len(dropped), 2)
        self.assertTrue(all(d > 15000 for d in dropped), dropped)
        events = read_events(anchor)
        for loc in events.values():
            self.assertEqual(loc[0].region, "MPI_Init")  # stop keeps the beginning
            self.assertLess(len(calls(loc, "MPI_Allreduce")), 8192)
        self.assertGreater(analyze(anchor)["events"], 0)  # truncated, and readable

        proc, anchor = self.trace([program("traced_c"), iterations], ranks=2,
                                  tools="trace:limit=1M:policy=ring")
        self.assertIn("policy ring", proc.stderr)
        for loc in read_events(anchor).values():
            regions = [e.region for e in loc if e.kind == "ENTER"]
            self.assertNotIn("MPI_Init", regions)  # ring keeps the end
            self.assertEqual(regions[-2:], ["loop", "MPI_Allreduce"])
            self.assertEqual(enclosing(loc, len(loc)), [])  # every region closed
        self.assertGreater(analyze(anchor)["events"], 0)

        # Requests and polls cut at the limit, both ways: still analysed (the ring keeps the end,
        # 14,000 calls that cannot wait; stop keeps the beginning, with its messages).
        for policy in ("stop", "ring"):
            proc, anchor = self.trace([program("poll_c"), "2000", "ready"], ranks=2,
                                      tools=f"trace:limit=1M:policy={policy}")
            self.assertIn("dropped", proc.stderr)
            report = analyze(anchor)
            self.assertGreater(report["events"], 10000, policy)
            if policy == "stop":
                self.assertGreater(report["messages"], 100)

    def test_empty_polls_fold_into_runs_with_exact_counts(self):
        # poll_c: rank 0 polls with MPI_Test / MPI_Testany until each of 12 messages is there
        # (rank 1 sends them 2 ms apart), then with MPI_Iprobe; at the end 50 MPI_Iprobe, each
        # after an MPI_Comm_size. Rank 0 prints how many calls it made.
        # MPI_Comm_size recorded as an event (cheap_calls=record), so that it ends a run.
        proc, anchor = self.trace([program("poll_c"), "12"], ranks=2,
                                  tools="trace:cheap_calls=record")
        made = dict(re.findall(r"(tests|testanys|iprobes)=(\d+)",
                               [l for l in proc.stdout.splitlines() if l.startswith("rank 0")][0]))
        loc = read_events(anchor)[0]
        all_runs = 0
        for function, key, completing in (("MPI_Test", "tests", 6), ("MPI_Testany", "testanys", 6),
                                          ("MPI_Iprobe", "iprobes", 12)):
            entries = [i for i, e in enumerate(loc) if e.kind == "ENTER" and e.region == function]
            expected = int(made[key]) + (50 if function == "MPI_Iprobe" else 0)
            self.assertEqual(sum(polls(loc[i]) for i in entries), expected, function)
            # Each message: at most one run of empty polls, then the poll that completed it.
            found = [i for i in entries if any(e.kind == "MPI_IRECV" for e in inside(loc, i))]
            if function != "MPI_Iprobe":
                self.assertEqual(len(found), completing, function)
            runs = [i for i in entries if polls(loc[i]) > 1]
            self.assertLessEqual(len(runs), completing, function)
            all_runs += len(runs)
            for i in runs:
                leave = loc[i + 1 + len(inside(loc, i))]
                self.assertEqual(inside(loc, i), [])  # completed nothing
                span = leave.time - loc[i].time
                self.assertLessEqual(poll_time_ns(loc[i]), span)
                self.assertGreater(poll_time_ns(loc[i]), 0)
        # 2 ms of polling is more than one poll. Not asked of each routine: rank 1 sends at its
        # own pace, so a rank 0 descheduled for 2 ms around each of one routine's 6 messages
        # (seen at load 5) finds every one of them there at its first poll.
        self.assertGreater(all_runs, 0)
        # The last 50 Iprobes each follow an MPI_Comm_size: runs of one, no attribute.
        tail = [e for e in loc if e.kind == "ENTER" and e.region in ("MPI_Iprobe", "MPI_Comm_size")]
        self.assertEqual([(e.region, polls(e)) for e in tail[-100:]],
                         [("MPI_Comm_size", 1), ("MPI_Iprobe", 1)] * 50)
        defs = read_definitions(anchor)
        self.assertRegex(defs, r'ATTRIBUTE\s+\d+\s+Name: "strata:polls".*Type: UINT64')
        # The analyzer reads the folded runs as calls.
        report = analyze(anchor)
        self.assertEqual(report["warnings"], [])
        self.assertEqual(report["messages"], 24)

    def test_polls_that_alternate_fold_into_one_run_each(self):
        # poll_c alternate: while a message is awaited, rank 0 tests it (MPI_Test or MPI_Testany)
        # and probes for a message that never comes, in turn, for 2 ms: thousands of polls, one
        # run per routine and call site for each message, laid back to back.
        proc, anchor = self.trace([program("poll_c"), "12", "alternate"], ranks=2)
        made = dict(re.findall(r"(tests|testanys|nevers)=(\d+)",
                               [l for l in proc.stdout.splitlines() if l.startswith("rank 0")][0]))
        loc = read_events(anchor)[0]
        enters = [i for i, e in enumerate(loc) if e.kind == "ENTER"]
        never = [i for i in enters if loc[i].region == "MPI_Iprobe"
                 and loc[i].call_site == ("poll.c", marked_line("poll.c", "never"))]
        self.assertEqual(sum(polls(loc[i]) for i in never), int(made["nevers"]))
        for function, key in (("MPI_Test", "tests"), ("MPI_Testany", "testanys")):
            entries = [i for i in enters if loc[i].region == function]
            self.assertEqual(sum(polls(loc[i]) for i in entries), int(made[key]), function)
        # Per message at most one run of the never-found probe (one per message and loop).
        self.assertLessEqual(len(never), 12)
        self.assertGreater(sum(polls(loc[i]) for i in never), 12 * 10)
        # Nested and in time order, each run at least as long as the time inside its polls.
        times = [e.time for e in loc]
        self.assertEqual(times, sorted(times))
        for i in never:
            self.assertEqual(inside(loc, i), [])
            leave = loc[i + 1]
            self.assertLessEqual(poll_time_ns(loc[i]) if polls(loc[i]) > 1 else 0,
                                 leave.time - loc[i].time)
        report = analyze(anchor)
        self.assertEqual(report["warnings"], [])
        self.assertEqual(report["messages"], 24)

    def test_cheap_calls_are_counted_and_leave_the_buffer_to_the_messages(self):
        # timer_loop: 40 rounds of 2000 MPI_Wtime and 2000 MPI_Comm_rank per rank, each round
        # ending in a message each way and a barrier: 160,000 cheap calls a rank, twenty times
        # what limit=1M (one chunk of 8192 records) holds, were they events.
        rounds, reads = 40, 2000
        proc, anchor = self.trace([program("timer_loop_c"), str(rounds), str(reads)], ranks=2,
                                  tools="trace:limit=1M")
        self.assertNotIn("dropped", proc.stderr)
        made = {int(rank): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", rest)}
                for rank, rest in re.findall(r"timer_loop rank (\d): (.*)", proc.stdout)}
        self.assertEqual(made[0]["MPI_Wtime"], rounds * reads + 2)
        for rank, loc in read_events(anchor).items():
            regions = {e.region for e in loc if e.kind == "ENTER"}
            self.assertFalse(regions & {"MPI_Wtime", "MPI_Comm_rank", "MPI_Comm_size"}, regions)
            self.assertEqual(len(calls(loc, "MPI_Barrier")), rounds)
            self.assertEqual(len([e for e in loc if e.kind == "MPI_SEND"]), rounds)
        # The counts are in the archive, per rank and routine, and in the analysis.
        defs = read_definitions(anchor)
        counted = {(int(loc), name): int(value) for loc, name, value in re.findall(
            r'^LOCATION_PROPERTY\s+Location: "[^"]*" <(\d+)>, Name: "strata:counted_calls:(\w+)"'
            r'.*Value: (\d+)$', defs, re.M)}
        for rank in (0, 1):
            for function in ("MPI_Wtime", "MPI_Comm_rank", "MPI_Comm_size"):
                self.assertEqual(counted.get((rank, function)), made[rank][function],
                                 (rank, function, defs))
        report = analyze(anchor)
        self.assertEqual(report["messages"], 2 * rounds)
        self.assertEqual(report["unmatched_sends"] + report["unmatched_receives"], 0)
        self.assertEqual(report["warnings"], [])
        self.assertEqual(report["dropped_events"], 0)
        self.assertEqual({(c["rank"], c["operation"]): c["count"] for c in report["counted_calls"]
                          if c["operation"] in ("MPI_Wtime", "MPI_Comm_rank")},
                         {(r, f): made[r][f] for r in (0, 1) for f in ("MPI_Wtime", "MPI_Comm_rank")})
        text = run([STRATA, "analyze", anchor])
        self.assertRan(text)
        self.assertRegex(text.stdout, rf"\n\s+0\s+MPI_Wtime\s+{made[0]['MPI_Wtime']}\n")

        # cheap_calls=record: every call an event, as before, and the buffer overflows.
        proc, anchor = self.trace([program("timer_loop_c"), str(rounds), str(reads)], ranks=2,
                                  tools="trace:limit=1M:cheap_calls=record")
        self.assertRegex(proc.stderr, r"rank 0 dropped \d+ events at limit=1048576 bytes "
                                      r"\(policy stop\): the events after [0-9.]+ s are missing")
        loc = read_events(anchor)[0]
        self.assertGreater(len(calls(loc, "MPI_Wtime")), 1000)
        defs = read_definitions(anchor)
        self.assertNotIn("strata:counted_calls", defs)
        self.assertRegex(defs, r'"strata:dropped_after_ns".*Value: \d+')

    def test_cancelled_requests_proc_null_and_any_source(self):
        delay_ms = 100
        proc, anchor = self.trace([program("requests_c"), str(delay_ms)], ranks=4)
        self.assertEqual(sorted(re.findall(r"rank \d cancelled=(\d)", proc.stdout)), ["2"] * 4)
        events = read_events(anchor)
        for rank, loc in events.items():
            # Two cancelled receives: MpiIrecvRequest, then MpiRequestCancelled in the Wait and
            # the Waitall that completed them; no receive with an undefined sender.
            posted = [e.number("Request") for e in loc if e.kind == "MPI_IRECV_REQUEST"]
            cancelled = [e.number("Request") for e in loc if e.kind == "MPI_REQUEST_CANCELLED"]
            self.assertEqual(len(cancelled), 2, loc)
            self.assertEqual(cancelled, posted[:2])
            wait = loc.index(calls(loc, "MPI_Wait")[0])
            self.assertEqual([e.kind for e in inside(loc, wait)], ["MPI_REQUEST_CANCELLED"])
            self.assertEqual(loc[wait].call_site,
                             ("requests.c", marked_line("requests.c", "cancel_wait")))
            receives = [e for e in loc if e.kind in ("MPI_RECV", "MPI_IRECV")]
            self.assertTrue(all(e.number("Sender") < 4 for e in receives), receives)
            # MPI_PROC_NULL: the calls are there, without messages or requests.
            for function in ("MPI_Send", "MPI_Recv", "MPI_Sendrecv"):
                self.assertEqual(inside(loc, loc.index(calls(loc, function)[0])), [], function)
            self.assertEqual(len(calls(loc, "MPI_Waitall")), 2)
            self.assertEqual(inside(loc, loc.index(calls(loc, "MPI_Waitall")[1])), [])
            self.assertEqual(len([e for e in loc if e.kind == "MPI_ISEND"]), 0)
            # MPI_ANY_SOURCE: rank 0's receives name their real senders.
            if rank == 0:
                self.assertEqual(sorted(e.number("Sender") for e in receives), [1, 1, 2, 2, 3, 3])
        report = analyze(anchor)
        self.assertEqual(report["warnings"], [])
        self.assertEqual(report["messages"], 6)
        late = [w for w in report["wait_states"] if w["pattern"] == "late_sender" and
                w["rank"] == 0 and w["line"] == marked_line("requests.c", "late")]
        self.assertEqual(len(late), 1, report["wait_states"])
        self.assertGreater(late[0]["time_s"], 0.5 * delay_ms / 1000, late)

    def test_each_start_of_a_persistent_request_is_a_message(self):
        proc, anchor = self.trace([program("completions_c")], ranks=2)
        events = read_events(anchor)
        for rank, loc in events.items():
            # completions.c starts a persistent receive and send of 300 bytes with tag 3 twice
            # (MPI_Start each), then waits once more on the inactive receive, and makes a
            # persistent receive with tag 7 that it never starts.
            sends = [e for e in loc if e.kind == "MPI_ISEND" and e.number("Tag") == 3]
            self.assertEqual([(e.number("Receiver"), e.number("Length")) for e in sends],
                             [(1 - rank, 300)] * 2)
            posted = [e for e in loc if e.kind == "MPI_IRECV_REQUEST"]
            received = [e for e in loc if e.kind == "MPI_IRECV" and e.number("Tag") == 3]
            self.assertEqual([(e.number("Sender"), e.number("Length")) for e in received],
                             [(1 - rank, 300)] * 2)
            ids = {e.number("Request") for e in posted}
            self.assertTrue({e.number("Request") for e in received} <= ids)
            self.assertEqual(len({e.number("Request") for e in sends + received}), 4)
            self.assertEqual([e for e in loc if e.number("Tag") == 7], [])
            # Each message record sits inside the MPI_Start that started it.
            for e in sends:
                self.assertEqual(enclosing(loc, loc.index(e))[-1:], ["MPI_Start"])
        report = analyze(anchor)
        self.assertEqual(report["warnings"], [])

    def test_bad_settings_stop_the_job_with_one_line(self):
        # The core's option mechanism: one line naming the module, the option (or the variable
        # it came from) and the problem, before the program starts.
        proc = strata_run("trace:policy=drop", [program("traced_c")], ranks=2, env=base_env())
        self.assertOneErrorLine(proc, "module 'trace': option 'policy': 'drop' is not one of stop,ring")
        proc = strata_run("trace", [program("traced_c")], ranks=2,
                          env=base_env(STRATA_TRACE_LIMIT="lots"))
        self.assertOneErrorLine(proc, "module 'trace': STRATA_TRACE_LIMIT: 'lots' is not a size")
        proc = strata_run("trace:colour=red", [program("traced_c")], ranks=2, env=base_env())
        self.assertOneErrorLine(proc, "module 'trace': unknown option 'colour' (its options: dir,")
        # What a type cannot say is the module's own line, naming the option.
        proc = strata_run("trace:start=3:stop=1", [program("traced_c")], ranks=2, env=base_env())
        self.assertOneErrorLine(
            proc, "module 'trace' refused its arguments: option 'stop': '1' is not later than "
            "option 'start' ('3')")
        self.assertNotIn("traced: done", proc.stdout)
        # The options are listed with their variables.
        listing = run([STRATA, "modules", "trace"], env=base_env())
        self.assertRan(listing)
        for key in ("dir", "functions", "regions", "start", "stop", "limit", "policy", "prefault"):
            self.assertRegex(listing.stdout, rf"\n\s+{key}\s.*STRATA_TRACE_{key.upper()}")

    def test_unusable_directory_is_reported_and_the_job_ends_normally(self):
        blocker = os.path.join(self.out, "a-file")
        with open(blocker, "w") as f:
            f.write("not a directory\n")
        env = base_env(STRATA_TRACE_DIR=os.path.join(blocker, "trace"))
        proc = strata_run("trace", [program("traced_c")], ranks=2, env=env)
        self.assertRan(proc)
        self.assertIn("traced: done", proc.stdout)
        self.assertRegex(proc.stderr, r"strata: trace: no trace written: cannot create .*a-file/trace")

    def test_an_earlier_trace_in_the_directory_is_replaced(self):
        self.trace([program("traced_cpp")], ranks=2)
        _, anchor = self.trace([program("traced_f90" if os.path.exists(program("traced_f90"))
                                        else "traced_c")], ranks=2)
        regions = {e.region for loc in read_events(anchor).values() for e in loc if e.kind == "ENTER"}
        self.assertNotIn("step", regions)

    def test_default_directory_is_named_after_the_job(self):
        env = base_env(SLURM_JOB_ID="4242", SLURM_STEP_ID="1")
        proc = run([STRATA, "run", "-np", "2", "--tools", "trace", "--", program("traced_cpp")],
                   env=env, cwd=self.out)
        self.assertRan(proc)
        self.assertTrue(os.path.exists(os.path.join(self.out, "strata-trace-4242.1", "traces.otf2")),
                        proc.stderr)

@unittest.skipUnless(os.geteuid() == 0, "mounting a file system needs root")
class FullFileSystem(StrataTestCase):
    """The archive's directory on a file system with no space left: a tmpfs of 64 KiB, filled."""

    def setUp(self):
        super().setUp()
        self.mount = os.path.join(self.out, "full")
        os.makedirs(self.mount)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", self.mount],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
        os.makedirs(os.path.join(self.mount, "trace"))
        fd = os.open(os.path.join(self.mount, "filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"x" * 4096) > 0:
                pass
        except OSError:
            pass
        finally:
            os.close(fd)

    def tearDown(self):
        subprocess.run(["umount", self.mount], check=True)
        super().tearDown()

    def test_one_clear_line_and_the_application_runs_on(self):
        trace_dir = os.path.join(self.mount, "trace")
        native = run(mpirun(2) + [program("traced_c")], env=base_env())
        self.assertRan(native)
        proc = strata_run("trace", [program("traced_c")], ranks=2,
                          env=base_env(STRATA_TRACE_DIR=trace_dir), timeout=240)
        self.assertRan(proc)
        self.assertEqual(proc.stdout, native.stdout)
        self.assertNotIn("[OTF2]", proc.stderr)
        self.assertNotIn("events of 2 ranks in", proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata: trace:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(f"no trace written: {trace_dir}/traces", lines[0])
        self.assertIn("No space left on device", lines[0])


if __name__ == "__main__":
    unittest.main()
