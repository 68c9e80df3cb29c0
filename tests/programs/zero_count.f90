! Completions of many requests with a count of 0, through `use mpi` and `use mpi_f08`: Open MPI's
! bindings return at once for them, without the C routine by which a tool counts the program's
! calls. Each rank makes 3 + 2 MPI_WAITALL with a count of 0, one with a count of 1, and one of
! each other such routine with a count of 0.
subroutine zero_counts_f08()
  use mpi_f08
  implicit none
  type(MPI_Request) :: none(1)
  call MPI_Waitall(0, none, MPI_STATUSES_IGNORE)
  call MPI_Waitall(0, none, MPI_STATUSES_IGNORE)
end subroutine zero_counts_f08

program zero_count
  use mpi
  implicit none
  integer :: ierr, rank, peer, it, index, outcount, value, got
  integer :: requests(2), indices(2), statuses(MPI_STATUS_SIZE, 2), status(MPI_STATUS_SIZE)
  logical :: flag
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  peer = 1 - rank
  do it = 1, 3
    call MPI_Waitall(0, requests, statuses, ierr)
  end do
  call zero_counts_f08()
  value = rank
  call MPI_Irecv(got, 1, MPI_INTEGER, peer, 1, MPI_COMM_WORLD, requests(1), ierr)
  call MPI_Send(value, 1, MPI_INTEGER, peer, 1, MPI_COMM_WORLD, ierr)
  call MPI_Waitall(1, requests, statuses, ierr)
  call MPI_Waitany(0, requests, index, status, ierr)
  call MPI_Waitsome(0, requests, outcount, indices, statuses, ierr)
  call MPI_Testall(0, requests, flag, statuses, ierr)
  call MPI_Testany(0, requests, index, flag, status, ierr)
  call MPI_Testsome(0, requests, outcount, indices, statuses, ierr)
  call MPI_Finalize(ierr)
end program zero_count
