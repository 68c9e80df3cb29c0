! A Fortran library without MPI, as C++ codes link them (LAMMPS's math kernels, say): its
! program is still a C++ program. The formatted write needs the Fortran runtime, libgfortran.
subroutine fortran_sum(n, values, total) bind(C, name="fortran_sum")
  use iso_c_binding
  implicit none
  integer(c_int), value :: n
  real(c_double), intent(in) :: values(n)
  real(c_double), intent(out) :: total
  character(len=32) :: text
  write (text, '(f20.3)') sum(values)
  read (text, *) total
end subroutine fortran_sum
