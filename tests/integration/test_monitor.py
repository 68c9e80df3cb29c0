"""The monitor module (issue 7): rounds offloaded through a tree of tool ranks, reduced by filters.

Real jobs under real mpirun: P application ranks plus the tool ranks `strata run -np P --tools monitor`
adds. monitor_app: even ranks send 1000 bytes to the next odd rank, odd ranks receive, everyone
reduces, for ITER iterations; it asks for a round every 5 iterations (strata_monitor_dump) and
every 10 (MPI_Pcontrol(5)), and each rank offloads its final round at MPI_Finalize.
"""
import json
import os
import re
import shutil
import subprocess
import unittest

from strata_testlib import (FLAVOR, STRATA, StrataTestCase, base_env, mpirun, program, run,
                            strata_run)

P = 4
ITER = 20


def read_rounds(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def final_round(rounds):
    finals = [r for r in rounds if r["round"] == "final"]
    assert len(finals) == 1, rounds
    return finals[0]


class MonitorTree(StrataTestCase):
    @classmethod
    def setUpClass(cls):
        # What the application computes without any tool: the monitor must not change it.
        plain = run([STRATA, "run", "-np", str(P), "--", program("monitor_app"), str(ITER)])
        assert plain.returncode == 0, plain.stderr
        cls.baseline = re.search(r"monitor_app: .*", plain.stdout).group(0)

    def monitored(self, tools, prog_args, fanout=2, **env):
        out = os.path.join(self.out, "rounds.jsonl")
        proc = strata_run(tools, prog_args, ranks=P,
                          env=base_env(STRATA_MONITOR_OUT=out, STRATA_MONITOR_FANOUT=str(fanout),
                                       **env), timeout=120)
        return proc, out

    def assertCleanEnd(self, proc):
        self.assertRan(proc)
        for noise in ("not matched", "did not call", "MPI_Finalize", "error"):
            self.assertNotIn(noise, proc.stderr)

    def test_application_sees_p_ranks_and_its_results_are_unchanged(self):
        proc, out = self.monitored("monitor:policy=block", [program("monitor_app"), str(ITER)])
        self.assertCleanEnd(proc)
        self.assertEqual(re.search(r"monitor_app: .*", proc.stdout).group(0), self.baseline)
        self.assertIn(f"ranks={P} ", self.baseline)
        rounds = read_rounds(out)
        # 4 dumps + 2 Pcontrol rounds, then the final one; every rank in every round.
        self.assertEqual([r["round"] for r in rounds], [0, 1, 2, 3, 4, 5, "final"])
        self.assertTrue(all(r["ranks"] == P for r in rounds))
        # Allreduce calls so far, summed over the ranks: dumps at iterations 4, 9 (twice), ...
        calls = [r["events"]["MPI_Allreduce"]["calls"]["sum"] for r in rounds]
        self.assertEqual(calls, [P * n for n in (5, 10, 10, 15, 20, 20, 20)])

    def test_final_figures_equal_the_per_rank_profiles(self):
        proc, out = self.monitored("monitor:filter=histogram:bins=4:policy=block",
                                   [program("monitor_app"), str(ITER)])
        self.assertCleanEnd(proc)
        final = final_round(read_rounds(out))
        self.assertEqual(final["filter"], "histogram")
        ev = final["events"]
        # What each rank did (the program's own arithmetic): P/2 senders and P/2 receivers.
        for name in ("MPI_Send", "MPI_Recv"):
            self.assertEqual(ev[name]["ranks"], P // 2)
            self.assertEqual(ev[name]["calls"]["sum"], P // 2 * ITER)
            self.assertEqual(ev[name]["calls"]["min"], ITER)
            self.assertEqual(ev[name]["calls"]["max"], ITER)
            self.assertEqual(ev[name]["bytes"]["sum"], P // 2 * ITER * 1000)
            self.assertEqual(ev[name]["calls"]["std"], 0)
        self.assertEqual(ev["MPI_Allreduce"]["ranks"], P)
        self.assertEqual(ev["MPI_Allreduce"]["calls"]["sum"], P * ITER)
        self.assertEqual(ev["MPI_Barrier"]["calls"]["sum"], P)
        for name, e in ev.items():
            t = e["time"]
            self.assertLessEqual(t["min"], t["mean"] + 1e-12, name)
            self.assertLessEqual(t["mean"], t["max"] + 1e-12, name)
            self.assertAlmostEqual(t["sum"], t["mean"] * e["ranks"], places=9)
            # Histogram: four bins over [min, max], one count per rank.
            self.assertEqual(len(e["hist"]["bins"]), 4, name)
            self.assertEqual(sum(e["hist"]["bins"]), e["ranks"], name)
            self.assertEqual(e["hist"]["min"], t["min"])
            self.assertEqual(e["hist"]["max"], t["max"])
        self.assertEqual(ev["strata.monitor.dropped"]["calls"]["sum"], 0)

    def test_classes_split_even_and_odd_ranks(self):
        proc, out = self.monitored("monitor:filter=classes:class-events=mpi:bins=3",
                                   [program("monitor_app"), str(ITER)])
        self.assertCleanEnd(proc)
        final = final_round(read_rounds(out))
        classes = final["classes"]
        self.assertEqual(len(classes), 2, classes)
        members = sorted(tuple(c["rank_sample"]) for c in classes)
        self.assertEqual(members, [(0, 2), (1, 3)])
        for c in classes:
            self.assertEqual(c["ranks"], 2)
            senders = c["rank_sample"][0] % 2 == 0
            self.assertEqual("MPI_Send" in c["events"], senders)
            self.assertEqual("MPI_Recv" in c["events"], not senders)
            for name, e in c["events"].items():
                self.assertEqual(sum(e["hist"]["bins"]), 2, name)

    def test_fortran_world_is_the_application(self):
        plain = run([STRATA, "run", "-np", str(P), "--", program("ring_f90"), "5"])
        self.assertRan(plain)
        proc, out = self.monitored("monitor:filter=stats", [program("ring_f90"), "5"])
        self.assertCleanEnd(proc)
        self.assertIn(f"ranks={P} ", proc.stdout)
        self.assertEqual(proc.stdout.strip(), plain.stdout.strip())
        final = final_round(read_rounds(out))
        self.assertEqual(final["ranks"], P)
        self.assertEqual(final["events"]["MPI_Send"]["calls"]["sum"], P * 5)

    def test_threads_multiple(self):
        # MPI_THREAD_MULTIPLE: two threads per rank call MPI at once; rounds at every call.
        out = os.path.join(self.out, "rounds.jsonl")
        proc = strata_run("monitor:period=0.0001:filter=stats", [program("threads_c"), "300"],
                          ranks=2, env=base_env(STRATA_MONITOR_OUT=out))
        self.assertCleanEnd(proc)
        self.assertIn("threads: sum=90000", proc.stdout)
        final = final_round(read_rounds(out))
        self.assertEqual(final["ranks"], 2)
        self.assertEqual(final["events"]["MPI_Sendrecv"]["calls"]["sum"], 2 * 2 * 300)

    def test_tool_ranks_do_not_spin(self):
        # The application sleeps 50 ms per iteration (1 s in all): the front end, a tool rank,
        # probes with back-off and sleeps. A busy loop would use a whole CPU-second here.
        proc, out = self.monitored("monitor:filter=stats", [program("monitor_app"), "20", "sleep"])
        self.assertCleanEnd(proc)
        final = final_round(read_rounds(out))
        self.assertGreater(final["root_wall_s"], 0.9)
        self.assertLess(final["root_cpu_s"], 0.25 * final["root_wall_s"], final)

    def test_disabled_the_job_runs_alone_without_tool_ranks(self):
        # STRATA_DISABLE=1 wins over --tools: no tool rank is started beside the application.
        proc, out = self.monitored("monitor", [program("monitor_app"), str(ITER)],
                                   STRATA_DISABLE="1")
        self.assertRan(proc)
        self.assertEqual(re.search(r"monitor_app: .*", proc.stdout).group(0), self.baseline)
        self.assertNotIn("tool rank", proc.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_program_that_is_not_mpi_runs_as_often_as_asked(self):
        proc = strata_run("monitor", ["/bin/echo", "once"], ranks=2, extra=("--mpi", FLAVOR))
        self.assertRan(proc)
        self.assertEqual(proc.stdout.split(), ["once", "once"])
        self.assertIn("/bin/echo is not linked against an MPI library, so no tool rank", proc.stderr)
        # A Python program that never imports mpi4py (read, not run, to tell), likewise.
        script = os.path.join(self.out, "no_mpi.py")
        with open(script, "w") as f:
            f.write("import json\nprint('once')\n")
        python = "/usr/bin/python3"
        proc = strata_run("monitor", [python, script], ranks=2, extra=("--mpi", FLAVOR))
        self.assertRan(proc)
        # Twice, whole: MPICH may forward the two ranks' lines without the newline between.
        self.assertEqual(proc.stdout.count("once"), 2, proc.stdout)
        self.assertIn(f"'{python} {script}' does not import mpi4py, so no tool rank", proc.stderr)

    def test_abort_ends_the_job(self):
        # Tool ranks sleep in their loop; MPI_Abort on the application's world must take them
        # down too. The subprocess timeout is the bound.
        proc, _ = self.monitored("monitor", [program("monitor_app"), str(ITER), "abort"])
        self.assertNotEqual(proc.returncode, 0)
        self.assertNotIn("monitor_app: ranks", proc.stdout)

    def test_drop_policy_is_applied_and_counted(self):
        # A slow overlay (50 ms per packet), one buffer and a round at every MPI call.
        proc, out = self.monitored(
            "monitor:filter=stats:node-delay=0.05:period=0.000001:buffers=1:policy=drop",
            [program("monitor_app"), str(ITER), "spin"])
        self.assertCleanEnd(proc)
        rounds = read_rounds(out)
        final = final_round(rounds)
        dropped = final["events"]["strata.monitor.dropped"]["calls"]
        self.assertGreater(dropped["sum"], 0)
        self.assertEqual(final["ranks"], P)  # the final round is never dropped
        self.assertEqual(final["events"]["MPI_Allreduce"]["calls"]["sum"], P * ITER)

    def test_block_policy_waits_and_counts(self):
        proc, out = self.monitored(
            "monitor:filter=stats:node-delay=0.02:period=0.000001:buffers=1:policy=block",
            [program("monitor_app"), "6", "spin"])
        self.assertCleanEnd(proc)
        final = final_round(read_rounds(out))
        self.assertGreater(final["events"]["strata.monitor.blocked"]["calls"]["sum"], 0)
        self.assertEqual(final["events"]["strata.monitor.dropped"]["calls"]["sum"], 0)

    def test_next_to_the_profile_module(self):
        # Adjacent event modules share each call's clock pair: the profile's job record (over
        # the application's ranks only) and the monitor's final round agree to the nanosecond.
        spool = os.path.join(self.out, "spool")
        proc, out = self.monitored("monitor:filter=stats,profile",
                                   [program("monitor_app"), str(ITER)], STRATA_SPOOL=spool,
                                   HOME=self.out)
        self.assertCleanEnd(proc)
        records = [f for f in os.listdir(spool) if f.endswith(".json")]
        self.assertEqual(len(records), 1, os.listdir(spool))
        with open(os.path.join(spool, records[0])) as f:
            record = json.load(f)
        self.assertEqual(record["job"]["ranks"], P)
        # The monitor's offloads (its synchronous sends to the tool ranks and their tests) are
        # its own traffic: the profile below it sees only what the program called.
        self.assertEqual(sorted(record["routines"]),
                         ["MPI_Allreduce", "MPI_Barrier", "MPI_Comm_rank", "MPI_Comm_size",
                          "MPI_Init", "MPI_Recv", "MPI_Send"])
        final = final_round(read_rounds(out))
        for name in ("MPI_Send", "MPI_Recv", "MPI_Allreduce", "MPI_Barrier"):
            routine = record["routines"][name]
            ev = final["events"][name]
            self.assertEqual(ev["calls"]["sum"], routine["calls"], name)
            self.assertAlmostEqual(ev["time"]["sum"], routine["time_s"], places=6, msg=name)

    def test_in_any_place_of_the_stack(self):
        # The core places a module that takes ranks out of the application's world first,
        # whatever the order written: the profile then records only the application's ranks.
        for tools in ("profile,monitor:filter=stats", "profile,trace,monitor:filter=stats"):
            with self.subTest(tools=tools):
                spool = os.path.join(self.out, "spool-" + str(len(tools)))
                proc, out = self.monitored(tools, [program("monitor_app"), str(ITER)],
                                           STRATA_SPOOL=spool, STRATA_TRACE_DIR=self.out,
                                           HOME=self.out)
                self.assertCleanEnd(proc)
                records = [f for f in os.listdir(spool) if f.endswith(".json")]
                self.assertEqual(len(records), 1, os.listdir(spool))
                with open(os.path.join(spool, records[0])) as f:
                    self.assertEqual(json.load(f)["job"]["ranks"], P)
                self.assertEqual(final_round(read_rounds(out))["ranks"], P)


class MonitorSetup(StrataTestCase):
    def test_process_count_that_fits_no_tree(self):
        # 5 processes: no P has P + M(P, 2) = 5.
        proc = run(mpirun(5) + [STRATA, "exec", "--tools", "monitor:fanout=2", "--",
                                program("monitor_app"), "2"], timeout=120)
        self.assertNotEqual(proc.returncode, 0)
        lines = [l for l in proc.stderr.splitlines() if "strata: monitor: error:" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("transport=inline", lines[0])

    def test_bad_arguments_stop_before_the_program(self):
        for tools, fragment in (("monitor:policy=sometimes", "policy"),
                                ("monitor:filter=median", "unknown filter 'median'"),
                                ("monitor:bins=0", "bins"),
                                ("monitor:colour=red", "unknown option 'colour'"),
                                ("monitor:period=soon", "'soon' is not a duration"),
                                ("monitor:transport=pigeon", "is not one of tree,file,inline")):
            proc = strata_run(tools, [program("monitor_app"), "2"], ranks=2)
            self.assertOneErrorLine(proc, fragment)

    def test_options_from_the_environment_and_strata_modules(self):
        # STRATA_MONITOR_<KEY> sets what the argument does not; `strata modules monitor` lists
        # the options, their defaults and variables, and says the monitor is placed first.
        proc = strata_run("monitor", [program("monitor_app"), "2"], ranks=2,
                          env=base_env(STRATA_MONITOR_FILTER="median"))
        self.assertOneErrorLine(proc, "unknown filter 'median'")
        listing = run([STRATA, "modules", "monitor", "--mpi", FLAVOR])
        self.assertRan(listing)
        self.assertIn("fanout", listing.stdout)
        self.assertIn("STRATA_MONITOR_FANOUT", listing.stdout)
        self.assertIn("placed first", listing.stdout)

    def test_two_modules_that_take_ranks(self):
        proc = strata_run("monitor,halfworld", [program("monitor_app"), "2"], ranks=2)
        self.assertOneErrorLine(proc, "both take processes out of the application's world")

    def test_plan(self):
        proc = run([STRATA, "monitor", "plan", "-np", "64", "--fanout", "8"])
        self.assertRan(proc)
        self.assertIn("9 tool ranks, 73 processes", proc.stdout)


class MonitorWithoutToolRanks(StrataTestCase):
    def test_file_transport_and_its_front_end(self):
        rounds_dir = os.path.join(self.out, "rounds")
        out = os.path.join(self.out, "rounds.jsonl")
        proc = strata_run(f"monitor:transport=file:dir={rounds_dir}:filter=stats",
                          [program("monitor_app"), str(ITER)], ranks=P,
                          env=base_env(STRATA_MONITOR_OUT=out))
        self.assertRan(proc)
        self.assertEqual(sorted(os.listdir(rounds_dir)), [f"rank.{r}.rounds" for r in range(P)])
        at_finalize = final_round(read_rounds(out))
        self.assertEqual(at_finalize["events"]["MPI_Send"]["calls"]["sum"], P // 2 * ITER)
        # The front end, after the job: the same figures, and the raw profiles behind them.
        read = run([STRATA, "monitor", "read", rounds_dir, "--filter", "stats"])
        self.assertRan(read)
        again = final_round([json.loads(l) for l in read.stdout.splitlines()])
        # Equal up to the order of floating-point sums (the two reduce through other trees).
        self.assertEqual(again["events"].keys(), at_finalize["events"].keys())
        for name, e in again["events"].items():
            for metric in ("calls", "time", "bytes"):
                for stat, value in e[metric].items():
                    self.assertAlmostEqual(value, at_finalize["events"][name][metric][stat],
                                           delta=1e-9 * max(1.0, abs(value)), msg=name)
        raw = run([STRATA, "monitor", "read", rounds_dir, "--filter", "raw"])
        self.assertRan(raw)
        profiles = final_round([json.loads(l) for l in raw.stdout.splitlines()])["profiles"]
        self.assertEqual([p["rank"] for p in profiles], list(range(P)))
        time_sum = sum(p["events"]["MPI_Allreduce"]["time"] for p in profiles)
        self.assertAlmostEqual(time_sum, again["events"]["MPI_Allreduce"]["time"]["sum"], places=9)
        self.assertEqual(min(p["events"]["MPI_Allreduce"]["time"] for p in profiles),
                         again["events"]["MPI_Allreduce"]["time"]["min"])
        bad = run([STRATA, "monitor", "read", os.path.join(self.out, "nowhere")])
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("cannot open the monitor directory", bad.stderr)

    def test_inline_transport(self):
        out = os.path.join(self.out, "rounds.jsonl")
        proc = strata_run("monitor:transport=inline:filter=classes:class-events=mpi:policy=block",
                          [program("monitor_app"), str(ITER)], ranks=P,
                          env=base_env(STRATA_MONITOR_OUT=out))
        self.assertRan(proc)
        self.assertIn(f"ranks={P} ", proc.stdout)
        rounds = read_rounds(out)
        self.assertEqual(len(rounds), 7)
        final = final_round(rounds)
        self.assertEqual(sorted(tuple(c["rank_sample"]) for c in final["classes"]),
                         [(0, 2), (1, 3)])
        self.assertTrue(all(r["ranks"] == P for r in rounds))

    def test_inline_transport_periodic_rounds_in_flight(self):
        # A round every 0.5 ms: ranks offload different numbers of rounds, several in flight;
        # finalize pads the ranks that offloaded fewer, and the final round is exact.
        out = os.path.join(self.out, "rounds.jsonl")
        proc = strata_run("monitor:transport=inline:filter=stats:period=0.0005",
                          [program("monitor_app"), "40", "spin"], ranks=P,
                          env=base_env(STRATA_MONITOR_OUT=out), timeout=120)
        self.assertRan(proc)
        rounds = read_rounds(out)
        self.assertGreater(len(rounds), 10)
        final = final_round(rounds)
        self.assertEqual(final["ranks"], P)
        self.assertEqual(final["events"]["MPI_Allreduce"]["calls"]["sum"], P * 40)


class MonitorWebView(StrataTestCase):
    """The live view (src/monitor/web, uPlot bundled at build time) in real headless Chromium."""

    def dump_dom(self, url):
        proc = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                               "--virtual-time-budget=4000", "--dump-dom", url],
                              capture_output=True, text=True, timeout=90)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        return proc.stdout

    def test_view_shows_the_rounds_as_they_come(self):
        self.assertIsNotNone(shutil.which("chromium"), "chromium is part of scripts/setup.sh")
        full = os.path.join(self.out, "job.jsonl")
        proc = strata_run("monitor:bins=5:fanout=2:policy=block", [program("monitor_app"), str(ITER)],
                          ranks=P,
                          env=base_env(STRATA_MONITOR_OUT=full))
        self.assertRan(proc)
        with open(full) as f:
            lines = f.readlines()
        self.assertEqual(len(lines), 7)
        served = os.path.join(self.out, "live.jsonl")
        with open(served, "w") as f:
            f.writelines(lines[:3])
            f.write(lines[3][:40])  # a round still being written is not shown
        server = subprocess.Popen([STRATA, "monitor", "serve", served, "--port", "0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = re.search(r"serving (\S+)", server.stdout.readline()).group(1)
            dom = self.dump_dom(url)
            self.assertIn('data-rounds="3"', dom)
            self.assertIn('<option value="MPI_Send">', dom)
            self.assertIn('class="uplot', dom)  # the chart library drew
            self.assertIn('data-cells="15"', dom)  # 3 rounds x 5 bins of the chosen event
            with open(served, "w") as f:
                f.writelines(lines)
            dom = self.dump_dom(url)
            self.assertIn('data-rounds="7"', dom)
            self.assertIn("last: final (4 ranks, histogram", dom)
            self.assertIn('data-cells="35"', dom)
        finally:
            server.terminate()
            server.communicate(timeout=30)

    def test_missing_view_is_one_message(self):
        proc = run([STRATA, "monitor", "serve", "x.jsonl", "--web", self.out])
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no monitor view in", proc.stderr)


if __name__ == "__main__":
    unittest.main()


class ToolRanksOnAFullMachine(StrataTestCase):
    """The tool ranks must not change how the application's ranks wait: with one application
    rank per core and the tool ranks on top, Open MPI would make every process yield the core
    when idle (its rule for oversubscribed nodes); `strata run` keeps the application's ranks
    polling, has only the tool ranks yield, and says so. wait_mode prints what each application
    rank's MPI library uses and what every process of the job was started with."""

    def setUp(self):
        super().setUp()
        self.cores = os.cpu_count() or 1
        if self.cores > 8:
            self.skipTest(f"{self.cores} cores: the job that fills them is too large for a test")

    def waits(self, **env):
        proc = strata_run("monitor", [program("wait_mode")], ranks=self.cores,
                          env=base_env(STRATA_MONITOR_OUT=os.path.join(self.out, "r.jsonl"), **env))
        self.assertRan(proc)
        said = [l for l in proc.stderr.splitlines() if l.startswith("strata: run: ")]
        self.assertEqual(len(said), 1, proc.stderr)
        seen = dict(re.findall(r"rank (\d+) yield_when_idle=(\S+)", proc.stdout))
        started = dict(re.findall(r"process world_rank=(\d+) started_with_yield=(\S+)", proc.stdout))
        self.assertEqual(sorted(map(int, seen)), list(range(self.cores)))
        return said[0], seen, started

    def test_application_ranks_keep_polling_and_only_tool_ranks_yield(self):
        said, seen, started = self.waits()
        self.assertIn(f"{self.cores} application rank", said)
        self.assertIn("tool rank", said)
        if FLAVOR == "mpich":
            self.assertIn("MPICH's ranks wait as they would without Strata", said)
            self.assertEqual(set(seen.values()), {"none"})
            return
        self.assertIn("keep Open MPI's busy polling (OMPI_MCA_mpi_yield_when_idle=0)", said)
        self.assertEqual(set(seen.values()), {"0"})  # without the setting: 1, as oversubscribed
        tools = {r: y for r, y in started.items() if int(r) >= self.cores}
        apps = {r: y for r, y in started.items() if int(r) < self.cores}
        self.assertEqual(len(apps), self.cores, started)
        self.assertGreater(len(tools), 0, started)
        self.assertEqual(set(apps.values()), {"0"})
        self.assertEqual(set(tools.values()), {"1"})

    def test_a_setting_of_the_users_own_is_kept(self):
        if FLAVOR == "mpich":
            self.skipTest("Open MPI's setting")
        said, seen, started = self.waits(OMPI_MCA_mpi_yield_when_idle="1")
        self.assertIn("OMPI_MCA_mpi_yield_when_idle=1 left as set", said)
        self.assertEqual(set(seen.values()), {"1"})
        self.assertEqual(set(started.values()), {"1"})
