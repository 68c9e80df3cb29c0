"""Every module alone, every ordered pair and the whole stack, on a C, a Fortran, a nonblocking
(every way of completing a request, persistent and cancelled requests, a derived communicator) and
(MPICH) a Sessions program: the application's output unchanged, each module's output exact (counts against
what the program did), and an end within a bound. A hang fails with a message naming the stack.
It is a correctness matrix, not a benchmark: small programs, two runs at a time."""
import glob
import itertools
import json
import os
import re
import signal
import subprocess
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

from strata_testlib import (FLAVOR, STRATA, StrataTestCase, base_env, mpirun, program, run)
from test_overhead import synthetic_model

ITER = 3
RANKS = 2
BOUND_S = 90  # a run that takes longer has hung (a normal one takes a second or two)

# Module name -> its stack entry. The monitor takes a tool rank beside the two application
# ranks (tree transport); the patched PMPI tool counts what it wraps.
MODULES = {
    "profile": "profile",
    "overhead": "overhead",
    "trace": "trace",
    "monitor": "monitor:filter=stats:fanout=2",
    "delay": "delay:usec=200",
    "empty": "empty",
    "pmpi": "count_a",
}

# Program -> (path, arguments).
PROGRAMS = {
    "c": ("ring_c", [str(ITER)]),
    "fortran": ("ring_f90", [str(ITER)]),
    "sessions": ("sessions", ["one", str(ITER)]),
    "completions": ("completion_ring_c", [str(ITER)]),
    "fortran_nonblocking": ("nonblocking_f90", [str(ITER)]),
}


def ring_facts(err):
    """What the ring programs do: each rank sends ITER messages with MPI_Send."""
    return {"routines": {"MPI_Send": ITER * RANKS, "MPI_Recv": ITER * RANKS,
                         "MPI_Allreduce": RANKS, "MPI_Barrier": RANKS},
            "messages": ITER * RANKS, "monitored": ("MPI_Send", ITER * RANKS),
            "pmpi": {"MPI_Send": ITER, "MPI_Allreduce": 1, "MPI_Barrier": 1}}


def completions_facts(err):
    """What completion_ring.c does (its header); its MPI_Test calls, which depend on timing, are
    what its ranks printed."""
    tests = [int(n) for n in re.findall(r"^completion_ring: rank \d+ tests=(\d+)$", err, re.M)]
    per_rank = {"MPI_Irecv": 4 * ITER + 1, "MPI_Isend": 4 * ITER, "MPI_Wait": 3 * ITER + 1,
                "MPI_Waitall": 2 * ITER, "MPI_Waitany": 2 * ITER, "MPI_Startall": ITER,
                "MPI_Send_init": 1, "MPI_Recv_init": 1, "MPI_Request_free": 2, "MPI_Cancel": 1,
                "MPI_Comm_split": 1, "MPI_Allreduce": 1, "MPI_Comm_free": 1, "MPI_Barrier": 1}
    routines = {name: calls * RANKS for name, calls in per_rank.items()}
    routines["MPI_Test"] = sum(tests) if len(tests) == RANKS else None
    # Messages: the four nonblocking sends per iteration and the persistent send each Startall
    # starts.
    return {"routines": routines, "messages": 5 * ITER * RANKS,
            "monitored": ("MPI_Isend", 4 * ITER * RANKS),
            "pmpi": {"MPI_Allreduce": 1, "MPI_Barrier": 1}}


def fortran_nonblocking_facts(err):
    """What nonblocking.f90 does (its source) through Open MPI's or MPICH's Fortran bindings;
    its MPI_Test calls are what its ranks printed."""
    tests = [int(n) for n in re.findall(r"^nonblocking: rank \d+ tests=(\d+)$", err, re.M)]
    per_rank = {"MPI_Irecv": ITER + 2, "MPI_Isend": ITER, "MPI_Waitall": ITER, "MPI_Send": 2,
                "MPI_Wait": 1}
    routines = {name: calls * RANKS for name, calls in per_rank.items()}
    routines["MPI_Test"] = sum(tests) if len(tests) == RANKS else None
    return {"routines": routines, "messages": (ITER + 2) * RANKS,
            "monitored": ("MPI_Isend", ITER * RANKS), "pmpi": {"MPI_Send": 2}}


FACTS = {"c": ring_facts, "fortran": ring_facts, "sessions": ring_facts,
         "completions": completions_facts, "fortran_nonblocking": fortran_nonblocking_facts}


def stacks():
    names = list(MODULES)
    yield from ((n,) for n in names)
    yield from itertools.permutations(names, 2)
    yield tuple(names)


