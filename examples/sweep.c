/* A Sweep3D-like wavefront (Kluge, Knuepfer and Nagel, "Statistical Methods for Automatic
 * Performance Bottleneck Detection in MPI Based Programs", section 10): a px x py process grid
 * sweeps a block grid from each of the four corners. For every block a rank receives the inflow
 * faces from its two upstream neighbours, computes, and sends the outflow faces downstream, so a
 * rank waits for the ranks before it in the wave: late senders at the receives, late receivers at
 * the sends.
 *
 *   sweep [--nonblocking] [ITERATIONS] [BLOCKS] [WORK]
 *
 * --nonblocking posts the receives early and completes everything with one MPI_Waitall per
 * block, the paper's remedy. Prints the checksum and the time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FACE = 256 };

static double compute(double* cell, const double* west, const double* north, int work) {
  double sum = 0;
  for (int r = 0; r < work; ++r)
    for (int i = 0; i < FACE; ++i) {
      cell[i] = 0.5 * cell[i] + 0.25 * (west[i] + north[i]) + 1e-3 * r;
      sum += cell[i];
    }
  return sum;
}

int main(int argc, char** argv) {
  int nonblocking = 0, arg = 1;
  if (argc > 1 && strcmp(argv[1], "--nonblocking") == 0) {
    nonblocking = 1;
    arg = 2;
  }
  int iterations = argc > arg ? atoi(argv[arg]) : 10;
  int blocks = argc > arg + 1 ? atoi(argv[arg + 1]) : 16;
  int work = argc > arg + 2 ? atoi(argv[arg + 2]) : 200;
  MPI_Init(&argc, &argv);
  int rank, size, dims[2] = {0, 0}, periods[2] = {0, 0};
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 2, dims);
  MPI_Comm grid;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  MPI_Comm_rank(grid, &rank);
  double cell[FACE], west[FACE], north[FACE], east_out[FACE], south_out[FACE], checksum = 0;
  for (int i = 0; i < FACE; ++i)
    cell[i] = rank + i * 1e-3;
  double start = MPI_Wtime();
  for (int it = 0; it < iterations; ++it) {
    for (int corner = 0; corner < 4; ++corner) {
      /* Sweep direction: from the corner, x and y both increase or decrease. */
      int x_up, x_down, y_up, y_down;
      MPI_Cart_shift(grid, 0, (corner & 1) ? -1 : 1, &x_up, &x_down);
      MPI_Cart_shift(grid, 1, (corner & 2) ? -1 : 1, &y_up, &y_down);
      for (int b = 0; b < blocks; ++b) {
        MPI_Request req[4];
        MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's */
        if (nonblocking) {
          MPI_Irecv(west, FACE, MPI_DOUBLE, x_up, b, grid, &req[0]);
          MPI_Irecv(north, FACE, MPI_DOUBLE, y_up, b, grid, &req[1]);
          MPI_Waitall(2, req, statuses);
        } else {
          MPI_Recv(west, FACE, MPI_DOUBLE, x_up, b, grid, MPI_STATUS_IGNORE);  /* inflow x */
          MPI_Recv(north, FACE, MPI_DOUBLE, y_up, b, grid, MPI_STATUS_IGNORE); /* inflow y */
        }
        if (x_up == MPI_PROC_NULL)
          memset(west, 0, sizeof west);
        if (y_up == MPI_PROC_NULL)
          memset(north, 0, sizeof north);
        checksum += compute(cell, west, north, work);
        memcpy(east_out, cell, sizeof cell);
        memcpy(south_out, cell, sizeof cell);
        if (nonblocking) {
          MPI_Isend(east_out, FACE, MPI_DOUBLE, x_down, b, grid, &req[2]);
          MPI_Isend(south_out, FACE, MPI_DOUBLE, y_down, b, grid, &req[3]);
          MPI_Waitall(2, req + 2, statuses);
        } else {
          MPI_Send(east_out, FACE, MPI_DOUBLE, x_down, b, grid);  /* outflow x */
          MPI_Send(south_out, FACE, MPI_DOUBLE, y_down, b, grid); /* outflow y */
        }
      }
    }
  }
  double elapsed = MPI_Wtime() - start, total = 0;
  MPI_Reduce(&checksum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, grid);
  if (rank == 0)
    printf("sweep: %d ranks (%d x %d), %s, checksum %.6e, %.3f s\n", size, dims[0], dims[1],
           nonblocking ? "non-blocking" : "blocking", total, elapsed);
  MPI_Comm_free(&grid);
  MPI_Finalize();
  return 0;
}
