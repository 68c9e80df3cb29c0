! Two ranks that each receive from the other first: a deadlock in Fortran.
program hang
  use mpi
  implicit none
  integer :: ierr, rank, peer, value
  integer :: status(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  peer = ieor(rank, 1)
  value = rank
  call MPI_Recv(value, 1, MPI_INTEGER, peer, 3, MPI_COMM_WORLD, status, ierr) ! HANG fortran
  call MPI_Send(value, 1, MPI_INTEGER, peer, 3, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program hang
