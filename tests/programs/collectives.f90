! Collectives from Fortran, for the record's collectives by communicator: ITERATIONS times an
! MPI_Allreduce of 2 integers on MPI_COMM_WORLD and an MPI_Bcast of 5 integers from rank 0 of a
! communicator of the ranks of the same parity (MPI_Comm_split). With a second argument
! "neighbours", also each iteration an MPI_Alltoallw on MPI_COMM_WORLD of one element to each
! rank j (an integer to even ranks, a double precision to odd ones) and an
! MPI_Neighbor_allgather of 3 integers on a periodic 1-D Cartesian communicator of the world's
! ranks (two neighbours).
program collectives
  use mpi
  implicit none
  integer, parameter :: most = 16
  integer :: ierr, rank, size, it, iterations, parity, ring, j
  integer :: pair(2), total(2), five(5), three(3), six(6)
  integer :: counts(most), displs(most), types(most), in_types(most)
  double precision :: w_out(most), w_in(most)
  logical :: neighbours
  character(len=16) :: arg
  iterations = 4
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  neighbours = .false.
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    neighbours = trim(arg) == "neighbours"
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, parity, ierr)
  ring = MPI_COMM_NULL
  if (neighbours) then
    call MPI_Cart_create(MPI_COMM_WORLD, 1, [size], [.true.], .false., ring, ierr)
    do j = 1, size
      counts(j) = 1
      displs(j) = 8 * (j - 1)
      if (mod(j - 1, 2) == 0) then
        types(j) = MPI_INTEGER
      else
        types(j) = MPI_DOUBLE_PRECISION
      end if
      if (mod(rank, 2) == 0) then
        in_types(j) = MPI_INTEGER
      else
        in_types(j) = MPI_DOUBLE_PRECISION
      end if
    end do
  end if
  pair = rank
  five = 0
  three = rank
  w_out = 0
  do it = 1, iterations
    call MPI_Allreduce(pair, total, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Bcast(five, 5, MPI_INTEGER, 0, parity, ierr)
    if (neighbours) then
      call MPI_Alltoallw(w_out, counts, displs, types, w_in, counts, displs, in_types, &
                         MPI_COMM_WORLD, ierr)
      call MPI_Neighbor_allgather(three, 3, MPI_INTEGER, six, 3, MPI_INTEGER, ring, ierr)
    end if
  end do
  if (neighbours) call MPI_Comm_free(ring, ierr)
  call MPI_Comm_free(parity, ierr)
  call MPI_Finalize(ierr)
end program collectives
