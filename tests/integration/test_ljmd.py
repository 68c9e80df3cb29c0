"""The Lennard-Jones force-decomposition example (examples/ljmd, from the HieraAnalyses paper): the plain-MPI and the
object-oriented versions agree, conserve energy, give the same result under Strata, and refuse a
non-square number of ranks."""
import glob
import json
import os
import subprocess
import unittest

from strata_testlib import (BUILD, FLAVOR, STRATA, StrataTestCase, base_env, mpirun, run,
                            strata_run)

EXAMPLES = os.path.join(BUILD, "examples", FLAVOR)
VERSIONS = ("ljmd_mpi", "ljmd_oo")
# Small enough for 4 ranks on 2 shared cores: 256 atoms, a few dozen steps.
CELLS, STEPS, EVERY = "4", "40", "10"


def example(version):
    return os.path.join(EXAMPLES, version)


def parse(stdout):
    """{step: (total, kinetic, potential)} per atom, and the checksum."""
    energies, checksum = {}, None
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].isdigit():
            energies[int(parts[0])] = tuple(float(x) for x in parts[1:])
        elif parts and parts[0] == "checksum":
            checksum = float(parts[1])
    return energies, checksum


def result_lines(stdout):
    """The output without the timing line (the only line that may differ between runs)."""
    return [l for l in stdout.splitlines() if not l.startswith("time ")]


class LJMD(StrataTestCase):
    def ljmd(self, version, ranks, args=(CELLS, STEPS, EVERY), env=None):
        proc = run(mpirun(ranks) + [example(version)] + list(args), env=env, timeout=180)
        self.assertRan(proc)
        energies, checksum = parse(proc.stdout)
        self.assertIsNotNone(checksum, proc.stdout)
        return proc, energies, checksum

    def assertSameRun(self, reference, other, what):
        (ref_e, ref_sum), (e, checksum) = reference, other
        self.assertEqual(sorted(e), sorted(ref_e), what)
        for step in ref_e:
            for a, b in zip(ref_e[step], e[step]):
                self.assertAlmostEqual(a, b, delta=1e-9, msg=f"{what}, step {step}")
        self.assertAlmostEqual(ref_sum, checksum, delta=1e-8 * max(1.0, abs(ref_sum)), msg=what)

    def test_versions_agree_on_1_4_and_9_ranks(self):
        _, *reference = self.ljmd("ljmd_mpi", 1)
        self.assertEqual(sorted(reference[0]), [0, 10, 20, 30, 40])
        for ranks in (1, 4):
            for version in VERSIONS:
                with self.subTest(version=version, ranks=ranks):
                    _, *other = self.ljmd(version, ranks)
                    self.assertSameRun(reference, other, f"{version} on {ranks} ranks")
        # 9 ranks on a 3 x 3 grid: uneven pieces (108 atoms over 9), fewer steps.
        short = ("3", "10", "5")
        _, *reference = self.ljmd("ljmd_mpi", 1, short)
        for version in VERSIONS:
            with self.subTest(version=version, ranks=9):
                _, *other = self.ljmd(version, 9, short)
                self.assertSameRun(reference, other, f"{version} on 9 ranks")

    def test_energy_is_conserved_while_the_lattice_melts(self):
        for version, ranks, steps in (("ljmd_mpi", 1, "400"), ("ljmd_oo", 4, STEPS)):
            with self.subTest(version=version, ranks=ranks):
                _, energies, _ = self.ljmd(version, ranks, (CELLS, steps, EVERY))
                total0, kinetic0, _ = energies[0]
                last = max(energies)
                # Something happens: the FCC start gives up about half its kinetic energy...
                self.assertLess(energies[last][1], 0.8 * kinetic0, energies)
                # ...while the total stays put (velocity Verlet, dt 0.005, shifted potential).
                for step, (total, _, _) in energies.items():
                    self.assertLess(abs(total - total0), 2e-4 * abs(total0), f"step {step}")

    def test_same_result_under_the_profiler(self):
        spool = os.path.join(self.out, "spool")
        env = base_env(STRATA_SPOOL=spool, HOME=self.out)
        steps = int(STEPS)
        for version in VERSIONS:
            with self.subTest(version=version):
                for f in glob.glob(os.path.join(spool, "*.json")):
                    os.remove(f)
                plain, _, _ = self.ljmd(version, 4)
                profiled = strata_run("profile", [example(version), CELLS, STEPS, EVERY], ranks=4,
                                      env=env, timeout=180)
                self.assertRan(profiled)
                self.assertEqual(result_lines(plain.stdout), result_lines(profiled.stdout))
                records = glob.glob(os.path.join(spool, "*.json"))
                self.assertEqual(len(records), 1, records)
                with open(records[0]) as f:
                    routines = json.load(f)["routines"]
                # The force decomposition's messages, counted by the profiler: per force
                # evaluation (steps + 1) on a 2 x 2 grid, the two off-diagonal ranks exchange
                # positions and forces with their transpose partner...
                evaluations = steps + 1
                if version == "ljmd_mpi":
                    self.assertEqual(routines["MPI_Sendrecv"]["calls"], evaluations * 2 * 2)
                    self.assertEqual(routines["MPI_Allgatherv"]["calls"], evaluations * 2 * 4)
                    self.assertEqual(routines["MPI_Reduce_scatter"]["calls"], evaluations * 2 * 4)
                else:
                    # ...and the layer's expand and fold are rings of Sendrecv: one step each
                    # for the row and the column, on all four ranks.
                    self.assertEqual(routines["MPI_Sendrecv"]["calls"],
                                     evaluations * (2 * 2 + 4 * 4))
                    self.assertNotIn("MPI_Allgatherv", routines)

    def test_non_square_rank_count_is_refused(self):
        for version in VERSIONS:
            with self.subTest(version=version):
                proc = run(mpirun(2) + [example(version)], timeout=120)
                self.assertNotEqual(proc.returncode, 0)
                lines = [l for l in proc.stderr.splitlines() if l.startswith("ljmd: error:")]
                self.assertEqual(lines, ["ljmd: error: force decomposition needs a square number "
                                         "of ranks (a q x q grid), got 2"])
                self.assertNotIn("step", proc.stdout)

    def test_bad_arguments_are_named(self):
        for args, message in ((["2"], "CELLS must be at least 3"),
                              (["4", "ten"], "STEPS must be a positive integer, got 'ten'"),
                              (["4", "10", "0"], "PRINT_EVERY must be a positive integer")):
            with self.subTest(args=args):
                proc = run(mpirun(1) + [example("ljmd_oo")] + args, timeout=120)
                self.assertNotEqual(proc.returncode, 0)
                lines = [l for l in proc.stderr.splitlines() if l.startswith("ljmd: error:")]
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertIn(message, lines[0])

    def test_runs_without_strata(self):
        # The annotations are weak references: the programs need no Strata library to load.
        for version in VERSIONS:
            needed = subprocess.run(["readelf", "-d", example(version)], capture_output=True,
                                    text=True, check=True).stdout
            self.assertNotIn("strata", needed)
            symbols = subprocess.run(["nm", "-D", example(version)], capture_output=True,
                                     text=True, check=True).stdout
            weak = [l for l in symbols.splitlines() if "strata_annotate_region_begin" in l]
            if version == "ljmd_oo":
                self.assertEqual(len(weak), 1, symbols)
                self.assertEqual(weak[0].split()[0], "w")


