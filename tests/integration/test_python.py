"""Python (mpi4py) programs under real mpirun: their MPI found without --mpi, call sites that name
the script's own lines in records, reports, the overhead module, traces and the analyzer, the
strata package's regions as levels, and the package without Strata.

Open MPI only: Debian packages mpi4py for Open MPI only (python3-mpi4py's extension module is
linked against libmpi.so.40), so there is no mpi4py on MPICH to run here. The scripts are in
tests/programs/python; their MARK comments name the lines checked.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

from strata_testlib import (BUILD, FLAVOR, STRATA, StrataTestCase, base_env, mpirun, run,
                            strata_run)
from test_overhead import synthetic_model
from test_trace import calls, enclosing, read_events

SCRIPTS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "programs", "python"))
PACKAGE = os.path.join(BUILD, "lib", "strata", "python")
RANKS = 2


def python_with_mpi4py():
    """Debian's python3 (scripts/setup.sh installs python3-mpi4py for it), else this one."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('mpi4py.MPI') is None)"
    for candidate in (os.environ.get("STRATA_TEST_PYTHON"), "/usr/bin/python3", sys.executable):
        if candidate and subprocess.run([candidate, "-c", probe]).returncode == 0:
            return candidate
    return None


PYTHON = python_with_mpi4py()


def script(name):
    return os.path.join(SCRIPTS, name)


def marked(name, mark):
    with open(script(name)) as f:
        lines = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# MARK:{mark}")]
    if len(lines) != 1:
        raise AssertionError(f"MARK:{mark} in {name}: {lines}")
    return lines[0]


