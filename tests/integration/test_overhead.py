"""The overhead module (after Kluge, Knuepfer and Nagel, "Statistical Methods for Automatic
Performance Bottleneck Detection in MPI Based Programs"): time over the machine model's T_f(p, b),
per call site."""
import glob
import json
import os

from strata_testlib import (STRATA, StrataTestCase, base_env, program, run, strata_run)


def synthetic_model(t_max_s):
    """A model whose T_f is t_max_s everywhere: any wait longer than that is waste."""
    def point(p, b):
        return {"p": p, "b": b, "n": 200, "min_s": t_max_s / 4, "mean_s": t_max_s / 3,
                "median_s": t_max_s / 3, "max_s": t_max_s * 2, "model": "poisson",
                "parameter": 1.5, "window_s": 1e-7, "chi2": 3.0, "dof": 3, "p_value": 0.4,
                "accepted": True, "t_max_s": t_max_s}
    points = [point(p, b) for p in (2, 4) for b in (1, 100, 10000)]
    return {"schema": "strata.model/1",
            "machine": {"host": "test", "mpi": "test", "ranks": 4, "created": "2026-11-22T00:00:00Z",
                        "timer_resolution_s": 1e-9},
            "routines": {op: {"latency_s": 1e-6, "bytes_per_s": 1e9}
                         for op in ("MPI_Send", "MPI_Barrier")},
            "operations": {op: {"points": points} for op in ("MPI_Send", "MPI_Barrier")},
            "quantile": 0.95, "partial": False}


class Overhead(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")
        self.model = os.path.join(self.out, "model.json")
        with open(self.model, "w") as f:
            json.dump(synthetic_model(200e-6), f)
        self.env = base_env(STRATA_SPOOL=self.spool, STRATA_MODEL=self.model, HOME=self.out)

    def record(self):
        files = glob.glob(os.path.join(self.spool, "*.json"))
        self.assertEqual(len(files), 1)
        with open(files[0]) as f:
            return json.load(f), files[0]

    def test_injected_delay_is_charged_to_its_call_site(self):
        iterations, delay_ms = 20, 50
        proc = strata_run("overhead", [program("injected_delay_c"), str(iterations), str(delay_ms)],
                          env=self.env)
        self.assertRan(proc)
        injected_s = (iterations // 4) * delay_ms / 1000
        self.assertIn(f"injected {int(injected_s * 1000)} ms", proc.stdout)
        rec, path = self.record()
        source = os.path.join(os.path.dirname(__file__), "..", "programs", "injected_delay.c")
        with open(source) as f:
            recv_line = next(i + 1 for i, l in enumerate(f) if "LATE SENDER" in l)
        top = rec["callsites"][0]
        self.assertEqual((top["function"], top["line"]), ("MPI_Recv", recv_line), rec["callsites"][:3])
        self.assertTrue(top["file"].endswith("injected_delay.c"))
        # 64-byte messages lie inside the model's grid (1 to 10000 bytes); the barrier's 0 bytes
        # lie below it: clamped, and flagged.
        self.assertGreater(rec["job"]["model_clamped_calls"], 0)
        # On a shared machine rank 0 waits longer than the injected time (the sender is
        # descheduled too), so the reference is the program's own measure of its wait at that
        # line, which the charged waste must match; the injected time is a lower bound. The
        # benchmark (docs/PERFORMANCE.md) holds the waste to 20 % of the injected time on a
        # quiet machine.
        waited_s = float(next(l.split()[1] for l in proc.stdout.splitlines()
                              if l.startswith("waited "))) / 1000
        self.assertLess(abs(top["wasted_s"] - waited_s), 0.05 * waited_s + 0.002, (top, waited_s))
        self.assertGreater(top["wasted_s"], 0.9 * injected_s, top)
        report = run([STRATA, "report", path])
        self.assertRan(report)
        self.assertIn("Call sites by wasted time", report.stdout)
        self.assertIn(f"injected_delay.c:{recv_line}", report.stdout.split("Call sites by wasted time")[1]
                      .splitlines()[2])

    def test_needs_a_model(self):
        env = dict(self.env)
        env.pop("STRATA_MODEL")
        proc = strata_run("overhead", [program("ring_c"), "2"], env=env)
        self.assertOneErrorLine(proc, "needs a machine model: overhead:model=model.json or "
                                      "STRATA_MODEL=model.json")
        with open(self.model, "w") as f:
            f.write('{"schema": "strata.model/1", "machine": 3}')
        proc = strata_run("overhead", [program("ring_c"), "2"], env=self.env)
        self.assertOneErrorLine(proc, "option model: " + self.model + ": machine")
