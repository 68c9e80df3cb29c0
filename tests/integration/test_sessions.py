"""MPI-4 Sessions programs under every module: the Sessions model alone, several sessions, a
session finalized while another lives, both models in one program, and a job that never
finalizes its sessions. MPICH has Sessions; Open MPI 4.1 (Debian 12's) has not, so under Open
MPI these tests are skipped."""
import glob
import json
import os
import re
import unittest

from strata_testlib import (FLAVOR, STRATA, StrataTestCase, base_env, mpirun, program, run,
                            run_until_ranks_are_gone, strata_run)
from test_overhead import synthetic_model

ITER = 4
RANKS = 2
# Per mode: sessions opened, and whether MPI_Init is called as well.
MODES = {"one": (1, False), "two": (2, False), "mixed": (1, True), "late": (1, True)}


@unittest.skipUnless(os.path.exists(program("sessions")),
                     f"{FLAVOR}'s MPI has no MPI-4 Sessions (MPI_Session_init)")
class SessionsPrograms(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.spool = os.path.join(self.out, "spool")
        self.env = base_env(STRATA_SPOOL=self.spool, STRATA_TRACE_DIR=self.out, HOME=self.out)

    def native(self, mode):
        proc = run(mpirun(RANKS) + [program("sessions"), mode, str(ITER)])
        self.assertRan(proc)
        self.assertIn("checksum=", proc.stdout)
        return proc.stdout

    def record(self):
        files = glob.glob(os.path.join(self.spool, "*.json"))
        self.assertEqual(len(files), 1, os.listdir(self.spool))
        with open(files[0]) as f:
            record = json.load(f)
        os.remove(files[0])
        return record

    def test_profile_records_exact_counts(self):
        for mode, (sessions, world) in MODES.items():
            with self.subTest(mode=mode):
                native = self.native(mode)
                proc = strata_run("profile", [program("sessions"), mode, str(ITER)], env=self.env)
                self.assertRan(proc)
                self.assertEqual(proc.stdout, native)
                record = self.record()
                self.assertEqual(record["job"]["ranks"], RANKS)
                self.assertEqual(record["job"]["status"], "finalized")
                calls = {name: r["calls"] for name, r in record["routines"].items()}
                rings = sessions + (1 if world else 0)
                self.assertEqual(calls["MPI_Send"], ITER * RANKS * rings)
                self.assertEqual(calls["MPI_Recv"], ITER * RANKS * rings)
                self.assertEqual(calls["MPI_Allreduce"], RANKS * rings)
                self.assertEqual(calls["MPI_Barrier"], RANKS * rings)
                self.assertEqual(calls["MPI_Session_init"], RANKS * sessions)
                self.assertEqual(calls["MPI_Comm_create_from_group"], RANKS * sessions)
                self.assertEqual(calls.get("MPI_Init", 0), RANKS if world else 0)
                # The call that ends the job is not in its record (as MPI_Finalize is not); the
                # ones before it are.
                self.assertEqual(calls.get("MPI_Session_finalize", 0),
                                 RANKS * (sessions - 1 if not world or mode == "late" else 1))
                self.assertEqual(calls.get("MPI_Finalize", 0), RANKS if mode == "late" else 0)

    def test_trace_and_its_analysis(self):
        for mode, (sessions, world) in MODES.items():
            with self.subTest(mode=mode):
                proc = strata_run("trace", [program("sessions"), mode, str(ITER)], env=self.env)
                self.assertRan(proc)
                archive = re.search(r"in (\S+/traces\.otf2)", proc.stderr).group(1)
                analysis = run([STRATA, "analyze", "--json", archive])
                self.assertRan(analysis)
                summary = json.loads(analysis.stdout)
                rings = sessions + (1 if world else 0)
                self.assertEqual(summary["ranks"], RANKS)
                self.assertEqual(summary["messages"], ITER * RANKS * rings)
                self.assertEqual(summary["unmatched_sends"] + summary["unmatched_receives"], 0)
                self.assertEqual(summary["collectives"], 2 * rings)
                os.remove(archive)

    def test_overhead_module(self):
        model = os.path.join(self.out, "model.json")
        with open(model, "w") as f:
            json.dump(synthetic_model(200e-6), f)
        env = dict(self.env, STRATA_MODEL=model)
        proc = strata_run("overhead", [program("sessions"), "two", str(ITER)], env=env)
        self.assertRan(proc)
        record = self.record()
        self.assertEqual(record["routines"]["MPI_Send"]["calls"], ITER * RANKS * 2)
        self.assertTrue(any(c["function"] == "MPI_Send" for c in record["callsites"]))

    def test_monitor_takes_its_ranks_out_of_mpi_world(self):
        # The program builds its communicators from "mpi://WORLD": with the monitor's tool ranks
        # beside it, that process set is the application's processes only.
        out = os.path.join(self.out, "rounds.jsonl")
        for tools in ("monitor:filter=stats", "profile,monitor:filter=stats"):
            with self.subTest(tools=tools):
                proc = strata_run(tools, [program("sessions"), "two", str(ITER)], ranks=RANKS,
                                  env=dict(self.env, STRATA_MONITOR_OUT=out))
                self.assertRan(proc)
                self.assertEqual(proc.stdout, self.native("two"))
                with open(out) as f:
                    rounds = [json.loads(line) for line in f]
                final = rounds[-1]
                self.assertEqual(final["round"], "final")
                self.assertEqual(final["ranks"], RANKS)
                self.assertEqual(final["events"]["MPI_Send"]["calls"]["sum"], ITER * RANKS * 2)
                if tools.startswith("profile"):
                    self.assertEqual(self.record()["job"]["ranks"], RANKS)

    def test_unfinished_sessions_leave_a_partial_record(self):
        proc = strata_run("profile", [program("sessions"), "unfinished", str(ITER)], env=self.env)
        self.assertIn("checksum=", proc.stdout)
        recovered = run_until_ranks_are_gone([STRATA, "recover", self.spool], self.env)
        self.assertRan(recovered)
        record = self.record()
        self.assertTrue(record["job"]["partial"])
        self.assertEqual(record["job"]["ranks_reported"], RANKS)
        self.assertEqual(record["routines"]["MPI_Send"]["calls"], ITER * RANKS)


if __name__ == "__main__":
    unittest.main()
