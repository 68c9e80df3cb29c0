"""The profile's communication matrix: the record's `communication` section, under real mpirun, for
a program with a known pattern (tests/programs/comm_pattern.c with its derived communicator:
a ring, MPI_Sendrecv pairs, MPI_Isend on a communicator of the ranks in reverse order received
with MPI_ANY_SOURCE, persistent sends started by MPI_Start and MPI_Startall, MPI_Isend on an
intercommunicator between the even and the odd ranks, and MPI_Put, MPI_Get, MPI_Accumulate and
MPI_Fetch_and_op on a window of the reversed communicator, under a fence and under a lock, and
collectives on MPI_COMM_WORLD and on a communicator of the ranks of the same parity). The
pairs must be exact, in world ranks (an intercommunicator's destination is a rank of its remote group), whether the core sums the
calls or the profile's callback sees them, and equal to what `strata analyze --json` finds in a trace of
the same run (the stack profile,trace), one-sided operations included; and MPI 4's partitioned
sends (MPICH only), a kind of their own."""
import collections
import json
import os
import re
import unittest

from strata_testlib import BUILD, FLAVOR, STRATA, base_env, program, run
from test_profile import ProfileTestCase

TRACE_MODULE = os.path.join(BUILD, "lib", "strata", FLAVOR, "modules", "trace.so")
RANKS, ITERATIONS = 5, 6


