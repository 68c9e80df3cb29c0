"""Binary PMPI tools, patched with `strata patch`, chained with native modules (PnMPI 3.1)."""
import json
import os
import subprocess

from strata_testlib import (CORE, STRATA, StrataTestCase, base_env, mpirun, program, run,
                            strata_run)
from test_overhead import synthetic_model

ITER = 6


def read_tool_counts(path):
    with open(path) as f:
        return {name: int(value) for name, value in (line.split() for line in f)}


class PatchedTools(StrataTestCase):
    def setUp(self):
        super().setUp()
        self.env = base_env(PMPI_TOOL_OUT=self.out)

    def log(self, rank=0):
        with open(os.path.join(self.out, f"log.{rank}")) as f:
            return [line.strip() for line in f]

    def first_send(self, log, first):
        start = log.index(f"{first} in MPI_Send")
        end = log.index(f"{first} out MPI_Send", start)
        return log[start:end + 1]

    def test_three_deep_in_two_orders_with_a_native_module(self):
        native = run(mpirun(2) + [program("ring_c"), str(ITER)])
        self.assertRan(native)
        probe = f"probe:out={self.out}:name=P:log=MPI_Send"
        for order in (["count_a", probe, "count_b", "count_c"], ["count_c", "count_b", probe, "count_a"]):
            with self.subTest(order=order):
                for f in os.listdir(self.out):
                    os.remove(os.path.join(self.out, f))
                proc = strata_run(",".join(order), [program("ring_c"), str(ITER)], env=self.env)
                self.assertRan(proc)
                self.assertEqual(proc.stdout, native.stdout, "results unchanged")
                tools = [t for t in order if t.startswith("count_")]
                for tool in tools:
                    for rank in (0, 1):
                        counts = read_tool_counts(os.path.join(self.out, f"{tool}.{rank}.counts"))
                        self.assertEqual(counts["MPI_Send"], ITER, tool)
                        self.assertEqual(counts["MPI_Recv"], ITER, tool)
                        self.assertEqual(counts["MPI_Barrier"], 1, tool)
                        # The probe's own MPI_Allreduce at finalize reaches no other layer.
                        self.assertEqual(counts["MPI_Allreduce"], 1, tool)
                # The order of the first send through the stack, as each layer logged it.
                expected = []
                for layer in order:
                    expected.append("P enter MPI_Send" if layer == probe else f"{layer} in MPI_Send")
                for layer in reversed(order):
                    expected.append("P exit MPI_Send" if layer == probe else f"{layer} out MPI_Send")
                self.assertEqual(self.first_send(self.log(), order[0]), expected)

    def run_between_probes(self, tool):
        """ring_c under probe 'above', the tool, probe 'below'."""
        tools = f"probe:out={self.out}:name=above,{tool},probe:out={self.out}:name=below"
        proc = strata_run(tools, [program("ring_c"), str(ITER)], env=self.env)
        self.assertRan(proc)

    def comm_size_seen_by(self, probe_name):
        with open(os.path.join(self.out, f"{probe_name}.0.counts")) as f:
            return next(int(l.split()[1]) for l in f if l.startswith("MPI_Comm_size "))

    def test_a_tools_other_pmpi_calls_go_to_the_next_layer(self):
        # count_a calls PMPI_Comm_size inside its MPI_Barrier: the probe below sees it, the one
        # above does not.
        self.run_between_probes("count_a")
        self.assertEqual(self.comm_size_seen_by("above"), 1)
        self.assertEqual(self.comm_size_seen_by("below"), 2)

    def test_fortran_pmpi_calls_go_to_the_next_layer(self):
        # count_f calls the Fortran binding's pmpi_comm_size_ inside its MPI_Barrier; `strata
        # patch` keeps that import (and says so); the binding calls the C entry point, which
        # dispatches from count_f's layer: the probe below sees the call, the one above not.
        self.run_between_probes("count_f")
        self.assertEqual(self.comm_size_seen_by("above"), 1)
        self.assertEqual(self.comm_size_seen_by("below"), 2)
        counts = read_tool_counts(os.path.join(self.out, "count_f.0.counts"))
        self.assertEqual(counts["MPI_Barrier"], 1)
        tool = os.path.join(os.path.dirname(program("x")), "pmpi_tools", "libcount_f.so")
        patched = run([STRATA, "patch", tool, os.path.join(self.out, "f.so")])
        self.assertRan(patched)
        self.assertIn("pmpi_comm_size_ kept (Fortran binding", patched.stdout)

    def test_threads_keep_their_own_layer(self):
        iterations = 500
        proc = strata_run("count_a,empty,count_b", [program("threads_c"), str(iterations)], env=self.env)
        self.assertRan(proc)
        for tool in ("count_a", "count_b"):
            counts = read_tool_counts(os.path.join(self.out, f"{tool}.1.counts"))
            self.assertEqual(counts["MPI_Sendrecv"], 2 * iterations)

    def test_unpatched_tool_is_refused_with_the_fix(self):
        proc = strata_run("unpatched_tool", [program("ring_c"), "2"], env=self.env)
        self.assertOneErrorLine(proc, "is a PMPI tool that has not been patched: run 'strata patch ")

    def test_tool_is_refused_when_libelf_cannot_be_loaded(self):
        # The core loads libelf only to read a patched tool: a libelf without its functions, found
        # first, must refuse the tool with one line, before the program runs.
        broken = os.path.join(self.out, "broken")
        os.mkdir(broken)
        subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "/dev/null", "-o",
                        os.path.join(broken, "libelf.so.1")], check=True)
        env = base_env(PMPI_TOOL_OUT=self.out, LD_PRELOAD=CORE, STRATA_TOOLS="count_a",
                       LD_LIBRARY_PATH=broken)
        proc = run(mpirun(2) + [program("ring_c"), "2"], env=env, timeout=60)
        self.assertOneErrorLine(proc, "is not a PMPI tool that can be loaded: ")
        self.assertIn("libelf.so.1 has no elf_version", proc.stderr)

    def test_tools_take_no_arguments(self):
        proc = strata_run("count_a:x=1", [program("ring_c"), "2"], env=self.env)
        self.assertOneErrorLine(proc, "PMPI tool 'count_a' takes no arguments")

    def test_patch_command_refuses_bad_input_with_one_line(self):
        strata = os.path.join(os.path.dirname(program("x")), "..", "..", "bin", "strata")
        out = os.path.join(self.out, "x.so")
        for path, phrase in (("/etc/passwd", "not an ELF file"), ("/no/such.so", "cannot open"),
                             (program("ring_c"), "position-independent executable")):
            with self.subTest(path=path):
                proc = run([strata, "patch", path, out])
                self.assertOneErrorLine(proc, phrase)
                self.assertFalse(os.path.exists(out))

    def test_modules_command_lists_patched_tools(self):
        proc = run([os.path.join(os.path.dirname(program("x")), "..", "..", "bin", "strata"), "modules"],
                   env=self.env)
        self.assertRan(proc)
        self.assertRegex(proc.stdout, r"count_b\s+binary PMPI tool \(patched with strata patch\)\n\s+wraps 6 functions")


