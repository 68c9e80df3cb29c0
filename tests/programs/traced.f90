! Fortran annotations for the trace tests: the `strata` module's regions around MPI calls.
program traced
  use mpi
  use strata
  implicit none
  integer :: ierr, rank, nranks, value, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  value = rank
  call strata_region_begin("fortran_outer") ! MARK:f_outer
  call strata_region_begin("fortran_inner")
  call MPI_Allreduce(value, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call strata_region_end("fortran_inner")
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call strata_region_end()
  if (rank == 0) print '(a,i0)', 'traced_f90: total ', total
  call MPI_Finalize(ierr)
end program traced
