"""The profile's spool when it cannot be used as configured: full, read-only, not a directory.
The application runs as it would without the tool; one line says why and where the record went."""
import glob
import json
import os
import re

from strata_testlib import mpirun, program, run
from test_profile import ProfileTestCase

ITER = 3


class SpoolTestCase(ProfileTestCase):
    def setUp(self):
        super().setUp()
        self.fallback = os.path.join(self.out, ".strata", "spool")  # HOME is self.out

    def native_output(self):
        proc = run(mpirun(2) + [program("ring_c"), str(ITER)])
        self.assertRan(proc)
        return proc.stdout

    def run_ring(self, spool, **extra):
        env = dict(self.env, STRATA_SPOOL=spool, **extra)
        proc = self.profile_run([program("ring_c"), str(ITER)], env=env)
        self.assertRan(proc)
        self.assertEqual(proc.stdout, self.native_output())
        return proc

    def lines_naming(self, proc, text):
        return [l for l in proc.stderr.splitlines() if text in l]

    def fallback_record(self):
        records = glob.glob(os.path.join(self.fallback, "*.json"))
        self.assertEqual(len(records), 1, os.listdir(self.fallback))
        self.assertEqual(glob.glob(os.path.join(self.fallback, "*.prof")), [])
        with open(records[0]) as f:
            record = json.load(f)
        self.assertEqual(record["routines"]["MPI_Send"]["calls"], 2 * ITER)
        return records[0]


class FullSpool(SpoolTestCase):
    def test_a_full_spool_falls_back_to_home_with_one_message(self):
        full = self.tmpfs("full", "size=64k")
        self.fill(full)
        copy = os.path.join(full, "copy.json")
        proc = self.run_ring(full, STRATA_PROFILE_JSON=copy)
        lines = self.lines_naming(proc, full)
        self.assertEqual(len(lines), 2, proc.stderr)
        self.assertRegex(lines[0], "^strata: profile: spool " + re.escape(full) + " cannot hold " +
                         re.escape(full) + r"/[^ ]+\.rank0\.prof \(\d+ bytes\): No space left on "
                         "device; records go to " + re.escape(self.fallback) + "$")
        self.assertRegex(lines[1], "^strata: profile: cannot write STRATA_PROFILE_JSON: " +
                         re.escape(copy) + r"\.tmp\.\d+: No space left on device$")
        self.fallback_record()
        self.assertEqual(os.listdir(full), ["filler"])

    def test_a_record_that_does_not_fit_at_the_end_goes_to_home(self):
        # The rank files' size, from the message of a run on a full spool.
        spool = self.tmpfs("spool", "size=1m")
        self.fill(spool)
        said = self.lines_naming(self.run_ring(spool), spool)[0]
        rank_file_bytes = int(re.search(r"\((\d+) bytes\)", said).group(1))
        os.remove(self.fallback_record())
        # Room for the two rank files and their files of pairs (a page each at two ranks), to the
        # page, and none for the record.
        pages = -(-rank_file_bytes // 4096) + 1
        os.remove(os.path.join(spool, "filler"))
        self.fill(spool, leave=2 * pages * 4096)
        proc = self.run_ring(spool)
        lines = self.lines_naming(proc, spool)
        self.assertEqual(len(lines), 1, proc.stderr)
        record = self.fallback_record()
        self.assertRegex(lines[0], "^strata: profile: cannot write the job record: " +
                         re.escape(spool) + r"/[^ ]+\.json\.tmp\.\d+: No space left on device; "
                         "it went to " + re.escape(record) + "$")
        self.assertEqual(os.listdir(spool), ["filler"])  # the rank files are no longer needed


class UnusableSpool(SpoolTestCase):
    def test_a_read_only_spool_falls_back_to_home(self):
        read_only = self.tmpfs("read-only", "size=64k,ro")
        proc = self.run_ring(read_only)
        lines = self.lines_naming(proc, read_only)
        self.assertEqual(lines, [f"strata: profile: spool {read_only} is not writable (Read-only file "
                                 f"system); records go to {self.fallback}"], proc.stderr)
        self.fallback_record()

    def test_a_spool_that_is_a_file_falls_back_to_home(self):
        for mode in (0o644, 0o755):
            with self.subTest(mode=oct(mode)):
                spool = os.path.join(self.out, f"spool-file-{mode:o}")
                with open(spool, "w") as f:
                    f.write("not a directory\n")
                os.chmod(spool, mode)
                proc = self.run_ring(spool)
                self.assertEqual(self.lines_naming(proc, spool),
                                 [f"strata: profile: spool {spool} is not a directory; records go "
                                  f"to {self.fallback}"], proc.stderr)
                os.remove(self.fallback_record())
                with open(spool) as f:
                    self.assertEqual(f.read(), "not a directory\n")