def expected_by_kind():
    """{(from, to, kind): (messages, bytes)} of comm_pattern.c ...
    derived,persistent,intercomm,onesided on RANKS ranks."""
    pairs = collections.defaultdict(lambda: [0, 0])
    for r in range(RANKS):
        ring = pairs[(r, (r + 1) % RANKS, "point_to_point")]
        ring[0] += ITERATIONS
        ring[1] += ITERATIONS * 8 * (r + 1)
        derived = pairs[(r, (r - 1) % RANKS, "point_to_point")]
        derived[0] += ITERATIONS
        derived[1] += ITERATIONS * (16 + r)
        if r ^ 1 < RANKS:
            pairs[(r, r ^ 1, "sendrecv")] = [ITERATIONS, ITERATIONS * (1000 + r)]
        pairs[(r, (r + 2) % RANKS, "persistent")] = [ITERATIONS, ITERATIONS * (32 + r)]
        # The intercommunicator's remote group: the other parity's ranks in world order.
        remote = [q for q in range(RANKS) if q % 2 != r % 2]
        across = pairs[(r, remote[(r // 2) % len(remote)], "point_to_point")]
        across[0] += ITERATIONS
        across[1] += ITERATIONS * (48 + r)
        # One-sided, origin to target in world ranks, bytes of the origin's data.
        pairs[(r, (r - 1) % RANKS, "put")] = [ITERATIONS, ITERATIONS * 4 * (2 + r)]
        pairs[(r, (r + 1) % RANKS, "get")] = [ITERATIONS, ITERATIONS * 3 * 8]
        pairs[(r, (r - 2) % RANKS, "accumulate")] = [2 * ITERATIONS,
                                                     ITERATIONS * (4 * (1 + r) + 8)]
    return {k: tuple(v) for k, v in pairs.items()}


ONE_SIDED = ("put", "get", "accumulate")
MODES = "derived,persistent,intercomm,onesided,collectives"


def expected_collectives():
    """{members: {rank: (calls, bytes)}} of comm_pattern.c's collectives (docs/job-record.md: a
    member's bytes are those it sends: a broadcast's at its root, an all-to-all's to every
    member, a gather's from every member, the root too)."""
    world = {r: (ITERATIONS * 4, ITERATIONS * (4 + 2 * 4 * RANKS + 3 * 8) + (100 * ITERATIONS
                                                                           if r == 0 else 0))
             for r in range(RANKS)}
    halves = {}
    for parity in (0, 1):
        members = list(range(parity, RANKS, 2))
        halves[",".join(map(str, members))] = {
            r: (ITERATIONS * (len(members) + 2), ITERATIONS * (10 * (r + 1) + 3 * 4))
            for r in members}
    return {f"0-{RANKS - 1}": world, **halves}


def collectives_of(section):
    return {c["members"]: {m["rank"]: (m["calls"], m["bytes"]) for m in c["per_member"]}
            for c in section["communicators"]}


def point_to_point(by_kind):
    return {k: v for k, v in by_kind.items() if k[2] not in ONE_SIDED}


def by_kind_of(communication):
    return {(p["from"], p["to"], kind): (p["messages"], p["bytes"])
            for kind, pairs in communication["by_kind"].items() for p in pairs}


def totals_of(by_kind):
    totals = collections.defaultdict(lambda: [0, 0])
    for (a, b, _), (m, n) in by_kind.items():
        totals[(a, b)][0] += m
        totals[(a, b)][1] += n
    return {k: tuple(v) for k, v in totals.items()}


class CommunicationMatrix(ProfileTestCase):
    def run_pattern(self, tools="profile", **env):
        proc = self.profile_run([program("comm_pattern_c"), str(ITERATIONS), "0", MODES],
                                ranks=RANKS, tools=tools, env=base_env(STRATA_SPOOL=self.spool,
                                                                       HOME=self.out, **env))
        self.assertRan(proc)
        return proc

    def assertExact(self, communication, program_output):
        self.assertEqual(by_kind_of(communication), expected_by_kind())
        self.assertEqual({(p["from"], p["to"]): (p["messages"], p["bytes"])
                          for p in communication["pairs"]},
                         totals_of(point_to_point(expected_by_kind())))
        self.assertEqual(sorted(communication["pairs"], key=lambda p: (p["from"], p["to"])),
                         communication["pairs"])
        self.assertNotIn("unlisted", communication)
        self.assertCollectivesExact(communication["collectives"])
        # What each rank said it sent.
        said = re.findall(r"sent (\d+): (\d+) messages, (\d+) bytes", program_output)
        self.assertEqual(len(said), RANKS, program_output)
        for rank, messages, sent_bytes in said:
            mine = [p for p in communication["pairs"] if p["from"] == int(rank)]
            self.assertEqual(sum(p["messages"] for p in mine), int(messages))
            self.assertEqual(sum(p["bytes"] for p in mine), int(sent_bytes))

    def assertCollectivesExact(self, section):
        expected = expected_collectives()
        self.assertEqual(collectives_of(section), expected)
        self.assertNotIn("unlisted", section)
        self.assertNotIn("unattributed", section)
        # Heaviest first; the sums and the spread over the members agree with the members.
        totals = [sum(b for _, b in members.values()) for members in expected.values()]
        self.assertEqual([c["bytes"] for c in section["communicators"]],
                         sorted(totals, reverse=True))
        for c in section["communicators"]:
            members = expected[c["members"]]
            self.assertEqual((c["size"], c["members_reported"]), (len(members), len(members)))
            self.assertEqual(c["calls"], sum(n for n, _ in members.values()))
            self.assertEqual((c["calls_min"], c["calls_max"]),
                             (min(n for n, _ in members.values()),
                              max(n for n, _ in members.values())))
            spread = c["bytes_per_member"]
            most = max(members, key=lambda r: (members[r][1], -r))
            self.assertEqual((spread["max"], spread["max_rank"]), (members[most][1], most))

    def test_the_record_holds_every_pair_exactly_in_world_ranks(self):
        # Summed by the core (the default: after its first call, each routine's usual copy
        # straight from the entry point), by the core's general copy (the clock not the TSC), and
        # as events to the profile's callback.
        for core_sums, clock in (("1", None), ("1", "monotonic"), ("0", None)):
            with self.subTest(core_sums=core_sums, clock=clock):
                for f in self.records():
                    os.remove(f)
                proc = self.run_pattern(STRATA_PROFILE_CORE_SUMS=core_sums,
                                        **({"STRATA_CLOCK": clock} if clock else {}))
                record = self.only_record()
                self.assertExact(record["communication"], proc.stdout)

    def test_communication_off_leaves_the_section_out_and_the_calls_counted(self):
        # communication=0: no sums per pair nor per communicator, the routines' figures alone.
        for core_sums in ("1", "0"):
            with self.subTest(core_sums=core_sums):
                for f in self.records():
                    os.remove(f)
                self.run_pattern(STRATA_PROFILE_COMMUNICATION="0",
                                 STRATA_PROFILE_CORE_SUMS=core_sums)
                record = self.only_record()
                self.assertNotIn("communication", record)
                routines = record["routines"]
                self.assertEqual(routines["MPI_Send"]["calls"], RANKS * ITERATIONS)
                self.assertEqual(routines["MPI_Sendrecv"]["calls"],
                                 sum(r ^ 1 < RANKS for r in range(RANKS)) * ITERATIONS)
                self.assertIn("MPI_Start", routines)
                self.assertFalse([f for f in os.listdir(self.spool) if f.endswith(".pairs")])

    def test_the_text_report_shows_pairs_balance_and_neighbours(self):
        self.run_pattern()
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        text = report.stdout
        self.assertIn("Point-to-point pairs by bytes", text)
        self.assertIn("Point-to-point traffic by rank", text)
        # The heaviest pair first (2 -> 3: its MPI_Sendrecv and its ring messages).
        heaviest = max(totals_of(point_to_point(expected_by_kind())).items(),
                       key=lambda kv: kv[1][1])
        (a, b), (m, n) = heaviest
        first_row = re.search(r"Point-to-point pairs by bytes.*?\n.*?from.*?\n\s*(\d+)\s+(\d+)\s+"
                              r"(\d+)\s+(\d+)", text, re.S)
        self.assertIsNotNone(first_row, text)
        self.assertEqual(tuple(int(x) for x in first_row.groups()), (a, b, m, n))
        # Every rank exchanges with its two ring neighbours (its MPI_Sendrecv partner is one of
        # them) and the two ranks two away (persistent sends), and sends and receives one message
        # of each kind per iteration and pair.
        rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+\d+\s+(\d+)\s+\d+\s+[\d.-]+\s+(\d+)\s*$",
                          text, re.M)
        self.assertEqual({int(r): int(n) for r, _, _, n in rows}, {r: 4 for r in range(RANKS)})
        sent = collections.Counter()
        for (a, _, _), (m, _) in point_to_point(expected_by_kind()).items():
            sent[a] += m
        self.assertEqual({int(r): int(s) for r, s, _, _ in rows}, dict(sent))
        self.assertIn("neighbours min 4, mean 4.0, max 4", text)
        # Each kind apart, the one-sided ones (origin to target) out of the tables above.
        by_kind = collections.defaultdict(lambda: [0, 0, 0])
        for (_, _, kind), (m, n) in expected_by_kind().items():
            by_kind[kind][0] += 1
            by_kind[kind][1] += m
            by_kind[kind][2] += n
        for kind, (pairs, m, n) in by_kind.items():
            self.assertRegex(text, rf"\n\s*{kind.replace('_', ' ')}\s+{pairs}\s+{m}\s+{n}\n")
        one_sided = sorted(((n, m, a, b, kind)
                            for (a, b, kind), (m, n) in expected_by_kind().items()
                            if kind in ONE_SIDED), reverse=True)
        n, m, a, b, kind = one_sided[0]
        self.assertRegex(text, rf"One-sided operations by bytes \(origin to target\)\n.*\n"
                               rf"\s*{a}\s+{b}\s+{kind}\s+{m}\s+{n}\n")

    def test_the_text_report_shows_collectives_by_communicator(self):
        self.run_pattern()
        report = run([STRATA, "report", self.records()[0]])
        self.assertRan(report)
        text = report.stdout
        self.assertIn("Collectives by communicator (bytes sent)", text)
        # The world first: 5 members, 24 calls each, 2640 bytes, rank 0 the most (its broadcasts).
        world = expected_collectives()[f"0-{RANKS - 1}"]
        self.assertRegex(text, rf"\n\s*0-{RANKS - 1}\s+{RANKS}\s+{ITERATIONS * 4}\s+"
                               rf"{sum(b for _, b in world.values())}\s+{min(b for _, b in world.values())}"
                               rf" / [\d.]+ / {world[0][1]}\s+0\s+[\d.]+\n")
        self.assertIn("Collectives per member", text)
        for members, by_rank in expected_collectives().items():
            for rank, (calls, sent) in by_rank.items():
                self.assertRegex(text, rf"\n\s*{members}\s+{rank}\s+{calls}\s+{sent}\n")

    def test_fortran_collectives_are_exact(self):
        # MPI_Allreduce on MPI_COMM_WORLD and MPI_Bcast on a split, through the Fortran bindings.
        iterations, ranks = 5, 3
        for core_sums in ("1", "0"):
            with self.subTest(core_sums=core_sums):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run([program("collectives_f90"), str(iterations)], ranks=ranks,
                                        env=base_env(STRATA_SPOOL=self.spool, HOME=self.out,
                                                     STRATA_PROFILE_CORE_SUMS=core_sums))
                self.assertRan(proc)
                section = self.only_record()["communication"]["collectives"]
                self.assertEqual(collectives_of(section), {
                    "0-2": {r: (iterations, iterations * 8) for r in range(ranks)},
                    "0,2": {0: (iterations, iterations * 20), 2: (iterations, 0)},
                    "1": {1: (iterations, iterations * 20)}})

    def test_fortran_alltoallw_and_neighbourhood_collectives_have_exact_bytes(self):
        # collectives.f90 "neighbours": besides the above, MPI_Alltoallw on the world (an
        # integer to even ranks, a double precision to odd ones) and MPI_Neighbor_allgather of 3
        # integers on a Cartesian ring of the world's ranks, through the Fortran bindings.
        iterations, ranks = 5, 3
        proc = self.profile_run([program("collectives_f90"), str(iterations), "neighbours"],
                                ranks=ranks, env=base_env(STRATA_SPOOL=self.spool, HOME=self.out))
        self.assertRan(proc)
        record = self.only_record()
        world = 2 * 4 + (4 + 8 + 4) + 3 * 4 * 2
        self.assertEqual(collectives_of(record["communication"]["collectives"]), {
            "0-2": {r: (3 * iterations, iterations * world) for r in range(ranks)},
            "0,2": {0: (iterations, iterations * 20), 2: (iterations, 0)},
            "1": {1: (iterations, iterations * 20)}})
        self.assertEqual(record["routines"]["MPI_Alltoallw"]["bytes_sent"],
                         ranks * iterations * 16)
        self.assertEqual(record["routines"]["MPI_Neighbor_allgather"]["bytes_sent"],
                         ranks * iterations * 24)

    def test_fortran_persistent_sends_are_exact(self):
        # MPI_Send_init, MPI_Start and MPI_Startall through the Fortran bindings (C handles
        # converted by the bindings): one message per start, rank + 1 integers to the next rank.
        iterations, ranks = 5, 3
        proc = self.profile_run([program("persistent_f90"), str(iterations)], ranks=ranks,
                                env=base_env(STRATA_SPOOL=self.spool, HOME=self.out))
        self.assertRan(proc)
        communication = self.only_record()["communication"]
        self.assertEqual(by_kind_of(communication),
                         {(r, (r + 1) % ranks, "persistent"): (iterations, iterations * 4 * (r + 1))
                          for r in range(ranks)})

    @unittest.skipUnless(FLAVOR == "mpich",
                         "partitioned communication is MPI 4's: Open MPI 4.1 declares only "
                         "MPIX_Psend_init and its kin, which Strata does not wrap")
    def test_fortran_partitioned_sends_are_exact(self):
        # MPI_Psend_init, MPI_Precv_init, MPI_Start, MPI_Startall and MPI_Pready through the
        # Fortran bindings: one message of all 3 partitions of rank + 2 integers per start, to
        # the next rank; the receive is no message of the receiver's.
        iterations, ranks = 5, 3
        for core_sums in ("1", "0"):
            with self.subTest(core_sums=core_sums):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run([program("partitioned_f90"), str(iterations)],
                                        ranks=ranks,
                                        env=base_env(STRATA_SPOOL=self.spool, HOME=self.out,
                                                     STRATA_PROFILE_CORE_SUMS=core_sums))
                self.assertRan(proc)
                self.assertIn(f"partitioned: ranks={ranks}", proc.stdout)
                communication = self.only_record()["communication"]
                self.assertEqual(by_kind_of(communication),
                                 {(r, (r + 1) % ranks, "partitioned"):
                                  (iterations, iterations * 3 * (r + 2) * 4)
                                  for r in range(ranks)})

    def test_alltoallw_neighbourhood_and_persistent_collectives_have_exact_bytes(self):
        # comm_pattern.c's "neighbours" (MPI_Alltoallw, MPI_Ialltoallw, and neighbourhood
        # collectives on a Cartesian ring and on a distributed graph, all of the world's ranks)
        # and "collective_starts" (MPI 4: a broadcast and an allreduce started every
        # iteration; their _init calls are no calls of the collective).
        persistent = FLAVOR == "mpich"
        expected = {}
        alltoallw = {}
        for r in range(RANKS):
            alltoallw[r] = sum((r + j + 1) * (4 if j % 2 == 0 else 8) for j in range(RANKS))
            neighbours = 3 * 4 * 2 + (4 + 2 * 8) + 2 * 8 * 2 + (1 + r + 2) * 4 + (r + 1) * 2
            calls, sent = 8, 4 + 2 * alltoallw[r] + neighbours
            if persistent:
                calls, sent = calls + 2, sent + 4 * 4 + (50 if r == 1 else 0)
            expected[r] = (ITERATIONS * calls, ITERATIONS * sent)
        for core_sums in ("1", "0"):
            with self.subTest(core_sums=core_sums):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run(
                    [program("comm_pattern_c"), str(ITERATIONS), "0",
                     "neighbours,collective_starts"],
                    ranks=RANKS, env=base_env(STRATA_SPOOL=self.spool, HOME=self.out,
                                              STRATA_PROFILE_CORE_SUMS=core_sums))
                self.assertRan(proc)
                starts = 2 * ITERATIONS if persistent else 0
                self.assertEqual(proc.stdout.count(f"persistent collectives: {starts} starts"),
                                 RANKS, proc.stdout)
                record = self.only_record()
                self.assertEqual(collectives_of(record["communication"]["collectives"]),
                                 {f"0-{RANKS - 1}": expected})
                # The routines' own figures: the bytes every rank sent in them.
                routines = record["routines"]
                self.assertEqual(routines["MPI_Alltoallw"]["bytes_sent"],
                                 ITERATIONS * sum(alltoallw.values()))
                self.assertEqual(routines["MPI_Ialltoallw"]["bytes_sent"],
                                 ITERATIONS * sum(alltoallw.values()))
                self.assertEqual(routines["MPI_Neighbor_allgather"]["bytes_sent"],
                                 ITERATIONS * RANKS * 24)
                self.assertEqual(routines["MPI_Neighbor_alltoallw"]["bytes_sent"],
                                 ITERATIONS * RANKS * 20)
                self.assertEqual(routines["MPI_Neighbor_alltoall"]["bytes_sent"],
                                 ITERATIONS * RANKS * 32)
                self.assertEqual(routines["MPI_Neighbor_alltoallv"]["bytes_sent"],
                                 ITERATIONS * sum((3 + r) * 4 for r in range(RANKS)))
                self.assertEqual(routines["MPI_Ineighbor_allgatherv"]["bytes_sent"],
                                 ITERATIONS * sum(2 * (r + 1) for r in range(RANKS)))
                if persistent:
                    # Made once on every rank; what one start sends, as MPI_Send_init's.
                    self.assertEqual(routines["MPI_Bcast_init"]["calls"], RANKS)
                    self.assertEqual(routines["MPI_Bcast_init"]["bytes_sent"], 50)
                    self.assertEqual(routines["MPI_Allreduce_init"]["bytes_sent"], RANKS * 16)

    @unittest.skipUnless(FLAVOR == "mpich",
                         "partitioned communication is MPI 4's: Open MPI 4.1 declares only "
                         "MPIX_Psend_init and its kin (mpi-ext.h), which Strata does not wrap")
    @unittest.skipUnless(os.path.exists(TRACE_MODULE), "the trace module is not built")
    def test_partitioned_sends_are_exact_and_equal_in_a_trace(self):
        # comm_pattern.c "partitioned" on 4 ranks: besides the ring and the MPI_Sendrecv pairs,
        # a partitioned send of 3 partitions of 2 + rank ints to world rank + 1 on a derived
        # communicator, started every iteration (MPI_Startall or MPI_Start), one message of
        # every partition per start; its receive is no message of the receiver's.
        ranks = 4
        expected = {}
        for r in range(ranks):
            expected[(r, (r + 1) % ranks, "point_to_point")] = (ITERATIONS, ITERATIONS * 8 * (r + 1))
            if r ^ 1 < ranks:
                expected[(r, r ^ 1, "sendrecv")] = (ITERATIONS, ITERATIONS * (1000 + r))
            expected[(r, (r + 1) % ranks, "partitioned")] = (ITERATIONS,
                                                             ITERATIONS * 3 * (2 + r) * 4)
        trace = os.path.join(self.out, "trace")
        for core_sums, tools in (("1", "profile"), ("0", "profile"), ("1", "profile,trace")):
            with self.subTest(core_sums=core_sums, tools=tools):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run(
                    [program("comm_pattern_c"), str(ITERATIONS), "0", "partitioned"], ranks=ranks,
                    tools=tools, env=base_env(STRATA_SPOOL=self.spool, HOME=self.out,
                                              STRATA_PROFILE_CORE_SUMS=core_sums,
                                              STRATA_TRACE_DIR=trace))
                self.assertRan(proc)
                self.assertEqual(proc.stdout.count(f"partitioned: {ITERATIONS} starts"), ranks,
                                 proc.stdout)
                record = self.only_record()
                communication = record["communication"]
                self.assertEqual(by_kind_of(communication), expected)
                self.assertEqual({(p["from"], p["to"]): (p["messages"], p["bytes"])
                                  for p in communication["pairs"]}, totals_of(expected))
                # The routines' figures: the send's init has what one start sends, as
                # MPI_Send_init; what arrived is the completion's (from its status), as for
                # MPI_Recv_init, here MPI_Waitall's.
                routines = record["routines"]
                one_start = sum(3 * (2 + r) * 4 for r in range(ranks))
                self.assertEqual(routines["MPI_Psend_init"]["calls"], ranks)
                self.assertEqual(routines["MPI_Psend_init"]["bytes_sent"], one_start)
                self.assertEqual(routines["MPI_Precv_init"]["calls"], ranks)
                self.assertEqual(routines["MPI_Precv_init"]["bytes_received"], 0)
                self.assertEqual(routines["MPI_Waitall"]["bytes_received"], ITERATIONS * one_start)
                self.assertEqual(routines["MPI_Pready"]["calls"], ranks * ITERATIONS)
                self.assertEqual(routines["MPI_Pready"]["bytes_sent"], 0)
        analyzed = run([STRATA, "analyze", "--json", trace])
        self.assertRan(analyzed)
        from_trace = json.loads(analyzed.stdout)["communication"]
        self.assertEqual(communication["pairs"], from_trace["pairs"])
        self.assertEqual(by_kind_of(communication), by_kind_of(from_trace))

    @unittest.skipUnless(os.path.exists(TRACE_MODULE), "the trace module is not built")
    def test_the_pairs_equal_those_analyze_finds_in_a_trace_of_the_same_run(self):
        trace = os.path.join(self.out, "trace")
        proc = self.run_pattern(tools="profile,trace", STRATA_TRACE_DIR=trace)
        record = self.only_record()
        self.assertExact(record["communication"], proc.stdout)
        analyzed = run([STRATA, "analyze", "--json", trace])
        self.assertRan(analyzed)
        from_trace = json.loads(analyzed.stdout)["communication"]
        self.assertEqual(record["communication"]["pairs"], from_trace["pairs"])
        # Every kind, the one-sided operations (origin to target, in world ranks) too.
        self.assertEqual(by_kind_of(record["communication"]), by_kind_of(from_trace))
        self.assertEqual({k for k in by_kind_of(from_trace) if k[2] in ONE_SIDED},
                         {k for k in expected_by_kind() if k[2] in ONE_SIDED})


if __name__ == "__main__":
    unittest.main()
