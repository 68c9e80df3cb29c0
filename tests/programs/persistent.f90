! Persistent requests from Fortran: each rank sends rank + 1 integers to the next rank (wrapping)
! through one MPI_Send_init request and receives through one MPI_Recv_init, started ITERATIONS
! times (by MPI_Startall in odd iterations, MPI_Start each in even ones), for the communication
! matrix's "persistent" kind.
program persistent
  use mpi
  implicit none
  integer :: ierr, rank, nranks, next, prev, it, iterations
  integer :: requests(2), statuses(MPI_STATUS_SIZE, 2)
  integer :: out(64), in(64)
  character(len=16) :: arg
  iterations = 4
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  out = rank
  call MPI_Recv_init(in, prev + 1, MPI_INTEGER, prev, 5, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Send_init(out, rank + 1, MPI_INTEGER, next, 5, MPI_COMM_WORLD, requests(2), ierr)
  do it = 1, iterations
    if (mod(it, 2) == 1) then
      call MPI_Startall(2, requests, ierr)
    else
      call MPI_Start(requests(1), ierr)
      call MPI_Start(requests(2), ierr)
    end if
    call MPI_Waitall(2, requests, statuses, ierr)
  end do
  call MPI_Request_free(requests(1), ierr)
  call MPI_Request_free(requests(2), ierr)
  if (rank == 0) print '(a,i0)', 'persistent: ranks=', nranks
  call MPI_Finalize(ierr)
end program persistent
