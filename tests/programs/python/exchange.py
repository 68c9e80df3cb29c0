"""Point-to-point and collective calls through mpi4py, on buffers and on pickled objects, each
on a line of its own (the MARK comments) for the tests' call-site checks. An even number of ranks;
argv[1] iterations, argv[2] milliseconds the last rank sleeps before each barrier (default 0)."""
import sys
import time
from array import array

from mpi4py import MPI  # MARK:import

comm = MPI.COMM_WORLD
rank = comm.Get_rank()  # MARK:get_rank
size = comm.Get_size()
peer = rank ^ 1


class Exchange:
    def buffers(self, out):
        back = array("d", out)
        comm.Sendrecv(out, dest=peer, sendtag=1, recvbuf=back, source=peer, recvtag=1)  # MARK:sendrecv
        request = comm.Isend(out, dest=peer, tag=2)  # MARK:isend
        comm.Recv(back, source=peer, tag=2)  # MARK:recv
        request.Wait()  # MARK:wait
        return back

    def objects(self, step):
        if rank % 2 == 0:
            comm.send({"step": step, "from": rank}, dest=peer, tag=3)  # MARK:send_object
            return comm.recv(source=peer, tag=4)  # MARK:recv_object
        got = comm.recv(source=peer, tag=3)  # MARK:recv_object_odd
        comm.send(got, dest=peer, tag=4)  # MARK:send_object_odd
        return got


def collectives(buf, late_s):
    comm.Bcast(buf, root=0)  # MARK:bcast
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)  # MARK:allreduce
    total = comm.allreduce(rank)  # MARK:allreduce_object
    everyone = comm.gather({"rank": rank}, root=0)  # MARK:gather_object
    if rank == size - 1:
        time.sleep(late_s)
    comm.Barrier()  # MARK:barrier
    return total, everyone


def main(iterations, late_s):
    buf = array("d", [float(rank)] * 32)
    exchange = Exchange()
    for step in range(iterations):
        exchange.buffers(buf)
        got = exchange.objects(step)
        assert got["step"] == step, got
        total, everyone = collectives(buf, late_s)
        assert total == size * (size - 1) // 2
        assert rank != 0 or [e["rank"] for e in everyone] == list(range(size))
    if rank == 0:
        print(f"exchange: done {iterations}")


main(int(sys.argv[1]) if len(sys.argv) > 1 else 5,
     float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0)
