! Nonblocking Fortran: a ring of MPI_Irecv/MPI_Isend completed with MPI_Waitall, one with
! MPI_Wait and one polled with MPI_Test, as NPB's Fortran kernels do. Under both MPIs the
! bindings convert handles and statuses (MPI_Comm_f2c, MPI_Request_c2f, MPI_Status_c2f, ...)
! around each call: the library's own calls, which no record may count as the program's. Each
! rank says on standard error how many MPI_Test calls it made (the count depends on timing).
program nonblocking
  use mpi
  implicit none
  integer :: ierr, rank, nranks, next, prev, it, iterations, tests
  logical :: done
  integer :: requests(2), statuses(MPI_STATUS_SIZE, 2), status(MPI_STATUS_SIZE)
  integer :: out, in
  character(len=16) :: arg
  iterations = 5
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  do it = 1, iterations
    out = rank * 100 + it
    call MPI_Irecv(in, 1, MPI_INTEGER, prev, it, MPI_COMM_WORLD, requests(1), ierr) ! MARK:irecv
    call MPI_Isend(out, 1, MPI_INTEGER, next, it, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Waitall(2, requests, statuses, ierr) ! MARK:waitall
  end do
  call MPI_Irecv(in, 1, MPI_INTEGER, prev, 0, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Send(out, 1, MPI_INTEGER, next, 0, MPI_COMM_WORLD, ierr)
  call MPI_Wait(requests(1), status, ierr) ! MARK:wait
  call MPI_Irecv(in, 1, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Send(out, 1, MPI_INTEGER, next, 1, MPI_COMM_WORLD, ierr)
  done = .false.
  tests = 0
  do while (.not. done)
    call MPI_Test(requests(1), done, status, ierr) ! MARK:test
    tests = tests + 1
  end do
  if (rank == 0) print '(a,i0,a,i0)', 'nonblocking: ranks=', nranks, ' last=', in
  write (0, '(a,i0,a,i0)') 'nonblocking: rank ', rank, ' tests=', tests
  call MPI_Finalize(ierr)
end program nonblocking
