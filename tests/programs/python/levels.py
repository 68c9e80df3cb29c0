"""Annotated levels of a Python program (the strata package): a solver region, step regions
inside it, and a decorated function inside each step, around MPI calls. argv[1] steps; two ranks.
It runs without Strata too (the annotations then do nothing)."""
import sys
from array import array

from mpi4py import MPI  # MARK:import

import strata

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank


@strata.function
def halo(buf):
    comm.Sendrecv(buf, dest=peer, recvbuf=array("d", buf), source=peer)  # MARK:halo_mpi


def solve(steps):
    buf = array("d", [float(rank)] * 64)
    for _ in range(steps):
        with strata.region("step"):  # MARK:step
            halo(buf)  # MARK:halo_call
            comm.Allreduce(MPI.IN_PLACE, buf)  # MARK:allreduce


with strata.region("solver"):  # MARK:solver
    solve(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
comm.Barrier()  # MARK:barrier
if rank == 0:
    print(f"levels: done, strata loaded: {strata.loaded}")
