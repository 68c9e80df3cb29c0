"""Backtraces through the entry points: a program samples its own stack from a CPU-time timer
while it calls MPI_Barrier, MPI_Sendrecv and MPI_Iprobe in a loop (tests/programs/backtrace.c),
and every sample must unwind to the function that makes the calls, wherever the signal landed:
an entry point's assembly, the core's summed call, a module's callbacks, MPI. What a sampling
profiler, a debugger or a crash handler sees of a program under Strata."""
import re
import unittest

from strata_testlib import StrataTestCase, base_env, mpirun, program, run, strata_run

SAMPLES = "150"


class BacktracesThroughEntryPoints(StrataTestCase):
    def sampled(self, proc):
        self.assertRan(proc)
        found = re.search(r"samples=(\d+) reached=(\d+) in_strata=(\d+)", proc.stdout)
        self.assertIsNotNone(found, proc.stdout + proc.stderr)
        samples, reached, in_strata = (int(x) for x in found.groups())
        self.assertGreaterEqual(samples, 50, "too few samples to say anything")
        lost = [line for line in proc.stdout.splitlines() if line.startswith("lost:")]
        self.assertEqual(reached, samples,
                         f"{samples - reached} of {samples} samples did not unwind to run_calls:\n"
                         + "\n".join(lost[:10]))
        return in_strata

    def test_without_strata_every_sample_unwinds(self):
        # The method itself: MPI alone.
        self.assertEqual(self.sampled(run(mpirun(1) + [program("backtrace_c"), SAMPLES])), 0)

    def test_every_path_of_the_entry_points_unwinds(self):
        stacks = {
            # The assembly entry point's jump into the usual summed call.
            "the usual timed call": ("profile", {}),
            # The general summed call (another clock than the TSC's).
            "the general summed call": ("profile", {"STRATA_CLOCK": "monotonic"}),
            # Every call an event to the profile's callbacks, with its call sites.
            "events with call sites": ("profile", {"STRATA_PROFILE_CORE_SUMS": "0",
                                                   "STRATA_PROFILE_CALLSITES": "1"}),
            # Layers: the entry point calls the next layer's wrapper, re-entering the chain.
            "layers around the profile": ("empty,profile,empty", {}),
            "the trace": ("trace", {"STRATA_TRACE_DIR": self.out}),
        }
        for name, (tools, extra) in stacks.items():
            with self.subTest(stack=name):
                env = base_env(STRATA_PROFILE_POLL_SAMPLE="1", STRATA_SPOOL=self.out, **extra)
                in_strata = self.sampled(strata_run(tools, [program("backtrace_c"), SAMPLES],
                                                    ranks=1, env=env))
                self.assertGreater(in_strata, 0, "no sample landed in libstrata: nothing tested")


if __name__ == "__main__":
    unittest.main()
