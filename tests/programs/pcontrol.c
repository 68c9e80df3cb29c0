/* MPI_Pcontrol levels of the profile module: 10 barriers counted, 5 while paused (0) not
 * counted, resume (1), a reset (2) that forgets 3 allreduces, a rank subtotal (3) and a job
 * subtotal (4), then 4 more barriers. */
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int x = 1, y = 0;
  for (int i = 0; i < 3; ++i)
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Pcontrol(2);
  for (int i = 0; i < 10; ++i)
    MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(0);
  for (int i = 0; i < 5; ++i)
    MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(1);
  MPI_Pcontrol(3);
  MPI_Pcontrol(4);
  for (int i = 0; i < 4; ++i)
    MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
