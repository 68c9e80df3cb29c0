"""One mpi4py call, or one annotated region, in a loop: the per-call cost of the call-site
profile in Python against the same loop in C (bench/callsite_loop.c), and the cost of the strata
package's annotations with and without Strata (bench/run_python.sh).

    python3 bench/python_loop.py CALL ITERATIONS [REPETITIONS]

CALL: rank (comm.Get_rank(): MPI_Comm_rank, the GIL held), self_barrier (MPI.COMM_SELF.Barrier():
MPI_Barrier, the GIL released), region (`with strata.region("r"): pass`), function (a call of a
@strata.function), plain_function (a call of the same function undecorated), null_with
(`with` on contextlib's shared nullcontext: what any `with` costs), bare (`pass`).
Prints the best repetition: bench python lang=python call=CALL iterations=N ns_per_call=X
"""
import sys
import time


def main():
    call, iterations = sys.argv[1], int(sys.argv[2])
    repetitions = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    loop = make_loop(call)
    best = min(timed(loop, iterations) for _ in range(repetitions))
    print(f"bench python lang=python call={call} iterations={iterations} ns_per_call={best:.1f}")


def timed(loop, iterations):
    t0 = time.perf_counter_ns()
    loop(iterations)
    return (time.perf_counter_ns() - t0) / iterations


def make_loop(call):
    if call in ("rank", "self_barrier"):
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        world_self = MPI.COMM_SELF

        def rank(n):
            for _ in range(n):
                comm.Get_rank()

        def self_barrier(n):
            for _ in range(n):
                world_self.Barrier()
        return rank if call == "rank" else self_barrier
    import strata

    def work():
        pass
    annotated = strata.function(work)

    def region(n):
        for _ in range(n):
            with strata.region("r"):
                pass

    def function(n):
        for _ in range(n):
            annotated()

    def plain_function(n):
        for _ in range(n):
            work()

    def null_with(n):
        import contextlib
        nothing = contextlib.nullcontext()
        for _ in range(n):
            with nothing:
                pass

    def bare(n):
        for _ in range(n):
            pass
    return {"region": region, "function": function, "plain_function": plain_function,
            "null_with": null_with, "bare": bare}[call]


if __name__ == "__main__":
    main()
