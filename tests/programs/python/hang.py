"""Two ranks that each receive from the other first (mpi4py): a deadlock. With the argument
`threads`, a second thread of each rank receives from the other rank too, from its own line."""
import sys
import threading

from mpi4py import MPI

comm = MPI.COMM_WORLD
peer = comm.Get_rank() ^ 1


def receive_in_thread():
    comm.recv(source=peer, tag=10)  # MARK:thread_recv


if sys.argv[1:] == ["threads"]:
    threading.Thread(target=receive_in_thread, daemon=True).start()
value = comm.recv(source=peer, tag=9)  # MARK:recv
comm.send(value, dest=peer, tag=9)
