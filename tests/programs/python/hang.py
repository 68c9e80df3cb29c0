"""Two ranks that each receive from the other first (mpi4py): a deadlock."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
peer = comm.Get_rank() ^ 1
value = comm.recv(source=peer, tag=9)  # MARK:recv
comm.send(value, dest=peer, tag=9)