class OwnTrafficHidden(StrataTestCase):
    """Every module's own traffic (the profile's and trace's reductions and gathers at finalize,
    clock synchronisation, the monitor's offloads) is invisible to the other layers: a PMPI tool
    chained below them counts exactly what it counts run alone."""

    def counts(self):
        return {rank: read_tool_counts(os.path.join(self.out, f"count_a.{rank}.counts"))
                for rank in (0, 1)}

    def test_a_tool_below_the_modules_agrees_with_the_tool_alone(self):
        env = base_env(PMPI_TOOL_OUT=self.out, STRATA_SPOOL=os.path.join(self.out, "spool"),
                       STRATA_TRACE_DIR=self.out, STRATA_MONITOR_OUT=os.path.join(self.out, "m"),
                       HOME=self.out)
        alone_env = dict(env, LD_PRELOAD=os.path.join(program("pmpi_tools"), "libcount_a.so"))
        alone = run(mpirun(2) + [program("ring_c"), str(ITER)], env=alone_env)
        self.assertRan(alone)
        expected = self.counts()
        self.assertEqual(expected[0]["MPI_Allreduce"], 1)
        for stack in ("profile,count_a", "profile,trace,count_a", "trace,profile,count_a",
                      "monitor:transport=inline,profile,count_a", "count_b,overhead,count_a"):
            with self.subTest(stack=stack):
                for name in os.listdir(self.out):
                    if name.endswith(".counts"):
                        os.remove(os.path.join(self.out, name))
                model_env = dict(env)
                if "overhead" in stack:
                    model = os.path.join(self.out, "model.json")
                    with open(model, "w") as f:
                        json.dump(synthetic_model(1e-3), f)
                    model_env["STRATA_MODEL"] = model
                proc = strata_run(stack, [program("ring_c"), str(ITER)], env=model_env)
                self.assertRan(proc)
                self.assertEqual(proc.stdout, alone.stdout)
                self.assertEqual(self.counts(), expected)
