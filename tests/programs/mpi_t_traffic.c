/* Known traffic for the profile's reading of the MPI library's own variables (MPI_T): rank 0
 * sends UNEXPECTED small messages to rank 1 before rank 1 posts a receive, and rank 1 posts
 * POSTED receives that nothing matches yet; both then call MPI_Pcontrol(4), the job subtotal,
 * while those queues hold them, and drain them before MPI_Finalize. The program uses MPI_T
 * itself too, and prints what it saw: the profile's own MPI_T calls must not be counted as
 * the program's. */
#include <mpi.h>
#include <stdio.h>

enum { UNEXPECTED = 7, POSTED = 3 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, provided = 0, pvars = -1, cvars = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS) {
    MPI_T_pvar_get_num(&pvars);
    MPI_T_cvar_get_num(&cvars);
    MPI_T_finalize();
  }
  double payload[UNEXPECTED] = {0}, later[POSTED] = {0};
  MPI_Request posted[POSTED];
  /* The last of rank 0's messages has a tag of its own: messages between two ranks do not
   * overtake each other, so once rank 1 has probed it, all are in its unexpected queue. */
  if (rank == 0)
    for (int i = 0; i < UNEXPECTED; ++i)
      MPI_Send(&payload[i], 1, MPI_DOUBLE, 1, i + 1 < UNEXPECTED ? 5 : 6, MPI_COMM_WORLD);
  if (rank == 1) {
    for (int i = 0; i < POSTED; ++i)
      MPI_Irecv(&later[i], 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD, &posted[i]);
    MPI_Probe(0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(4);
  if (rank == 1)
    for (int i = 0; i < UNEXPECTED; ++i)
      MPI_Recv(&payload[i], 1, MPI_DOUBLE, 0, i + 1 < UNEXPECTED ? 5 : 6, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  if (rank == 0)
    for (int i = 0; i < POSTED; ++i)
      MPI_Send(&later[i], 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);
  if (rank == 1)
    MPI_Waitall(POSTED, posted, MPI_STATUSES_IGNORE);
  if (rank == 0)
    printf("mpi_t_traffic: ranks=%d pvars=%d cvars=%d unexpected=%d posted=%d\n", size, pvars,
           cvars, UNEXPECTED, POSTED);
  MPI_Finalize();
  return 0;
}