@unittest.skipUnless(FLAVOR == "openmpi", "Debian packages mpi4py for Open MPI only")
class PythonTestCase(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.assertIsNotNone(PYTHON, "no python3 with mpi4py (scripts/setup.sh installs "
                                     "python3-mpi4py)")
        self.spool = os.path.join(self.out, "spool")
        self.env = base_env(STRATA_SPOOL=self.spool, HOME=self.out)

    def record(self):
        files = glob.glob(os.path.join(self.spool, "*.json"))
        self.assertEqual(len(files), 1, files)
        with open(files[0]) as f:
            return json.load(f), files[0]

    def sites(self, rec, name):
        """Call sites of the record in script `name`, by line: {line: [entries]}."""
        by_line = {}
        for c in rec["callsites"]:
            if c["file"] == script(name):
                by_line.setdefault(c["line"], []).append(c)
        return by_line

    def strata_run(self, tools, args, env=None, ranks=RANKS, extra=(), timeout=180):
        try:
            return strata_run(tools, args, ranks=ranks, env=env or self.env, extra=extra,
                              timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(f"{' '.join(args)} did not end within {timeout} s")


class CallSites(PythonTestCase):
    def profiled(self, name, iterations):
        """`name` run under the call-site profile: its record, the record's path, its sites."""
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1")
        # No --mpi: the MPI is the one mpi4py's extension module is linked against.
        proc = self.strata_run("profile", [PYTHON, script(name), str(iterations)], env)
        self.assertRan(proc)
        self.assertIn(f"{name[:-3]}: done {iterations}", proc.stdout)
        rec, path = self.record()
        return rec, path, self.sites(rec, name)

    def test_records_and_reports_name_the_scripts_lines(self):
        iterations = 6
        rec, path, sites = self.profiled("exchange.py", iterations)
        self.assertEqual(rec["job"]["language"], "Python")
        every = iterations * RANKS
        half = iterations * RANKS // 2
        # (mark, MPI function or None for any, the Python function, calls summed over ranks)
        expected = [
            ("sendrecv", "MPI_Sendrecv", "Exchange.buffers", every),
            ("isend", "MPI_Isend", "Exchange.buffers", every),
            ("recv", "MPI_Recv", "Exchange.buffers", every),
            ("wait", "MPI_Wait", "Exchange.buffers", every),
            ("send_object", "MPI_Send", "Exchange.objects", half),
            ("send_object_odd", "MPI_Send", "Exchange.objects", half),
            ("recv_object", None, "Exchange.objects", None),
            ("recv_object_odd", None, "Exchange.objects", None),
            ("bcast", "MPI_Bcast", "collectives", every),
            ("allreduce", "MPI_Allreduce", "collectives", every),
            ("allreduce_object", None, "collectives", None),
            ("gather_object", None, "collectives", None),
            ("barrier", "MPI_Barrier", "collectives", every),
            ("get_rank", "MPI_Comm_rank", "<module>", RANKS),
        ]
        for mark, function, caller, count in expected:
            line = marked("exchange.py", mark)
            self.assertIn(line, sites, f"no call site at exchange.py:{line} ({mark}): {sites}")
            entries = [c for c in sites[line] if function is None or c["function"] == function]
            self.assertTrue(entries, f"{function} at {line}: {sites[line]}")
            for c in entries:
                self.assertEqual(c["caller"], caller, c)
                self.assertLessEqual(c["ranks"], RANKS, c)
            if count is not None:
                self.assertEqual(sum(c["calls"] for c in entries), count, entries)
        # What the script calls itself is never left at an address in mpi4py's module.
        direct = {"MPI_Sendrecv", "MPI_Isend", "MPI_Recv", "MPI_Wait", "MPI_Send", "MPI_Bcast",
                  "MPI_Allreduce", "MPI_Barrier"}
        stray = [c for c in rec["callsites"] if c["function"] in direct
                 and c["file"] != script("exchange.py")]
        self.assertEqual(stray, [])
        report = run([STRATA, "report", path])
        self.assertRan(report)
        self.assertIn(f"exchange.py:{marked('exchange.py', 'sendrecv')}", report.stdout)
        self.assertIn("Exchange.buffers", report.stdout)

    def test_two_threads_with_and_without_the_gil(self):
        iterations = 200
        _, _, sites = self.profiled("threads.py", iterations)
        first = [c for c in sites.get(marked("threads.py", "first"), [])
                 if c["function"] == "MPI_Sendrecv"]
        self.assertEqual([(c["caller"], c["calls"], c["ranks"]) for c in first],
                         [("first", iterations * RANKS, RANKS)], sites)
        second = sites.get(marked("threads.py", "second"), [])
        self.assertTrue(second and all(c["caller"] == "second" for c in second), sites)
        self.assertGreaterEqual(max(c["calls"] for c in second), iterations * RANKS)
        main = [c for c in sites.get(marked("threads.py", "main_thread"), [])
                if c["function"] == "MPI_Comm_rank"]
        self.assertEqual([(c["caller"], c["calls"]) for c in main],
                         [("<module>", iterations * RANKS)], sites)

    def test_mpi4py_futures(self):
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1")
        proc = self.strata_run("profile", [PYTHON, "-m", "mpi4py.futures", script("futures_pool.py")],
                               env, ranks=3)
        self.assertRan(proc)
        self.assertIn(f"futures: squares {sum(x * x for x in range(200))}", proc.stdout)
        rec, _ = self.record()
        # The pool's MPI calls are made by mpi4py.futures' own Python code, on every rank.
        pool = [c for c in rec["callsites"] if c["file"].endswith("mpi4py/futures/_lib.py")]
        self.assertTrue(pool, rec["callsites"])
        self.assertTrue(all(c["line"] > 0 and c["caller"] for c in pool), pool)
        self.assertTrue(all(c["ranks"] <= 3 for c in rec["callsites"]), rec["callsites"])

    def test_overhead_charges_the_late_barrier_to_its_line(self):
        iterations, late_ms = 6, 40
        model = os.path.join(self.out, "model.json")
        with open(model, "w") as f:
            json.dump(synthetic_model(200e-6), f)
        env = dict(self.env, STRATA_MODEL=model)
        proc = self.strata_run("overhead", [PYTHON, script("exchange.py"), str(iterations),
                                            str(late_ms)], env)
        self.assertRan(proc)
        rec, _ = self.record()
        barrier = [c for c in self.sites(rec, "exchange.py").get(marked("exchange.py", "barrier"), [])
                   if c["function"] == "MPI_Barrier"]
        self.assertEqual(len(barrier), 1, rec["callsites"][:5])
        # Rank 0 waits for the late rank at every barrier but the first ones' noise.
        self.assertGreater(barrier[0]["wasted_s"], iterations * late_ms / 1000 / 2, barrier)
        self.assertEqual(barrier[0]["caller"], "collectives")

    def test_python_sites_off_keep_the_modules_address(self):
        env = dict(self.env, STRATA_PROFILE_CALLSITES="1", STRATA_PYTHON_SITES="0")
        self.assertRan(self.strata_run("profile", [PYTHON, script("exchange.py"), "2"], env))
        rec, _ = self.record()
        sendrecv = [c for c in rec["callsites"] if c["function"] == "MPI_Sendrecv"]
        self.assertTrue(sendrecv)
        self.assertTrue(all(".so+0x" in c["file"] and "mpi4py" in c["file"] for c in sendrecv),
                        sendrecv)


# levels.py run with the strata package's ctypes entry points, as where the core cannot reach
# the interpreter's C API to make its built-ins.
THROUGH_CTYPES = ("import runpy, sys, strata\n"
                  "def refuse(*args): raise ValueError('no built-ins')\n"
                  "strata._calls = refuse\n"
                  "sys.argv = sys.argv[1:]\n"
                  "runpy.run_path(sys.argv[0], run_name='__main__')\n")


class TraceAndAnalyzer(PythonTestCase):
    def test_levels_and_call_sites(self):
        self.check_levels([])

    def test_levels_and_call_sites_through_ctypes(self):
        self.check_levels(["-c", THROUGH_CTYPES])

    def check_levels(self, launcher):
        steps = 4
        trace = os.path.join(self.out, "trace")
        env = base_env(STRATA_TRACE_DIR=trace)
        # No PYTHONPATH: strata exec puts the strata package on it for Python programs.
        proc = self.strata_run("trace", [PYTHON, *launcher, script("levels.py"), str(steps)], env)
        self.assertRan(proc)
        self.assertIn("levels: done, strata loaded: True", proc.stdout)
        anchor = os.path.join(trace, "traces.otf2")
        events = read_events(anchor)
        for rank in range(RANKS):
            ev = events[rank]
            here = lambda mark: ("levels.py", marked("levels.py", mark))  # noqa: E731
            init = calls(ev, "MPI_Init_thread")
            # Under `from mpi4py import MPI` the frames of importlib stand for the import line.
            self.assertEqual([e.call_site for e in init], [here("import")])
            self.assertEqual([e.call_site for e in calls(ev, "solver")], [here("solver")])
            self.assertEqual([e.call_site for e in calls(ev, "step")], [here("step")] * steps)
            self.assertEqual([e.call_site for e in calls(ev, "halo")], [here("halo_call")] * steps)
            sendrecv = calls(ev, "MPI_Sendrecv")
            self.assertEqual([e.call_site for e in sendrecv], [here("halo_mpi")] * steps)
            for e in sendrecv:
                self.assertEqual(enclosing(ev, ev.index(e)), ["solver", "step", "halo"])
            allreduce = calls(ev, "MPI_Allreduce")
            self.assertEqual([e.call_site for e in allreduce], [here("allreduce")] * steps)
            for e in allreduce:
                self.assertEqual(enclosing(ev, ev.index(e)), ["solver", "step"])
        analysis = run([STRATA, "analyze", "--json", trace])
        self.assertRan(analysis)
        report = json.loads(analysis.stdout)
        levels = {(l["rank"], l["level"]): l["count"] for l in report["levels"]}
        for rank in range(RANKS):
            self.assertEqual(levels.get((rank, 1)), steps, report["levels"])  # the steps only
            self.assertGreaterEqual(levels.get((rank, 3), 0), steps, report["levels"])
            rows = {(o["category"], o["operation"], o["line"]): o["count"]
                    for o in report["operations"] if o["rank"] == rank
                    and o["file"] == script("levels.py")}
            self.assertEqual(rows.get(("user", "solver", marked("levels.py", "solver"))), 1, rows)
            self.assertEqual(rows.get(("user", "step", marked("levels.py", "step"))), steps, rows)
            self.assertEqual(rows.get(("user", "halo", marked("levels.py", "halo_call"))), steps)
            self.assertEqual(rows.get(("mpi", "MPI_Sendrecv", marked("levels.py", "halo_mpi"))),
                             steps, rows)
        text = run([STRATA, "analyze", trace])
        self.assertRan(text)
        self.assertRegex(text.stdout, rf"user\s+halo\s+\S*levels.py\s+{marked('levels.py', 'halo_call')}")


class Package(PythonTestCase):
    def test_without_strata_the_annotations_do_nothing(self):
        code = ("import strata\n"
                "def f(): return 7\n"
                "assert not strata.loaded\n"
                "assert strata.function(f) is f\n"
                "assert strata.region('a') is strata.region('b')\n"
                "with strata.region('a') as r:\n"
                "    assert r is None\n"
                "assert strata.monitor_dump() is None\n"
                "print('no-op', f())\n")
        env = base_env(PYTHONPATH=PACKAGE)
        proc = run([PYTHON, "-c", code], env=env)
        self.assertRan(proc)
        self.assertEqual(proc.stdout.strip(), "no-op 7")
        # The annotated program under plain mpirun, without Strata.
        proc = run(mpirun(RANKS) + ["-x", "PYTHONPATH", PYTHON, script("levels.py"), "2"], env=env)
        self.assertRan(proc)
        self.assertIn("levels: done, strata loaded: False", proc.stdout)

    def test_with_strata_and_no_module_for_regions(self):
        proc = self.strata_run("profile", [PYTHON, script("levels.py"), "2"])
        self.assertRan(proc)
        self.assertIn("levels: done, strata loaded: True", proc.stdout)

    def test_with_strata_the_annotations_are_builtins_and_keep_what_they_wrap(self):
        code = ("import types, strata\n"
                "from mpi4py import MPI\n"
                "class Solver:\n"
                "    @strata.function\n"
                "    def step(self, x, scale=1):\n"
                "        'One step.'\n"
                "        return x * scale\n"
                "region = strata.region('solver')\n"
                "assert strata.region('solver') is region\n"
                "assert isinstance(type(region).__enter__, types.BuiltinFunctionType)\n"
                "assert Solver.step.__name__ == 'step' and Solver.step.__doc__ == 'One step.'\n"
                "try:\n"
                "    with region as bound:\n"
                "        assert bound is None\n"
                "        assert Solver().step(3, scale=2) == 6\n"
                "        raise KeyError('kept')\n"
                "except KeyError as e:\n"
                "    print('raised', e)\n")
        proc = self.strata_run("profile", [PYTHON, "-c", code], ranks=1)
        self.assertRan(proc)
        self.assertIn("raised 'kept'", proc.stdout)


class Launch(PythonTestCase):
    def test_exec_under_mpirun_needs_no_mpi_option(self):
        proc = run(mpirun(RANKS) + [STRATA, "exec", "--tools", "profile", "--", PYTHON,
                                    script("exchange.py"), "2"], env=self.env, timeout=180)
        self.assertRan(proc)
        self.assertIn("exchange: done 2", proc.stdout)
        rec, _ = self.record()
        self.assertEqual(rec["job"]["ranks"], RANKS)

    def test_a_script_run_directly(self):
        bindir = os.path.join(self.out, "bin")
        os.mkdir(bindir)
        os.symlink(PYTHON, os.path.join(bindir, "python3"))
        app = os.path.join(self.out, "app.py")
        shutil.copy(script("exchange.py"), app)
        with open(app) as f:
            text = f.read()
        with open(app, "w") as f:
            f.write("#!/usr/bin/env python3\n" + text)
        os.chmod(app, 0o755)
        env = dict(self.env, PATH=bindir + ":" + os.environ["PATH"])
        proc = self.strata_run("profile", [app, "2"], env)
        self.assertRan(proc)
        self.assertIn("exchange: done 2", proc.stdout)

    def test_a_python_without_mpi4py_gets_one_line(self):
        fake = os.path.join(self.out, "fake", "mpi4py")
        os.makedirs(fake)
        with open(os.path.join(fake, "__init__.py"), "w") as f:
            f.write("raise ImportError('not here')\n")
        env = dict(self.env, PYTHONPATH=os.path.dirname(fake))
        proc = self.strata_run("profile", [PYTHON, script("exchange.py"), "2"], env)
        self.assertOneErrorLine(proc, f"{PYTHON} (Python): cannot import mpi4py; say which MPI it "
                                      "uses with --mpi openmpi|mpich")
        self.assertNotIn("exchange:", proc.stdout)


if __name__ == "__main__":
    unittest.main()