def region_stacks(archive):
    """Reads an OTF2 archive with otf2-print (the OTF2 library's own reader): for each location,
    the list of (stack of region names) at every ENTER, outermost first."""
    text = subprocess.run(["otf2-print", archive], capture_output=True, text=True, check=True,
                          timeout=120).stdout
    stacks, entered = {}, {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[0] not in ("ENTER", "LEAVE"):
            continue
        location, rest = int(parts[1]), parts[3]
        name = rest[rest.index('"') + 1:rest.rindex('"')]
        stack = stacks.setdefault(location, [])
        if parts[0] == "ENTER":
            stack.append(name)
            entered.setdefault(location, []).append(tuple(stack))
        else:
            assert stack and stack[-1] == name, (location, stack, name)
            stack.pop()
    return entered


class LJMDTrace(StrataTestCase):
    """Under the trace module the layer's levels are in the OTF2 archive, nested as written."""

    def traced(self, version, steps):
        archive_dir = os.path.join(self.out, version)
        env = base_env(STRATA_TRACE_DIR=archive_dir, HOME=self.out)
        args = [example(version), CELLS, str(steps), str(steps)]
        proc = strata_run("trace", args, ranks=4, env=env, timeout=180)
        self.assertRan(proc)
        plain = run(mpirun(4) + args, timeout=180)
        self.assertRan(plain)
        self.assertEqual(result_lines(plain.stdout), result_lines(proc.stdout))
        return region_stacks(os.path.join(archive_dir, "traces.otf2"))

    def test_layer_levels_nest_in_the_trace(self):
        steps = 5
        entered = self.traced("ljmd_oo", steps)
        self.assertEqual(sorted(entered), [0, 1, 2, 3])
        short = lambda s: s.split("(")[0].split()[-1]  # "void par::Group::fold(...) const" -> par::Group::fold
        for location, stacks in entered.items():
            paths = {tuple(short(n) for n in s) for s in stacks}
            forces = [s for s in stacks if s[-1] == "md::forces"]
            self.assertEqual(len(forces), steps + 1, location)
            # application -> vector -> group -> MPI
            self.assertIn(("md::forces", "par::DistVector::expand_row", "par::Group::expand",
                           "MPI_Sendrecv"), paths)
            self.assertIn(("md::forces", "par::DistVector::fold_col_add", "par::Group::fold",
                           "MPI_Sendrecv"), paths)
            transpose = ("md::forces", "par::DistVector::expand_col",
                         "par::GridTopology::transpose", "par::Group::exchange", "MPI_Sendrecv")
            # Rank (r, c) is location r*2 + c; the diagonal ranks copy instead of sending.
            self.assertEqual(transpose in paths, location in (1, 2), location)
            self.assertIn(("md::energies", "par::Group::sum_to", "MPI_Reduce"), paths)

    def test_plain_mpi_version_has_one_level(self):
        entered = self.traced("ljmd_mpi", 5)
        for location, stacks in entered.items():
            self.assertEqual({len(s) for s in stacks}, {1}, location)
            names = [s[0] for s in stacks]
            self.assertEqual(names.count("MPI_Allgatherv"), 2 * 6, location)
            self.assertEqual(names.count("MPI_Reduce_scatter"), 2 * 6, location)


def source_line(name, marker):
    """The line of examples/ljmd/NAME that holds MARKER (call sites are checked against it)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ljmd", name)
    with open(path) as f:
        return next(i + 1 for i, l in enumerate(f) if marker in l)


def has_analyzer():
    """Whether `strata --help` lists the analyze subcommand."""
    listing = run([STRATA, "--help"], timeout=60).stdout
    return any(line.split()[:1] == ["analyze"] for line in listing.splitlines())


@unittest.skipUnless(has_analyzer(), "strata analyze is not in this build")
class LJMDAnalyze(StrataTestCase):
    """The paper's tables from a real trace of the example: `strata analyze --json` counts what the
    force decomposition does, per level, per operation and per call site."""

    STEPS = 6

    def analyze(self, version):
        archive_dir = os.path.join(self.out, version)
        env = base_env(STRATA_TRACE_DIR=archive_dir, HOME=self.out)
        proc = strata_run("trace", [example(version), CELLS, str(self.STEPS), str(self.STEPS)],
                          ranks=4, env=env, timeout=180)
        self.assertRan(proc)
        proc = run([STRATA, "analyze", "--json", archive_dir], timeout=180)
        self.assertRan(proc)
        result = json.loads(proc.stdout)
        self.assertEqual((result["unmatched_sends"], result["unmatched_receives"]), (0, 0))
        totals = {(t["category"], t["operation"]): t["count"] for t in result["totals"]}
        return result, totals

    def test_plain_mpi_tables(self):
        result, totals = self.analyze("ljmd_mpi")
        evaluations = self.STEPS + 1
        self.assertEqual({l["level"] for l in result["levels"]}, {0})  # Table 1
        self.assertEqual(totals[("mpi", "MPI_Allgatherv")], evaluations * 2 * 4)  # Table 3
        self.assertEqual(totals[("mpi", "MPI_Reduce_scatter")], evaluations * 2 * 4)
        self.assertEqual(totals[("mpi", "MPI_Sendrecv")], evaluations * 2 * 2)
        # Table 2: the row expand at its own line, once per force evaluation on every rank.
        row_expand = source_line("ljmd_mpi.cpp", "MPI_Allgatherv(s.x.data()")
        sites = [o for o in result["operations"] if o["operation"] == "MPI_Allgatherv"
                 and o["line"] == row_expand and o["file"].endswith("ljmd_mpi.cpp")]
        self.assertEqual(sorted(o["rank"] for o in sites), [0, 1, 2, 3])
        self.assertEqual({o["count"] for o in sites}, {evaluations})

    def test_layer_tables(self):
        result, totals = self.analyze("ljmd_oo")
        evaluations = self.STEPS + 1
        levels = {(l["rank"], l["level"]): l["count"] for l in result["levels"]}
        # Table 6: level 4 (the MPI_Sendrecv inside transpose -> exchange) off the diagonal only.
        self.assertEqual([levels.get((rank, 4), 0) for rank in range(4)],
                         [0, 2 * evaluations, 2 * evaluations, 0])
        self.assertEqual(totals[("user", "md::forces")], 4 * evaluations)  # Table 8
        self.assertEqual(totals[("mpi", "MPI_Sendrecv")], evaluations * (4 * 4 + 2 * 2))
        self.assertNotIn(("mpi", "MPI_Allgatherv"), totals)
        # Table 7: the ring's Sendrecv at its line in group.cpp.
        ring = source_line("par/group.cpp", "MPI_Sendrecv(send, send_count, MPI_DOUBLE, next")
        sites = [o for o in result["operations"] if o["operation"] == "MPI_Sendrecv"
                 and o["line"] == ring and o["file"].endswith("group.cpp")]
        self.assertEqual({o["count"] for o in sites}, {4 * evaluations})
