! The ring with the mpi_f08 bindings (typed handles): under Open MPI they also reach MPI
! through PMPI_, under MPICH through its own glue; Strata must see each call once.
program ring_f08
  use mpi_f08
  implicit none
  integer, parameter :: count = 100
  integer :: rank, nranks, it, i, next, prev, iterations
  integer :: outbuf(count), inbuf(count)
  integer(kind=8) :: checksum, total
  character(len=16) :: arg
  iterations = 10
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read(arg, *) iterations
  end if
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  checksum = 0
  call MPI_Pcontrol(2)
  do it = 0, iterations - 1
    do i = 1, count
      outbuf(i) = rank * 1000 + it + i - 1
    end do
    next = mod(rank + 1, nranks)
    prev = mod(rank + nranks - 1, nranks)
    if (mod(rank, 2) == 0) then
      call MPI_Send(outbuf, count, MPI_INTEGER, next, it, MPI_COMM_WORLD)
      call MPI_Recv(inbuf, count, MPI_INTEGER, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    else
      call MPI_Recv(inbuf, count, MPI_INTEGER, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      call MPI_Send(outbuf, count, MPI_INTEGER, next, it, MPI_COMM_WORLD)
    end if
    do i = 1, count
      checksum = checksum + inbuf(i)
    end do
  end do
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Allreduce(checksum, total, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Pcontrol(0)
  if (rank == 0) then
    write(*, '(a,i0,a,i0,a,i0)') 'ring: ranks=', nranks, ' iterations=', iterations, ' checksum=', total
  end if
  call MPI_Finalize()
end program ring_f08
