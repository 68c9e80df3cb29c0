! Collectives from Fortran, for the record's collectives by communicator: ITERATIONS times an
! MPI_Allreduce of 2 integers on MPI_COMM_WORLD and an MPI_Bcast of 5 integers from rank 0 of a
! communicator of the ranks of the same parity (MPI_Comm_split).
program collectives
  use mpi
  implicit none
  integer :: ierr, rank, it, iterations, parity
  integer :: pair(2), total(2), five(5)
  character(len=16) :: arg
  iterations = 4
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, parity, ierr)
  pair = rank
  five = 0
  do it = 1, iterations
    call MPI_Allreduce(pair, total, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Bcast(five, 5, MPI_INTEGER, 0, parity, ierr)
  end do
  call MPI_Comm_free(parity, ierr)
  call MPI_Finalize(ierr)
end program collectives
