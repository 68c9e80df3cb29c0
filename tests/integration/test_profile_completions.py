"""The profile's figures of completion routines: bytes received exactly through every way a
request completes (C), and the Fortran completions of no request that Open MPI's bindings never
pass to C."""
import os
import unittest

from strata_testlib import program
from test_profile import ProfileTestCase


class CompletionBytes(ProfileTestCase):
    """Bytes received through every completion routine are what arrived for the receives it
    completed: statuses kept or ignored, sends in the same arrays, null, inactive and cancelled
    requests; never a send's size nor a status MPI did not write (completions_c)."""

    # What each rank receives through each routine (completions.c).
    RECEIVED = {"MPI_Wait": 600 + 2000 + 2 * 300, "MPI_Waitall": 4400 + 5000 + 10 * 40,
                "MPI_Waitany": 800 + 900, "MPI_Waitsome": 1200 + 50 + 1300 + 50,
                "MPI_Test": 1500 + 1600, "MPI_Testall": 1700 + 1800, "MPI_Testany": 1900 + 2100,
                "MPI_Testsome": 2200 + 2300}

    def test_every_completion_routine_counts_what_arrived(self):
        # Each way the core times a call: summed by the core, an event for the profile, polls
        # all timed, untimed polls decoded when they complete something, untimed polls counted
        # only (whose bytes the profile estimates).
        for settings in ({}, {"STRATA_PROFILE_CORE_SUMS": "0"}, {"STRATA_PROFILE_POLL_SAMPLE": "1"},
                         {"STRATA_PROFILE_POLLS": "exact"}):
            with self.subTest(**settings):
                for f in self.records():
                    os.remove(f)
                proc = self.profile_run([program("completions_c")], env=dict(self.env, **settings))
                self.assertRan(proc)
                made = {}
                for line in proc.stdout.splitlines():
                    _, rank, _, name, calls, _, received = line.split()
                    made.setdefault(name, []).append((int(calls), int(received)))
                routines = self.only_record()["routines"]
                estimated = not settings or settings == {"STRATA_PROFILE_CORE_SUMS": "0"}
                for name, per_rank in self.RECEIVED.items():
                    self.assertEqual([r for _, r in made[name]], [per_rank] * 2, name)
                    self.assertEqual(routines[name]["calls"], sum(c for c, _ in made[name]), name)
                    if estimated and name in ("MPI_Test", "MPI_Testany"):
                        continue  # lean polls: estimated from the timed ones
                    self.assertEqual(routines[name]["bytes_received"], 2 * per_rank, name)
                # The sends that these completed were counted where they were made, once.
                self.assertEqual(routines["MPI_Isend"]["bytes_received"], 0)
                self.assertEqual(routines["MPI_Irecv"]["bytes_received"], 0)


class FortranZeroCounts(ProfileTestCase):
    def test_completions_of_no_request_are_counted(self):
        # Open MPI's Fortran bindings return without calling C for a count of 0; MPICH's call it.
        self.assertRan(self.profile_run([program("zero_count_f90")]))
        routines = self.only_record()["routines"]
        self.assertEqual(routines["MPI_Waitall"]["calls"], 2 * 6)
        self.assertEqual(routines["MPI_Waitall"]["bytes_received"], 2 * 4)
        for name in ("MPI_Waitany", "MPI_Waitsome", "MPI_Testall", "MPI_Testany", "MPI_Testsome"):
            self.assertEqual(routines[name]["calls"], 2, name)
            self.assertEqual(routines[name]["bytes_received"], 0, name)


if __name__ == "__main__":
    unittest.main()
