"""The profile module when a job ends badly: MPI_Abort, signals, a killed rank, exit without
MPI_Finalize, an exit code after it, a damaged rank file; the record strata recover rebuilds."""
import glob
import os
import subprocess
import unittest

from strata_testlib import FLAVOR, STRATA, program, run, run_until_ranks_are_gone
from test_profile import ProfileTestCase


class AbnormalEnds(ProfileTestCase):
    def crash(self, how):
        proc = self.profile_run([program("crash_c"), how], env=dict(self.env, STRATA_WRITE_TIMEOUT_MS="2000"))
        if how != "exit":  # MPICH's launcher reports a rank that exits with 0 as a success
            self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.records(), [], "no record without MPI_Finalize")
        rank_files = glob.glob(os.path.join(self.spool, "*.prof"))
        self.assertEqual(len(rank_files), 2, os.listdir(self.spool))
        rec = run_until_ranks_are_gone([STRATA, "recover", self.spool], self.env)
        self.assertRan(rec)
        self.assertIn("partial record from 2 rank files", rec.stdout)
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.prof")), [])
        record = self.only_record()
        self.assertTrue(record["job"]["partial"])
        self.assertEqual(record["job"]["ranks_reported"], 2)
        self.assertEqual(record["routines"]["MPI_Sendrecv"]["calls"], 10)
        self.assertEqual(record["routines"]["MPI_Barrier"]["calls"], 2)
        # Who sent to whom survives too (each rank's file of pairs beside its rank file), and
        # recover removes those files with the rank files.
        # (rank 0's last send is counted before the call: whether the end came inside it or not)
        self.assertEqual(record["communication"]["by_kind"],
                         {"sendrecv": [{"from": 0, "to": 1, "messages": 5, "bytes": 20},
                                       {"from": 1, "to": 0, "messages": 5, "bytes": 20}],
                          "point_to_point": [{"from": 0, "to": 1, "messages": 1, "bytes": 4}]})
        self.assertEqual(glob.glob(os.path.join(self.spool, "*.pairs")), [])
        return record["job"]

    def test_mpi_abort(self):
        job = self.crash("abort")
        self.assertEqual(job["status"], "aborted")
        self.assertEqual(job["abort_code"], 7)

    def test_segfault(self):
        job = self.crash("segv")
        self.assertEqual(job["status"], "signal")
        self.assertEqual(job["signal"], 11)

    def test_floating_point_exception(self):
        job = self.crash("fpe")
        self.assertEqual(job["status"], "signal")
        self.assertEqual(job["signal"], 8)

    def test_sigterm(self):
        job = self.crash("term")
        self.assertEqual(job["status"], "signal")
        self.assertEqual(job["signal"], 15)

    def test_sigkill_loses_nothing_counted(self):
        # Rank 1 is killed without a word; Open MPI's launcher then ends rank 0 with SIGTERM,
        # MPICH's with SIGKILL. The record's end is the latest call of the killed ranks.
        job = self.crash("kill")
        if FLAVOR == "mpich":
            self.assertEqual(job["status"], "killed")
        else:
            self.assertEqual((job["status"], job["signal"]), ("signal", 15))
        self.assertRegex(job["end"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertGreaterEqual(job["end"], job["start"])

    def test_exit_code_after_finalize_is_added_to_the_record(self):
        proc = self.profile_run([program("crash_c"), "code2"])
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        job = self.only_record()["job"]
        self.assertEqual((job["status"], job.get("exit_code")), ("finalized", 2))
        report = subprocess.run([STRATA, "report", glob.glob(os.path.join(self.spool, "*.json"))[0]],
                                capture_output=True, text=True)
        self.assertIn("finalized, then exit code 2", report.stdout)

    def test_exit_without_finalize(self):
        job = self.crash("exit")
        if FLAVOR == "mpich":
            self.assertEqual(job["status"], "exit")
        else:
            self.assertIn(job["status"], ("exit", "signal"))
        self.assertTrue(job["end"])

    def test_corrupt_rank_file_is_quarantined(self):
        os.makedirs(self.spool)
        bad = os.path.join(self.spool, "job1-1.rank0.prof")
        with open(bad, "wb") as f:
            f.write(b"STRPROF1" + b"\0" * 20)
        proc = run([STRATA, "recover", self.spool])
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("truncated", proc.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.spool, "quarantine", "job1-1.rank0.prof")))


if __name__ == "__main__":
    unittest.main()
