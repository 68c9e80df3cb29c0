! The Strata annotation API for Fortran programs:
!
!   use strata
!   call strata_region_begin("solver")
!   ...
!   call strata_region_end("solver")      ! or call strata_region_end()
!
! The calls reach a small C shim (strata_fortran.c, in the same library) through Fortran's own
! calling convention, so the shim sees the program's call site as its return address. Without
! Strata they cost a call and a test of a null pointer.
module strata
  implicit none
  private
  public :: strata_region_begin, strata_region_end

  interface
    subroutine strata_region_begin(name)
      character(len=*), intent(in) :: name
    end subroutine strata_region_begin

    subroutine strata_region_end(name)
      character(len=*), intent(in), optional :: name
    end subroutine strata_region_end
  end interface
end module strata
