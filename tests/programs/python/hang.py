"""Two ranks that each receive from the other first (mpi4py): a deadlock. With the argument
`threads`, a second thread of each rank receives from the other rank too, from its own line.
With `compute`, rank 1 computes for good after a receive that lasted a second, while rank 0
waits for it."""
import sys
import threading
import time
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = rank ^ 1
mode = sys.argv[1] if len(sys.argv) > 1 else ""


def receive_in_thread():
    comm.recv(source=peer, tag=10)  # MARK:thread_recv


if mode == "compute":
    buf = array("i", [0])
    if rank == 0:
        time.sleep(1)
        comm.Send(buf, dest=1)
        comm.Recv(buf, source=1)  # MARK:wait_for_computing
    else:
        comm.Recv(buf, source=0)  # MARK:last_call
        while True:
            time.sleep(0.05)
if mode == "threads":
    threading.Thread(target=receive_in_thread, daemon=True).start()
value = comm.recv(source=peer, tag=9)  # MARK:recv
comm.send(value, dest=peer, tag=9)
