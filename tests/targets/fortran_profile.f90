! fortran_profile.f90 - profiling driven through the Fortran bindings:
! CPU work in spin_a, ps_hwpc_suspend, work in spin_b, ps_hwpc_start again,
! work in spin_c, ps_hwpc_stop('fortran_profile'), ps_hwpc_shutdown.  Run
! with PS_HWPC_CONFIG naming a <ps_hwpc_profile>; the first argument is the
! work per function (millions of loop iterations, 100 without one).  Prints
! the six return codes.
subroutine spin_a(n)
  implicit none
  integer, intent(in) :: n
  integer :: i
  double precision, volatile :: x
  x = 0
  do i = 1, n * 1000000
    x = x + i * 0.5d0
  end do
end subroutine spin_a

subroutine spin_b(n)
  implicit none
  integer, intent(in) :: n
  integer :: i
  double precision, volatile :: x
  x = 0
  do i = 1, n * 1000000
    x = x + i * 0.5d0
  end do
end subroutine spin_b

subroutine spin_c(n)
  implicit none
  integer, intent(in) :: n
  integer :: i
  double precision, volatile :: x
  x = 0
  do i = 1, n * 1000000
    x = x + i * 0.5d0
  end do
end subroutine spin_c

program fortran_profile
  implicit none
  integer :: rc(6), n
  character(len=32) :: arg
  character(len=40) :: name = 'fortran_profile'  ! blank-padded, as Fortran passes it

  n = 100
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  call ps_hwpc_init(rc(1))
  call ps_hwpc_start(rc(2))
  call spin_a(n)
  call ps_hwpc_suspend(rc(3))
  call spin_b(n)
  call ps_hwpc_start(rc(4))
  call spin_c(n)
  call ps_hwpc_stop(name, rc(5))
  call ps_hwpc_shutdown(rc(6))
  print '(6(I0, 1X))', rc
end program fortran_profile
