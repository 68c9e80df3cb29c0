! Partitioned sends from Fortran (MPI 4): each rank sends 3 partitions of rank + 2 integers to the
! next rank (wrapping) through one MPI_Psend_init request and receives through one
! MPI_Precv_init, started ITERATIONS times (by MPI_Startall in odd iterations, MPI_Start each in
! even ones), each partition marked ready by MPI_Pready, for the communication matrix's
! "partitioned" kind: one message of all the partitions per start.
program partitioned
  use mpi
  implicit none
  integer, parameter :: parts = 3
  integer :: ierr, rank, nranks, next, prev, it, iterations, p
  integer :: requests(2), statuses(MPI_STATUS_SIZE, 2)
  integer :: out(parts * 64), in(parts * 64)
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
  call MPI_Precv_init(in, parts, prev + 2, MPI_INTEGER, prev, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &
                      requests(1), ierr)
  call MPI_Psend_init(out, parts, rank + 2, MPI_INTEGER, next, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &
                      requests(2), ierr)
  do it = 1, iterations
    if (mod(it, 2) == 1) then
      call MPI_Startall(2, requests, ierr)
    else
      call MPI_Start(requests(1), ierr)
      call MPI_Start(requests(2), ierr)
    end if
    do p = 0, parts - 1
      call MPI_Pready(p, requests(2), ierr)
    end do
    call MPI_Waitall(2, requests, statuses, ierr)
  end do
  call MPI_Request_free(requests(1), ierr)
  call MPI_Request_free(requests(2), ierr)
  if (rank == 0) print '(a,i0)', 'partitioned: ranks=', nranks
  call MPI_Finalize(ierr)
end program partitioned
