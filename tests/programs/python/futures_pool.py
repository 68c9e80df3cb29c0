"""mpi4py.futures: `python3 -m mpi4py.futures futures_pool.py` makes rank 0 the client and the
others workers of one pool (no MPI_Comm_spawn)."""
from mpi4py.futures import MPIPoolExecutor


def square(x):
    return x * x


if __name__ == "__main__":
    with MPIPoolExecutor() as pool:
        print("futures: squares", sum(pool.map(square, range(200))))
