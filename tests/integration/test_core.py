"""The core: loading, chaining and ordering modules in real MPI programs (issue: Strata core)."""
import os
import re
import subprocess
import unittest

from strata_testlib import (CORE, FLAVOR, OTHER_FLAVOR, PROGRAMS as PROGRAMS_DIR, STRATA, BUILD,
                            StrataTestCase, base_env,
                            mpirun, program, read_counts, run, strata_run)

ITER = 7
LANGUAGES = ["ring_c", "ring_cpp", "ring_f90", "ring_f08"]


def probe(out, name, **args):
    spec = f"probe:out={out}:name={name}"
    for key, value in args.items():
        spec += f":{key}={value}"
    return spec


class ResultsAndCounts(StrataTestCase):
    def native_output(self, prog):
        proc = run(mpirun(2) + [program(prog), str(ITER)])
        self.assertRan(proc)
        return proc.stdout

    def test_results_unchanged_in_every_language(self):
        for prog in LANGUAGES:
            with self.subTest(prog=prog):
                native = self.native_output(prog)
                self.assertIn("checksum=", native)
                proc = strata_run(f"empty,{probe(self.out, prog)},empty,delay:usec=1",
                                  [program(prog), str(ITER)])
                self.assertRan(proc)
                self.assertEqual(proc.stdout, native)

    def ring_counts(self, name):
        """A probe's counts of the ring program, its sends and receives checked: exact calls
        and bytes, the received ones from the status."""
        counts, _ = read_counts(os.path.join(self.out, name))
        self.assertEqual(counts["MPI_Send"][:2], (ITER, ITER * 400))
        self.assertEqual(counts["MPI_Recv"][0], ITER)
        self.assertEqual(counts["MPI_Recv"][2], ITER * 400, "bytes from the status")
        return counts

    def test_exact_counts_and_bytes_in_every_language(self):
        # Under Open MPI, Fortran calls reach MPI through PMPI_ directly; each must be seen once.
        for prog in LANGUAGES:
            with self.subTest(prog=prog):
                proc = strata_run(probe(self.out, prog), [program(prog), str(ITER)])
                self.assertRan(proc)
                for rank in (0, 1):
                    counts = self.ring_counts(f"{prog}.{rank}.counts")
                    self.assertEqual(counts["MPI_Barrier"][0], 1)
                    self.assertEqual(counts["MPI_Allreduce"][0], 1)
                    self.assertEqual(counts["MPI_Comm_rank"][0], 1)
                    self.assertNotIn("MPI_Bcast", counts)

    def test_fields_decoded_are_the_union_of_the_segment(self):
        # Modules declare the event fields they read (strata_module_fields_v1); the core decodes
        # the union of adjacent modules'. A probe that reads only the communicator next to one
        # that reads the bytes: the second still gets every byte, sent and from the status, and
        # counts stay exact; alone, a probe declaring the bytes gets them too, and so does one
        # that reads of the status only the bytes received (the profile's fields).
        stacks = {
            "union": ",".join([probe(self.out, "commonly", fields="comm"),
                               probe(self.out, "union", fields="bytes+status")]),
            "alone": probe(self.out, "alone", fields="bytes+status"),
            "received": probe(self.out, "received", fields="comm+peer+bytes+received"),
            # A point-to-point call's bytes need neither the communicator nor the peer.
            "bytes": probe(self.out, "bytes", fields="bytes+received"),
        }
        for name, tools in stacks.items():
            with self.subTest(stack=name):
                proc = strata_run(tools, [program("ring_c"), str(ITER)])
                self.assertRan(proc)
                for rank in (0, 1):
                    self.ring_counts(f"{name}.{rank}.counts")
                    if name == "union":
                        only_comm, _ = read_counts(
                            os.path.join(self.out, f"commonly.{rank}.counts"))
                        self.assertEqual(only_comm["MPI_Send"][:2], (ITER, 0),
                                         "a probe without the bytes does not sum them")

    def test_fields_per_function(self):
        # strata_module_function_fields_v1: a module that reads only the communicator of every
        # call but the receive, whose bytes and bytes received it reads, gets them decoded
        # (from the status the core substitutes for MPI_STATUS_IGNORE) for that call alone.
        tools = probe(self.out, "per_function", fields="comm",
                      fields_of="MPI_Recv/bytes+received")
        proc = strata_run(tools, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        for rank in (0, 1):
            counts, _ = read_counts(os.path.join(self.out, f"per_function.{rank}.counts"))
            self.assertEqual(counts["MPI_Recv"][0], ITER)
            self.assertEqual(counts["MPI_Recv"][2], ITER * 400, "bytes from the status")
            self.assertEqual(counts["MPI_Send"][:2], (ITER, 0), "the send's bytes not read")

    def timed_slots(self, name, rank):
        _, extra = read_counts(os.path.join(self.out, f"{name}.{rank}.counts"))
        slots = {}
        for line in extra:
            if line.startswith("slot "):
                parts = line.split()
                slots[parts[1]] = dict(p.split("=") for p in parts[2:])
        return slots, extra

    def test_timed_calls_summed_by_the_core_into_lent_slots(self):
        # strata_module_timed_counts_v1: a module alone above MPI that lends its slots gets its
        # timed calls summed by the core, with no event: calls, counts, bytes (received ones
        # from the substituted status), histograms and the latest exit. Both kinds of entry:
        # arguments in registers (MPI_Barrier) and on the stack (MPI_Send, MPI_Recv,
        # MPI_Allreduce). Functions it did not lend still reach its callback.
        timed = "MPI_Send+MPI_Recv+MPI_Allreduce+MPI_Barrier"
        proc = strata_run(probe(self.out, "lent", timed=timed), [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        for rank in (0, 1):
            slots, extra = self.timed_slots("lent", rank)
            counts, _ = read_counts(os.path.join(self.out, f"lent.{rank}.counts"))
            for name in timed.split("+"):
                self.assertNotIn(name, counts, "summed by the core: no event")
                self.assertEqual(slots[name]["time_ok"], "1", slots[name])
            self.assertEqual(counts["MPI_Comm_rank"][0], 1, "not lent: an event")
            send, recv = slots["MPI_Send"], slots["MPI_Recv"]
            self.assertEqual((send["calls"], send["count"], send["sent"]),
                             (str(ITER), str(ITER * 100), str(ITER * 400)))
            self.assertEqual(send["size9"], str(ITER), "400 bytes: [256, 512)")
            self.assertEqual((recv["calls"], recv["received"]), (str(ITER), str(ITER * 400)))
            self.assertEqual(slots["MPI_Allreduce"]["calls"], "1")
            self.assertEqual(slots["MPI_Allreduce"]["comm1"], "1", "2 processes: [2, 4)")
            self.assertEqual(slots["MPI_Barrier"]["calls"], "1")
            self.assertIn("latest_exit_ok 1", extra)
        # Two modules in one segment: events for both, the slots untouched.
        stack = ",".join([probe(self.out, "upper"), probe(self.out, "lower", timed=timed)])
        proc = strata_run(stack, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        for rank in (0, 1):
            slots, _ = self.timed_slots("lower", rank)
            self.ring_counts(f"lower.{rank}.counts")
            self.assertEqual(slots["MPI_Send"]["calls"], "0")

    def test_a_module_without_a_table_of_requests_is_called_back_after_each_start(self):
        # strata_timed_counts::after_start, for a module that lends MPI_Start and MPI_Startall
        # but no table of its persistent requests: the core sums the starts into the slots and
        # calls the module back once per call, with the requests the call started.
        # completions_c: MPI_Start twice on each of 2 requests; completion_ring_c: MPI_Startall
        # of 2 requests ITER times.
        timed = "MPI_Start+MPI_Startall"
        for prog, args, name, calls, requests in (
                ("completions_c", [], "MPI_Start", 4, 4),
                ("completion_ring_c", [str(ITER)], "MPI_Startall", ITER, 2 * ITER)):
            with self.subTest(program=prog):
                tools = probe(self.out, "starts", timed=timed, after_start=1, fields="requests")
                proc = strata_run(tools, [program(prog)] + args)
                self.assertRan(proc)
                for rank in (0, 1):
                    slots, extra = self.timed_slots("starts", rank)
                    self.assertEqual(slots[name]["calls"], str(calls), extra)
                    self.assertIn(f"after_start {name} callbacks={calls} requests={requests}",
                                  extra)
        # Without after_start=1 the same stack is called back for nothing.
        proc = strata_run(probe(self.out, "quiet", timed=timed),
                          [program("completion_ring_c"), str(ITER)])
        self.assertRan(proc)
        _, extra = self.timed_slots("quiet", 0)
        self.assertFalse([l for l in extra if l.startswith("after_start")], extra)

    def test_the_latest_exit_of_lent_slots_follows_the_calls(self):
        # The core moves the latest exit (the wall time of a rank that dies) on at most once a
        # millisecond, not on every call: it must still follow calls spaced farther apart.
        # uneven_c: rank 1's three MPI_Recv and rank 2's three MPI_Send come 150 ms apart, the
        # last about 450 ms after the first summed call (the barrier), just before finalize.
        timed = "MPI_Send+MPI_Recv+MPI_Barrier"
        proc = strata_run(probe(self.out, "lag", timed=timed), [program("uneven_c")], ranks=4)
        self.assertRan(proc)
        for rank in (1, 2):
            slots, extra = self.timed_slots("lag", rank)
            self.assertEqual(slots["MPI_Recv" if rank == 1 else "MPI_Send"]["calls"], "3")
            lag = [int(l.split()[1]) for l in extra if l.startswith("latest_exit_lag_ms ")]
            self.assertEqual(len(lag), 1, extra)
            self.assertLess(lag[0], 75, f"rank {rank}: the latest exit stopped following")

    def test_a_slot_taken_but_not_lent_is_reported_once_and_keeps_the_events(self):
        # strata_module_timed_counts_v1 non-zero with a null slot (three functions here): the
        # core keeps their events and says so in one line for the module, on rank 0 only, not
        # once per function; the function it did lend is still summed.
        tools = probe(self.out, "nullslot", timed="MPI_Allreduce",
                      timed_null="MPI_Send+MPI_Recv+MPI_Barrier")
        proc = strata_run(tools, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        lines = [l for l in proc.stderr.splitlines() if "summed by the core" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], r"^strata: warning: STRATA_TOOLS: module 'probe' cannot have "
                                   r"MPI_(Send|Recv|Barrier) and 2 other functions summed by the "
                                   r"core: strata_module_timed_counts_v1 returned non-zero with "
                                   r"out->slot null; their calls stay events$")
        for rank in (0, 1):
            counts = self.ring_counts(f"nullslot.{rank}.counts")
            self.assertEqual(counts["MPI_Barrier"][0], 1, "kept as an event")
            slots, _ = self.timed_slots("nullslot", rank)
            self.assertNotIn("MPI_Allreduce", counts, "lent: summed by the core")
            self.assertEqual(slots["MPI_Allreduce"]["calls"], "1")

    def test_bytes_of_predefined_and_reused_derived_datatypes(self):
        # The core knows the predefined types' sizes from MPI_Init on and asks MPI for the
        # others on every call: a derived type freed and its handle given to a larger one
        # still counts the larger one's bytes. The bytes received alike with the status's
        # fields or only the bytes received (STRATA_FIELD_RECEIVED).
        for fields in ("bytes+status", "bytes+received"):
            with self.subTest(fields=fields):
                name = "types" + fields.replace("+", "_")
                proc = strata_run(probe(self.out, name, fields=fields), [program("datatypes_c")])
                self.assertRan(proc)
                found = re.search(r"datatypes: sent=(\d+) reused_handles=(\d+)", proc.stdout)
                self.assertIsNotNone(found, proc.stdout)
                sent = int(found.group(1))
                for rank in (0, 1):
                    counts, _ = read_counts(os.path.join(self.out, f"{name}.{rank}.counts"))
                    self.assertEqual(counts["MPI_Sendrecv"][:3], (8, sent, sent),
                                     "calls, bytes sent and bytes received (from the status)")

    def test_event_clock_is_monotonic_time(self):
        # The core reads the TSC where it can, scaled to CLOCK_MONOTONIC ns at MPI_Init; at
        # finalize both must still agree (a rate from a careless calibration is ~100 ppm off:
        # 100 us over this run), and with STRATA_CLOCK=monotonic (clock_gettime) too. The
        # delay module makes the run last.
        for clock in ("", "monotonic"):
            with self.subTest(clock=clock):
                env = base_env(STRATA_CLOCK=clock)
                proc = strata_run(f"{probe(self.out, 'clk' + clock)},delay:usec=2000",
                                  [program("ring_c"), "200"], env=env)
                self.assertRan(proc)
                for rank in (0, 1):
                    counts, extra = read_counts(os.path.join(self.out, f"clk{clock}.{rank}.counts"))
                    skew = [int(x.split()[1]) for x in extra if x.startswith("clock_skew_ns")]
                    self.assertEqual(len(skew), 1)
                    self.assertLess(abs(skew[0]), 50_000, "event clock drifted from CLOCK_MONOTONIC")
                    # The probe sits above the delay module: its send time includes the hold.
                    self.assertGreaterEqual(counts["MPI_Send"][3], 200 * 2_000_000)

    def test_thread_multiple(self):
        iterations = 500
        proc = strata_run(f"{probe(self.out, 'mt')},empty", [program("threads_c"), str(iterations)])
        self.assertRan(proc)
        self.assertIn(f"threads: sum={2 * sum(range(iterations)) + iterations}", proc.stdout)
        for rank in (0, 1):
            counts, _ = read_counts(os.path.join(self.out, f"mt.{rank}.counts"))
            self.assertEqual(counts["MPI_Sendrecv"][:3], (2 * iterations, 8 * iterations, 8 * iterations))
            self.assertEqual(counts["MPI_Init_thread"][0], 1)

    def test_linked_with_lstrata_without_preload(self):
        env = base_env(STRATA_TOOLS=probe(self.out, "linked"))
        proc = run(mpirun(2) + [program("ring_linked"), str(ITER)], env=env)
        self.assertRan(proc)
        counts, _ = read_counts(os.path.join(self.out, "linked.0.counts"))
        self.assertEqual(counts["MPI_Send"][0], ITER)

    def test_strata_exec_under_any_launcher(self):
        proc = run(mpirun(2) + [STRATA, "exec", "--tools", probe(self.out, "ex"), "--",
                                program("ring_c"), str(ITER)])
        self.assertRan(proc)
        counts, _ = read_counts(os.path.join(self.out, "ex.1.counts"))
        self.assertEqual(counts["MPI_Send"][0], ITER)

    def test_the_tools_communicator_leaves_no_progress_hook(self):
        # Open MPI's MPI_Comm_dup agrees on the new context id with a nonblocking allreduce,
        # which leaves its nonblocking-collective component's progress function in every later
        # MPI_Test and MPI_Testany of the process. The core makes the tools' communicator in
        # MPI_Init; a program that makes none of its own (HPCC's RandomAccess) must not pay
        # that (docs/PERFORMANCE.md). The program's own dup shows the probe sees it. The
        # monitor makes communicators of its own: with transport=inline they outlive MPI_Init
        # (its first round's gather registers the function, not its start); with the tree (one
        # tool rank beside the two) the world they were made from is freed at once, which
        # unregisters it, so that case guards the order rather than the call.
        if FLAVOR != "openmpi":
            self.skipTest("an Open MPI progress function; MPICH's dup leaves nothing behind")
        native = run(mpirun(2) + [program("progress_hooks_c")])
        self.assertRan(native)
        expected = sorted(l for l in native.stdout.splitlines() if l.startswith("progress_hooks:"))
        self.assertEqual(expected, [f"progress_hooks: rank={r} after_init=idle after_dup=registered"
                                    for r in (0, 1)])
        for tools in ("empty", "profile", "trace", "monitor:transport=inline", "monitor",
                      "monitor,profile"):
            with self.subTest(tools=tools):
                proc = strata_run(tools, [program("progress_hooks_c")],
                                  env=base_env(STRATA_SPOOL=self.out,
                                               STRATA_TRACE_DIR=os.path.join(self.out, "trace"),
                                               STRATA_MONITOR_OUT=os.path.join(self.out,
                                                                               "rounds.jsonl")))
                self.assertRan(proc)
                got = sorted(l for l in proc.stdout.splitlines() if l.startswith("progress_hooks:"))
                self.assertEqual(got, expected)

    def test_three_ranks(self):
        proc = strata_run(probe(self.out, "three"), [program("ring_c"), str(ITER)], ranks=3)
        self.assertRan(proc)
        self.assertIn("ranks=3", proc.stdout)
        for rank in range(3):
            counts, _ = read_counts(os.path.join(self.out, f"three.{rank}.counts"))
            self.assertEqual(counts["MPI_Send"][0], ITER)


class Chaining(StrataTestCase):
    def order_log(self, rank=0):
        with open(os.path.join(self.out, f"log.{rank}")) as f:
            return [line.strip() for line in f]

    def first_call(self, log, function):
        """The lines of the first call of `function`, from the first module's enter to its exit."""
        start = next(i for i, l in enumerate(log) if l.endswith(function) and ("enter" in l or "wrap-in" in l))
        opener = log[start].split()[0]
        end = next(i for i in range(start + 1, len(log)) if log[i].split()[0] == opener)
        return log[start:end + 1]

    def test_mixed_event_and_wrapper_layers_in_order(self):
        tools = ",".join([probe(self.out, "A", log="MPI_Send+MPI_Barrier"), f"wrap_a:out={self.out}",
                          probe(self.out, "B", log="MPI_Send+MPI_Barrier"), f"wrap_b:out={self.out}"])
        proc = strata_run(tools, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        log = self.order_log()
        self.assertEqual(self.first_call(log, "MPI_Send"), [
            "A enter MPI_Send", "wrap_a wrap-in MPI_Send", "B enter MPI_Send",
            "wrap_b wrap-in MPI_Send", "wrap_b wrap-out MPI_Send", "B exit MPI_Send",
            "wrap_a wrap-out MPI_Send", "A exit MPI_Send"])
        self.assertEqual(sum(1 for l in log if l == "A enter MPI_Send"), ITER)

    def test_reversed_order(self):
        tools = ",".join([f"wrap_b:out={self.out}", probe(self.out, "A", log="MPI_Send"),
                          f"wrap_a:out={self.out}"])
        proc = strata_run(tools, [program("ring_cpp"), str(ITER)])
        self.assertRan(proc)
        self.assertEqual(self.first_call(self.order_log(1), "MPI_Send"), [
            "wrap_b wrap-in MPI_Send", "A enter MPI_Send", "wrap_a wrap-in MPI_Send",
            "wrap_a wrap-out MPI_Send", "A exit MPI_Send", "wrap_b wrap-out MPI_Send"])

    def test_module_calls_go_below_it_only(self):
        # wrap_a calls MPI_Comm_size inside its MPI_Barrier wrapper, as the call it passes on:
        # B (below) sees it, A (above) does not. A probe's own MPI_Allreduce at finalize is its
        # housekeeping: no other layer sees it, unless the module asks for its calls to be
        # seen (probe_seen), and then only the layers below it do.
        tools = ",".join([probe(self.out, "A"), f"wrap_a:out={self.out}", probe(self.out, "B")])
        proc = strata_run(tools, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        a, _ = read_counts(os.path.join(self.out, "A.0.counts"))
        b, _ = read_counts(os.path.join(self.out, "B.0.counts"))
        self.assertEqual(a["MPI_Comm_size"][0], 1)
        self.assertEqual(b["MPI_Comm_size"][0], 2)
        self.assertEqual(a["MPI_Allreduce"][0], 1)
        self.assertEqual(b["MPI_Allreduce"][0], 1)
        seen = probe(self.out, "S").replace("probe:", "probe_seen:", 1)
        tools = ",".join([probe(self.out, "A2"), seen, probe(self.out, "B2")])
        proc = strata_run(tools, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        for name, allreduces in (("A2", 1), ("S", 1), ("B2", 2)):
            counts, _ = read_counts(os.path.join(self.out, f"{name}.0.counts"))
            self.assertEqual(counts["MPI_Allreduce"][0], allreduces, name)

    def test_pcontrol_reaches_every_module(self):
        tools = ",".join([probe(self.out, "A"), "empty", probe(self.out, "B")])
        for prog in ("ring_c", "ring_f90"):
            with self.subTest(prog=prog):
                proc = strata_run(tools, [program(prog), "2"])
                self.assertRan(proc)
                for name in ("A", "B"):
                    _, extra = read_counts(os.path.join(self.out, f"{name}.1.counts"))
                    self.assertEqual([l for l in extra if l.startswith("pcontrol")],
                                     ["pcontrol 2", "pcontrol 0"])

    def test_services_between_modules(self):
        tools = ",".join([probe(self.out, "A", publish="probe.total"),
                          probe(self.out, "B", lookup="probe.total"),
                          probe(self.out, "C", lookup="nothing.here")])
        proc = strata_run(tools, [program("ring_c"), "2"])
        self.assertRan(proc)
        _, b = read_counts(os.path.join(self.out, "B.0.counts"))
        _, c = read_counts(os.path.join(self.out, "C.0.counts"))
        self.assertIn("lookup probe.total 4242 signature-checked", b)
        self.assertIn("lookup nothing.here -1 signature-checked", c)

    def test_delay_holds_sends(self):
        usec = 3000
        # Adjacent event modules share one clock pair, so `empty` puts `below` in its own group.
        tools = ",".join([probe(self.out, "above"), f"delay:usec={usec}", "empty",
                          probe(self.out, "below")])
        proc = strata_run(tools, [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        above, _ = read_counts(os.path.join(self.out, "above.0.counts"))
        below, _ = read_counts(os.path.join(self.out, "below.0.counts"))
        # The delay is a busy wait: a lower bound that holds on any machine.
        self.assertGreaterEqual(above["MPI_Send"][3] - below["MPI_Send"][3], ITER * usec * 1000)
        self.assertLess(above["MPI_Recv"][3] - below["MPI_Recv"][3], ITER * usec * 1000)

    def test_hundred_layers(self):
        proc = strata_run(",".join(["empty"] * 100 + [probe(self.out, "deep")]),
                          [program("ring_f90"), str(ITER)])
        self.assertRan(proc)
        counts, _ = read_counts(os.path.join(self.out, "deep.0.counts"))
        self.assertEqual(counts["MPI_Send"][0], ITER)


class WorldReplacement(StrataTestCase):
    def test_application_sees_the_replaced_world(self):
        # 4 ranks, world replaced by evens/odds: two rings of 2, each printing from its rank 0.
        for prog in LANGUAGES:
            with self.subTest(prog=prog):
                native = run(mpirun(2) + [program(prog), str(ITER)])
                self.assertRan(native)
                proc = strata_run(f"halfworld,{probe(self.out, prog)}", [program(prog), str(ITER)],
                                  ranks=4)
                self.assertRan(proc)
                lines = sorted(l for l in proc.stdout.splitlines() if l.startswith("ring:"))
                self.assertEqual(len(lines), 2, proc.stdout)
                self.assertTrue(all("ranks=2 " in l for l in lines), proc.stdout)
                # The even ring carries ranks 0 and 2 of the world, so its data differ from a
                # plain 2-rank run only through the world-rank-independent ring pattern.
                self.assertEqual(lines[0], native.stdout.strip())
                # The modules after it see the application's world too: two worlds of 2 ranks
                # (whose files have the same names and figures).
                counts, _ = read_counts(os.path.join(self.out, f"{prog}.1.counts"))
                self.assertEqual(counts["MPI_Send"][0], ITER)
                self.assertFalse(os.path.exists(os.path.join(self.out, f"{prog}.3.counts")))


class Configuration(StrataTestCase):
    def test_config_file_sources(self):
        conf = os.path.join(self.out, "stack.conf")
        with open(conf, "w") as f:
            f.write(f"# a stack\nprobe out=\"{self.out}\" name=fromfile\n")
        proc = strata_run(None, [program("ring_c"), "2"], extra=["--config", conf])
        self.assertRan(proc)
        self.assertTrue(os.path.exists(os.path.join(self.out, "fromfile.0.counts")))
        # STRATA_CONFIG, then ./.strata.conf in the working directory.
        with open(conf, "w") as f:
            f.write(f"probe out={self.out} name=fromenv\n")
        proc = run(mpirun(2) + [STRATA, "exec", "--", program("ring_c"), "2"],
                   env=base_env(STRATA_CONFIG=conf))
        self.assertRan(proc)
        self.assertTrue(os.path.exists(os.path.join(self.out, "fromenv.0.counts")))
        with open(os.path.join(self.out, ".strata.conf"), "w") as f:
            f.write(f"probe out={self.out} name=fromcwd\n")
        proc = run(mpirun(2) + [STRATA, "exec", "--", program("ring_c"), "2"], cwd=self.out)
        self.assertRan(proc)
        self.assertTrue(os.path.exists(os.path.join(self.out, "fromcwd.0.counts")))

    def test_disable_opts_out(self):
        proc = run(mpirun(2) + [program("ring_c"), "2"],
                   env=base_env(LD_PRELOAD=CORE, STRATA_TOOLS=probe(self.out, "off"), STRATA_DISABLE="1"))
        self.assertRan(proc)
        self.assertFalse(os.path.exists(os.path.join(self.out, "off.0.counts")))

    def test_modules_command_lists_what_each_wraps(self):
        proc = run([STRATA, "modules", "--mpi", FLAVOR])
        self.assertRan(proc)
        self.assertIn(f"{FLAVOR} modules:", proc.stdout)
        self.assertRegex(proc.stdout, r"empty\s+wraps every MPI function")
        self.assertRegex(proc.stdout, r"wraps \d{3} functions")
        self.assertRegex(proc.stdout, r"delay .*\n\s+events for \d+ functions\n\s+.*MPI_Isend")


class Errors(StrataTestCase):
    def test_unknown_module(self):
        proc = strata_run("empty,nosuch", [program("ring_c"), "2"])
        self.assertOneErrorLine(proc, "--tools: unknown module 'nosuch' (searched ")

    def test_bad_module_argument(self):
        # Declared options are checked by the core, arguments and environment alike; what only
        # the module can judge, it refuses itself.
        for tools, env, fragment in (
                ("delay:usec=soon", {}, "module 'delay': option 'usec': 'soon' is not a whole number"),
                ("delay:colour=red", {}, "module 'delay': unknown option 'colour' (its options: usec"),
                ("delay", {"STRATA_DELAY_EVERY": "x"}, "STRATA_DELAY_EVERY: 'x' is not a whole"),
                ("delay:every=0", {},
                 "module 'delay' refused its arguments: option 'every': '0' is not a whole number of at least 1")):
            with self.subTest(tools=tools):
                proc = strata_run(tools, [program("ring_c"), "2"], env=base_env(**env))
                self.assertOneErrorLine(proc, fragment)

    def test_options_from_the_environment(self):
        # STRATA_DELAY_USEC holds each send as delay:usec= would; the argument wins over it.
        env = base_env(STRATA_DELAY_USEC="20000")
        proc = strata_run(f"{probe(self.out, 'env')},delay", [program("ring_c"), "3"], env=env)
        self.assertRan(proc)
        counts, _ = read_counts(os.path.join(self.out, "env.0.counts"))
        self.assertGreaterEqual(counts["MPI_Send"][3], 3 * 20_000_000)
        proc = strata_run(f"{probe(self.out, 'arg')},delay:usec=0", [program("ring_c"), "3"],
                          env=env)
        self.assertRan(proc)
        counts, _ = read_counts(os.path.join(self.out, "arg.0.counts"))
        self.assertLess(counts["MPI_Send"][3], 3 * 20_000_000)

    def test_tool_list_syntax(self):
        proc = strata_run("delay:usec", [program("ring_c"), "2"])
        self.assertOneErrorLine(proc, "expected KEY=VALUE after module 'delay', got 'usec'")

    def test_config_line_that_does_not_parse(self):
        conf = os.path.join(self.out, "bad.conf")
        with open(conf, "w") as f:
            f.write("empty\n\ndelay usec=10 oops\n")
        proc = strata_run(None, [program("ring_c"), "2"], extra=["--config", conf])
        self.assertOneErrorLine(proc, f"{conf}:3: expected KEY=VALUE after module 'delay', got 'oops'")

    def test_module_for_the_other_mpi(self):
        other = os.path.join(BUILD, "lib", "strata", OTHER_FLAVOR, "modules", "delay.so")
        if not os.path.exists(other):
            self.skipTest(f"{OTHER_FLAVOR} not built")
        proc = strata_run(other, [program("ring_c"), "2"])
        self.assertOneErrorLine(proc, f"was built for {OTHER_FLAVOR}, but this program uses {FLAVOR}")

    def test_module_for_another_abi_version(self):
        proc = strata_run("badabi", [program("ring_c"), "2"])
        self.assertOneErrorLine(proc, "built for module ABI version 99, this core speaks version 1")

    def test_module_missing_its_entry_symbol(self):
        proc = strata_run("nosymbol", [program("ring_c"), "2"])
        self.assertOneErrorLine(proc, "is not a Strata module: it has no strata_module_v1 symbol")

    def test_preloaded_by_hand_aborts_in_mpi_init(self):
        env = base_env(LD_PRELOAD=CORE, STRATA_TOOLS="empty,nosuch")
        proc = run(mpirun(2) + [program("ring_c"), "2"], env=env, timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        combined = proc.stdout + proc.stderr
        self.assertEqual(len(re.findall(r"strata: error: STRATA_TOOLS: unknown module 'nosuch'", combined)), 1,
                         combined)
        self.assertNotIn("ring:", proc.stdout)

    def test_program_not_found_and_not_mpi(self):
        proc = strata_run("empty", ["/no/such/program"])
        self.assertOneErrorLine(proc, "/no/such/program: program not found")
        proc = strata_run("empty", ["/bin/true"])
        self.assertOneErrorLine(proc, "is not linked against Open MPI or MPICH")

    def test_no_program(self):
        proc = run([STRATA, "exec", "--tools", "empty"])
        self.assertOneErrorLine(proc, "no program given")

    def test_a_job_too_large_for_this_machine_is_refused_before_it_starts(self):
        proc = strata_run("profile", [program("ring_c"), "1"], ranks=100000,
                          env=base_env(STRATA_SPOOL=self.out))
        self.assertOneErrorLine(proc, "-np 100000: 100000 processes on this machine's")
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(os.listdir(self.out), [])

    def test_a_program_with_its_mpi_linked_in_runs_with_one_warning(self):
        # The preloaded core never sees the calls of a program that carries its MPI library
        # inside: it runs unchanged, and the user is told that no module sees it.
        path = program("ring_mpi_linked_in")
        if not os.path.exists(path):
            self.skipTest(f"no program with {FLAVOR} linked in (Debian ships libmpich.a only)")
        native = run(mpirun(2) + [path, str(ITER)])
        self.assertRan(native)
        env = base_env(STRATA_SPOOL=self.out)
        for command in ([STRATA, "run", "-np", "2", "--mpi", FLAVOR, "--tools", "profile", "--",
                         path, str(ITER)],
                        mpirun(2) + [STRATA, "exec", "--mpi", FLAVOR, "--tools", "profile", "--",
                                     path, str(ITER)]):
            with self.subTest(command=command[0]):
                proc = run(command, env=env)
                self.assertRan(proc)
                self.assertEqual(proc.stdout, native.stdout)
                lines = [l for l in proc.stderr.splitlines() if l.startswith("strata:")]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertRegex(lines[0], r"^strata: warning: \S*ring_mpi_linked_in has its MPI "
                                 r"library linked in .*; it runs without the modules \(no record")
        proc = run([STRATA, "run", "-np", "2", "--tools", "profile", "--", program("ring_c"), "1"],
                   env=env)
        self.assertRan(proc)
        self.assertNotIn("warning", proc.stderr)

    def test_a_stripped_program_with_its_mpi_linked_in_is_told_apart(self):
        # No symbol says that MPI is inside; MPI's own messages in its read-only data do.
        path = program("ring_mpi_linked_in")
        if not os.path.exists(path):
            self.skipTest(f"no program with {FLAVOR} linked in (Debian ships libmpich.a only)")
        stripped = os.path.join(self.out, "ring_stripped")
        subprocess.run(["strip", "-o", stripped, path], check=True)
        env = base_env(STRATA_SPOOL=self.out)
        proc = run([STRATA, "run", "-np", "2", "--tools", "profile", "--", stripped, "1"], env=env)
        self.assertOneErrorLine(proc, "has its MPI library linked in")
        self.assertEqual(proc.returncode, 2)
        proc = run([STRATA, "run", "-np", "2", "--mpi", FLAVOR, "--tools", "profile", "--",
                    stripped, "1"], env=env)
        self.assertRan(proc)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata:")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertRegex(lines[0], r"^strata: warning: \S*ring_stripped has its MPI library "
                         r"linked in \(stripped, its data holds MPI's own messages\)")
        # A stripped program that uses a shared MPI library is not mistaken for one.
        ring = os.path.join(self.out, "ring_c_stripped")
        subprocess.run(["strip", "-o", ring, program("ring_c")], check=True)
        proc = run([STRATA, "run", "-np", "2", "--tools", "profile", "--", ring, "1"], env=env)
        self.assertRan(proc)
        self.assertNotIn("warning", proc.stderr)


if __name__ == "__main__":
    unittest.main()


class ProgramsBuiltAsUsersBuildThem(StrataTestCase):
    """Programs built with the flavor's compiler wrappers and with CMake's FindMPI: under Open MPI
    a C++ program links the C++ bindings, whose static constructors call MPI before libstrata's
    constructor has run; a library of the program may do the same."""

    STACKS = (None, "profile", "trace", "empty,delay:usec=1")

    def native(self, path, *args):
        proc = run(mpirun(2) + [path, *args])
        self.assertRan(proc)
        return proc.stdout

    def check_under_stacks(self, path, *args):
        native = self.native(path, *args)
        env = base_env(STRATA_SPOOL=self.out, STRATA_TRACE_DIR=self.out)
        for tools in self.STACKS:
            with self.subTest(program=os.path.relpath(path, BUILD), tools=tools):
                proc = strata_run(tools, [path, *args], env=env)
                self.assertRan(proc)
                self.assertEqual(proc.stdout, native)

    def test_cpp_program_built_with_the_wrapper(self):
        self.check_under_stacks(program("hello_cpp"))

    def test_library_calling_mpi_in_its_constructor(self):
        native = self.native(program("constructor"))
        self.assertRegex(native, r"constructor: MPI [34], initialized 0 before main; sum 1")
        self.check_under_stacks(program("constructor"))

    def test_programs_built_with_findmpi(self):
        for name, args in (("ring_c", [str(ITER)]), ("hello_cpp", []), ("ring_f90", [str(ITER)]),
                           ("ring_f08", [str(ITER)]), ("constructor", [])):
            self.check_under_stacks(os.path.join(PROGRAMS_DIR, "findmpi", name), *args)

    def test_under_any_launcher(self):
        native = self.native(program("hello_cpp"))
        proc = run(mpirun(2) + [STRATA, "exec", "--tools", "profile", "--", program("hello_cpp")],
                   env=base_env(STRATA_SPOOL=self.out))
        self.assertRan(proc)
        self.assertEqual(proc.stdout, native)


class CommandLine(StrataTestCase):
    def test_version(self):
        proc = run([STRATA, "--version"])
        self.assertRan(proc)
        self.assertRegex(proc.stdout.strip(), r"^strata \d+\.\d+\.\d+$")

    def test_unknown_or_missing_command_is_one_line_naming_it(self):
        for args, fragment in (
                (["monitor", "no-such-verb"], "'no-such-verb' is not a command of 'strata monitor'"),
                (["no-such"], "'no-such' is not a command of 'strata'"),
                (["site"], "'strata site' needs a command"),
                (["run", "--", "true"], "strata run: --np is required"),
                (["bench", "--bogus"], "strata bench: The following argument was not expected")):
            with self.subTest(args=args):
                proc = run([STRATA] + args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                lines = proc.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertTrue(lines[0].startswith("strata: error: "), lines[0])
                self.assertIn(fragment, lines[0])

    def test_removed_monitor_options_say_their_new_form(self):
        # The monitor's settings are its own options now; the old spellings of `strata run` are
        # refused in one line naming the new one, before any program starts.
        marker = os.path.join(self.out, "started")
        for option, value, fragment in (
                ("--monitor-fanout", "2", "--monitor-fanout is gone; say --tools monitor:fanout=N"),
                ("--monitor-period", "0.5", "--monitor-period is gone; say --tools monitor:period=S")):
            with self.subTest(option=option):
                proc = run([STRATA, "run", "-np", "2", "--tools", "monitor", option, value, "--",
                            "touch", marker])
                self.assertEqual(proc.returncode, 2, proc.stderr)
                lines = proc.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertTrue(lines[0].startswith("strata: error: strata run: "), lines[0])
                self.assertIn(fragment, lines[0])
                self.assertFalse(os.path.exists(marker))
        # Hidden: `strata run --help` lists only the options that work.
        proc = run([STRATA, "run", "--help"])
        self.assertRan(proc)
        self.assertNotIn("--monitor-", proc.stdout)

    def test_usage_names_the_program(self):
        proc = run([STRATA, "--help"])
        self.assertRan(proc)
        self.assertIn("Usage: strata ", proc.stdout)