def run_bounded(args, env, cwd):
    """Runs a job in its own process group; on the bound, the whole group is killed."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BOUND_S)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err, True


def analysis_facts(summary):
    """What an analysis found, without its timings (and the wait states they decide)."""
    untimed = {k: v for k, v in summary.items()
               if k not in ("archive", "processes", "wait_states", "operations", "totals")}
    for part in ("operations", "totals"):
        untimed[part] = sorted(json.dumps({k: v for k, v in row.items() if k != "time_s"},
                                          sort_keys=True) for row in summary[part])
    return untimed


class Combinations(StrataTestCase):
    def check_program(self, kind):
        name, args = PROGRAMS[kind]
        path = program(name)
        if not os.path.exists(path):
            self.skipTest(f"{name} is not built for {FLAVOR} (no MPI-4 Sessions)")
        native = run(mpirun(RANKS) + [path] + args)
        self.assertRan(native)
        model = os.path.join(self.out, "model.json")
        with open(model, "w") as f:
            json.dump(synthetic_model(1e-3), f)
        all_stacks = list(stacks())
        with ThreadPoolExecutor(max_workers=2) as pool:
            problems = list(pool.map(lambda s: self.one_run(kind, path, args, s, native.stdout,
                                                             model), all_stacks))
        problems = [p for p in problems if p]
        self.assertEqual(problems, [], f"{len(problems)} of {len(all_stacks)} stacks:\n" +
                         "\n".join(problems))

    def one_run(self, kind, path, args, stack, native_out, model):
        """Returns "" or one line saying what went wrong with this stack."""
        tools = ",".join(MODULES[m] for m in stack)
        label = f"{kind} --tools {tools}"
        with tempfile.TemporaryDirectory(prefix="strata-combo-") as work:
            spool = os.path.join(work, "spool")
            env = base_env(STRATA_SPOOL=spool, STRATA_TRACE_DIR=os.path.join(work, "trace"),
                           STRATA_MONITOR_OUT=os.path.join(work, "rounds.jsonl"),
                           STRATA_MODEL=model, PMPI_TOOL_OUT=work, HOME=work,
                           # Two runs at once: Open MPI's session directories apart, or the
                           # two mpiruns race to make and remove the same one (orte_init fails).
                           OMPI_MCA_orte_tmpdir_base=work)
            rc, out, err, hung = run_bounded(
                [STRATA, "run", "-np", str(RANKS), "--tools", tools, "--", path] + args, env, work)
            if hung:
                return f"{label}: no end within {BOUND_S} s (killed)"
            if rc != 0:
                return f"{label}: exit {rc}: {err.strip().splitlines()[-1:] if err else ''}"
            if out != native_out:
                return f"{label}: the application's output changed: {out!r}"
            facts = FACTS[kind](err)
            found = "; ".join(p for p in self.check_outputs(kind, facts, stack, work, err) if p)
            return f"{label}: {found}" if found else ""

    def check_outputs(self, kind, facts, stack, work, err):
        if "profile" in stack or "overhead" in stack:
            records = sorted(glob.glob(os.path.join(work, "spool", "*.json")))
            wanted = ("profile" in stack) + ("overhead" in stack)
            if len(records) != wanted:
                yield f"{wanted} job records wanted, {len(records)} written"
            for path in records:
                with open(path) as f:
                    routines = json.load(f)["routines"]
                for name, calls in facts["routines"].items():
                    got = routines.get(name, {}).get("calls")
                    if got != calls:
                        yield f"{os.path.basename(path)}: {name} {got} calls, not {calls}"
        if "trace" in stack:
            found = re.search(r"in (\S+/traces\.otf2)", err)
            if found is None:
                yield "no trace archive announced"
            else:
                analysis = run([STRATA, "analyze", "--json", found.group(1)])
                summary = json.loads(analysis.stdout) if analysis.returncode == 0 else {}
                messages = facts["messages"]
                if summary.get("messages") != messages or summary.get("ranks") != RANKS:
                    yield f"trace: {summary.get('messages')} messages of {summary.get('ranks')} " \
                          f"ranks, not {messages} of {RANKS} ({analysis.stderr.strip()})"
        if "monitor" in stack:
            try:
                with open(os.path.join(work, "rounds.jsonl")) as f:
                    final = [json.loads(line) for line in f][-1]
                name, calls = facts["monitored"]
                got = final["events"][name]["calls"]["sum"]
                if final["ranks"] != RANKS or got != calls:
                    yield f"monitor: {got} {name} over {final['ranks']} ranks, not {calls}"
            except (OSError, IndexError, KeyError, ValueError) as e:
                yield f"monitor: no final round ({e})"
        if "pmpi" in stack and kind != "sessions":  # the tool writes at MPI_Finalize
            for rank in range(RANKS):
                try:
                    with open(os.path.join(work, f"count_a.{rank}.counts")) as f:
                        counts = dict(line.split() for line in f)
                except OSError as e:
                    yield f"PMPI tool: no counts ({e})"
                    continue
                for name, calls in facts["pmpi"].items():
                    if int(counts.get(name, -1)) != calls:
                        yield f"PMPI tool rank {rank}: {name} {counts.get(name)}, not {calls}"

    def test_the_programs_buffers_stay_where_malloc_puts_them_under_every_module(self):
        # glibc raises its mmap threshold when a block of 128 KiB or more is freed: a module (or
        # the core) that did so at start would move the program's later buffers of that size
        # from mappings of their own into the heap (the profile alone: test_profile.py).
        native = run(mpirun(RANKS) + [program("allocator_c")])
        self.assertRan(native)
        expected = sorted(l for l in native.stdout.splitlines() if l.startswith("allocator:"))
        self.assertEqual(len(expected), RANKS, native.stdout)
        self.assertIn("160K=mapped", expected[0])  # glibc's default threshold is 128 KiB
        with tempfile.TemporaryDirectory(prefix="strata-combo-") as work:
            model = os.path.join(work, "model.json")
            with open(model, "w") as f:
                json.dump(synthetic_model(200e-6), f)
            env = base_env(STRATA_SPOOL=os.path.join(work, "spool"), HOME=work,
                           STRATA_TRACE_DIR=os.path.join(work, "trace"), STRATA_MODEL=model,
                           STRATA_MONITOR_OUT=os.path.join(work, "rounds.jsonl"),
                           PMPI_TOOL_OUT=work)
            for name, tools in MODULES.items():
                with self.subTest(module=name):
                    rc, out, err, hung = run_bounded(
                        [STRATA, "run", "-np", str(RANKS), "--tools", tools, "--",
                         program("allocator_c")], env, work)
                    self.assertFalse(hung, f"{tools}: no end within {BOUND_S} s")
                    self.assertEqual(rc, 0, err)
                    got = sorted(l for l in out.splitlines() if l.startswith("allocator:"))
                    self.assertEqual(got, expected, tools)

    def test_trace_beside_the_monitor(self):
        # Four application ranks and the monitor's tool ranks: the archive describes the
        # application's ranks only, its world as the world communicator, and `strata analyze`
        # (serial and in parallel) and the in-job analysis read in it what they read in the
        # trace of the same program without the monitor (timings aside). The monitor's own
        # offloads to its tool ranks are no call of the application's.
        ranks = 4
        path = program("ring_c")
        native = run(mpirun(ranks) + [path, str(ITER)])
        self.assertRan(native)
        facts = {}
        for stack in ("trace", "trace," + MODULES["monitor"],
                      "trace:analyze=1,profile," + MODULES["monitor"]):
            with tempfile.TemporaryDirectory(prefix="strata-combo-") as work:
                env = base_env(STRATA_TRACE_DIR=os.path.join(work, "trace"),
                               STRATA_SPOOL=os.path.join(work, "spool"), HOME=work)
                rc, out, err, hung = run_bounded([STRATA, "run", "-np", str(ranks), "--tools",
                                                  stack, "--", path, str(ITER)], env, work)
                self.assertFalse(hung, f"{stack}: no end within {BOUND_S} s")
                self.assertEqual((rc, out), (0, native.stdout), f"{stack}: {err}")
                self.assertNotIn("unreadable", err)
                found = re.search(r"in (\S+/traces\.otf2)", err)
                self.assertIsNotNone(found, err)
                for np in ("1", "2"):
                    analysis = run([STRATA, "analyze", "--json", "--np", np, found.group(1)])
                    self.assertEqual(analysis.returncode, 0, f"{stack}: {analysis.stderr}")
                    facts[stack, np] = analysis_facts(json.loads(analysis.stdout))
                if "analyze=1" in stack:
                    with open(os.path.join(os.path.dirname(found.group(1)),
                                           "analysis.json")) as f:
                        facts[stack, "in the job"] = analysis_facts(json.load(f))
        alone = facts["trace", "1"]
        self.assertEqual((alone["ranks"], alone["messages"], alone["collectives"]),
                         (ranks, ITER * ranks, 2))
        for key, got in facts.items():
            self.assertEqual(got, alone, key)

    def test_c_program(self):
        self.check_program("c")

    def test_fortran_program(self):
        self.check_program("fortran")

    def test_sessions_program(self):
        self.check_program("sessions")

    def test_nonblocking_completions(self):
        self.check_program("completions")

    def test_fortran_nonblocking(self):
        self.check_program("fortran_nonblocking")


if __name__ == "__main__":
    unittest.main()
