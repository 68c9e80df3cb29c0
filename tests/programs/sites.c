/* Call sites that every rank shares and call sites of single ranks, for the merge of call sites
 * over ranks at finalize. With P ranks (any P >= 1), rank r makes:
 *   MPI_Comm_rank at one line, r + 1 times, and MPI_Barrier at one line, once;
 *   MPI_Comm_size at one of three lines (the (r % 3)-th), r + 1 times;
 *   one MPI_Isend of r + 1 ints to rank (r + 1) % P, one MPI_Recv from (r - 1) % P, one MPI_Wait;
 *   MPI_Get_processor_name at a line of its own when r < 8.
 * Prints "rank R done". Usage: sites */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, n = 0, out[8] = {0}, in[8] = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i <= rank; ++i)
    MPI_Comm_rank(MPI_COMM_WORLD, &n); /* rank */
  MPI_Barrier(MPI_COMM_WORLD);         /* barrier */
  /* Sequential conditions, not alternatives: the compiler cannot merge these calls into one. */
  for (int i = 0; i <= rank && rank % 3 == 0; ++i)
    MPI_Comm_size(MPI_COMM_WORLD, &n); /* size 0 */
  for (int i = 0; i <= rank && rank % 3 == 1; ++i)
    MPI_Comm_size(MPI_COMM_WORLD, &n); /* size 1 */
  for (int i = 0; i <= rank && rank % 3 == 2; ++i)
    MPI_Comm_size(MPI_COMM_WORLD, &n); /* size 2 */
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  const int count = rank < 8 ? rank + 1 : 8;
  MPI_Request request;
  MPI_Isend(out, count, MPI_INT, next, 0, MPI_COMM_WORLD, &request); /* isend */
  MPI_Recv(in, 8, MPI_INT, previous, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  if (rank == 0)
    MPI_Get_processor_name(name, &length); /* name 0 */
  if (rank == 1)
    MPI_Get_processor_name(name, &length); /* name 1 */
  if (rank == 2)
    MPI_Get_processor_name(name, &length); /* name 2 */
  if (rank == 3)
    MPI_Get_processor_name(name, &length); /* name 3 */
  if (rank == 4)
    MPI_Get_processor_name(name, &length); /* name 4 */
  if (rank == 5)
    MPI_Get_processor_name(name, &length); /* name 5 */
  if (rank == 6)
    MPI_Get_processor_name(name, &length); /* name 6 */
  if (rank == 7)
    MPI_Get_processor_name(name, &length); /* name 7 */
  printf("rank %d done\n", rank);
  MPI_Finalize();
  return 0;
}
