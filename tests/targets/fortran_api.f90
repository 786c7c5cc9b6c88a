! fortran_api.f90 - the Fortran bindings of the C API as a Fortran program
! calls them (gfortran appends "_", passes the string length last):
! init, start, suspend, read, numevents, stop(name), shutdown, each
! checked.  Prints the number of events and the page-fault count of a
! region that touches PAGES fresh pages (first argument, 1000 without one).
program fortran_api
  implicit none
  integer :: ierr, n, i, pages
  integer(kind=8) :: values(64)
  character(len=32) :: arg
  character(len=40) :: name = 'fortran_region'  ! blank-padded, as Fortran passes it
  character(len=4096), allocatable :: region(:)

  pages = 1000  ! without an argument
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) pages
  end if
  call ps_hwpc_init(ierr)
  call check('init', ierr)
  call ps_hwpc_start(ierr)
  call check('start', ierr)
  allocate (region(pages))
  do i = 1, pages
    region(i)(1:1) = 'x'
  end do
  call ps_hwpc_suspend(ierr)
  call check('suspend', ierr)
  call ps_hwpc_numevents(n, ierr)
  call check('numevents', ierr)
  call ps_hwpc_read(values, ierr)
  call check('read', ierr)
  call ps_hwpc_stop(name, ierr)
  call check('stop', ierr)
  call ps_hwpc_shutdown(ierr)
  call check('shutdown', ierr)
  print '(I0, 1X, I0)', n, values(1)
  deallocate (region)

contains

  subroutine check(what, code)
    character(len=*), intent(in) :: what
    integer, intent(in) :: code
    if (code /= 0) then
      print '(A, A, I0)', what, ' failed: ', code
      stop 1
    end if
  end subroutine check

end program fortran_api
