"""Two threads of each rank call MPI at the same time (mpi4py asks for MPI_THREAD_MULTIPLE), each
from its own line, on buffers (mpi4py releases the GIL around the call) and on pickled objects;
the main thread asks the rank with the GIL held. An even number of ranks; argv[1] iterations."""
import sys
import threading
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
    sys.exit("threads: MPI_THREAD_MULTIPLE was not provided")
rank = comm.Get_rank()
peer = rank ^ 1


def first(iterations):
    out, back = array("i", [rank]), array("i", [0])
    for _ in range(iterations):
        comm.Sendrecv(out, dest=peer, sendtag=1, recvbuf=back, source=peer, recvtag=1)  # MARK:first
        assert back[0] == peer


def second(iterations):
    for step in range(iterations):
        got = comm.sendrecv((rank, step), dest=peer, sendtag=2, source=peer, recvtag=2)  # MARK:second
        assert got == (peer, step)


iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 100
threads = [threading.Thread(target=first, args=(iterations,)),
           threading.Thread(target=second, args=(iterations,))]
for t in threads:
    t.start()
for _ in range(iterations):
    comm.Get_rank()  # MARK:main_thread
for t in threads:
    t.join()
comm.Barrier()
if rank == 0:
    print(f"threads: done {iterations}")
