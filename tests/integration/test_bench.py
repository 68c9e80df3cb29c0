"""strata bench: the machine-model benchmark (issue 6; Kluge, Knuepfer and Nagel, sections 4-8)."""
import json
import os
import signal
import subprocess
import time
import unittest

from strata_testlib import FLAVOR, STRATA, StrataTestCase, base_env, run

SIZES = [1] + list(range(10, 101, 10))
POINT_KEYS = {"p", "b", "n", "min_s", "mean_s", "median_s", "max_s", "model", "parameter",
              "window_s", "chi2", "dof", "p_value", "accepted", "t_max_s"}


def bench(*args):
    return [STRATA, "bench", "--mpi", FLAVOR, "-np", "2"] + list(args)


class Model(StrataTestCase):
    def test_fast_model(self):
        out = os.path.join(self.out, "model.json")
        proc = run(bench("--samples", "30", "--max-bytes", "100", "--ops", "MPI_Send,MPI_Allreduce",
                         "-o", out))
        self.assertRan(proc)
        with open(out) as f:
            model = json.load(f)
        self.assertEqual(model["schema"], "strata.model/1")
        self.assertIs(model["partial"], False)
        self.assertEqual(model["quantile"], 0.95)
        self.assertEqual(model["machine"]["ranks"], 2)
        self.assertGreater(model["machine"]["timer_resolution_s"], 0)
        self.assertEqual(set(model["operations"]), {"MPI_Send", "MPI_Allreduce"})
        for name, op in model["operations"].items():
            points = op["points"]
            self.assertEqual([(p["p"], p["b"]) for p in points], [(2, b) for b in SIZES], name)
            for p in points:
                self.assertEqual(set(p), POINT_KEYS)
                self.assertEqual(p["n"], 30)
                self.assertLessEqual(p["min_s"], p["median_s"])
                self.assertLessEqual(p["median_s"], p["max_s"])
                self.assertGreaterEqual(p["t_max_s"], p["min_s"])
                self.assertIn(p["model"], ("poisson", "exponential", "none"))
                self.assertIsInstance(p["accepted"], bool)
                self.assertGreater(p["min_s"], 0)
                self.assertLess(p["min_s"], 1, "a call on one machine takes far below a second")
            routine = model["routines"][name]
            self.assertGreaterEqual(routine["latency_s"], 0)
            self.assertGreater(routine["bytes_per_s"], 0)

    def test_window_reaches_the_fit(self):
        out = os.path.join(self.out, "window.json")
        proc = run(bench("--samples", "20", "--max-bytes", "10", "--ops", "MPI_Barrier",
                         "--window-s", "2.5e-7", "-o", out))
        self.assertRan(proc)
        with open(out) as f:
            model = json.load(f)
        points = [p for op in model["operations"].values() for p in op["points"]]
        self.assertTrue(points)
        for p in points:
            self.assertAlmostEqual(p["window_s"], 2.5e-7, delta=1e-12)

    def test_study_prints_table(self):
        out = os.path.join(self.out, "study.json")
        proc = run(bench("--study", "MPI_Allreduce", "--max-bytes", "1000", "-o", out))
        self.assertRan(proc)
        self.assertIn("t_max_s", proc.stdout)
        rows = [l.split() for l in proc.stdout.splitlines() if l.split() and l.split()[0].isdigit()]
        self.assertEqual([int(r[0]) for r in rows][:6], [10, 20, 50, 100, 200, 500])
        with open(out) as f:
            study = json.load(f)
        self.assertEqual(study["operation"], "MPI_Allreduce")
        self.assertEqual(len(study["rows"]), len(rows))
        for row in study["rows"]:
            self.assertGreaterEqual(row["t_max_s"], row["min_s"])

    def test_bad_arguments(self):
        for args, fragment in [(["--samples", "5"], "--samples"),
                               (["--quantile", "1"], "--quantile"),
                               (["--quantile", "0"], "--quantile"),
                               (["--max-bytes", "0"], "--max-bytes"),
                               (["--window-s", "-1"], "--window-s"),
                               (["--ops", "MPI_Send,MPI_Nothing"], "MPI_Nothing"),
                               (["--study", "MPI_Nothing"], "MPI_Nothing")]:
            with self.subTest(args=args):
                out = os.path.join(self.out, "never.json")
                proc = run(bench(*args, "-o", out), timeout=30)
                self.assertOneErrorLine(proc, fragment)
                self.assertFalse(os.path.exists(out), "nothing may start")

    def test_interrupt_leaves_partial_model(self):
        out = os.path.join(self.out, "partial.json")
        # Far more work than a second; the process group is what a Ctrl-C on a terminal reaches.
        proc = subprocess.Popen(bench("--samples", "5000", "-o", out), env=base_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            first = proc.stderr.readline()  # the header: the ranks are up and measuring
            self.assertIn("strata-bench", first)
            # Past the first checkpoint (every 2 s): a launcher that kills the ranks before they
            # reach the next point (Open MPI's can, on a loaded machine) still leaves a model.
            time.sleep(3)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.assertNotEqual(proc.returncode, 0, err)
        with open(out) as f:
            model = json.load(f)
        self.assertIs(model["partial"], True)
        self.assertEqual(model["schema"], "strata.model/1")
        points = sum(len(op["points"]) for op in model["operations"].values())
        self.assertLess(points, 562, "the run stopped early")
        self.assertFalse([n for n in os.listdir(self.out) if ".tmp." in n], "no temporary left")


if __name__ == "__main__":
    unittest.main()
