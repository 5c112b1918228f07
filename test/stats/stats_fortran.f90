! stats_fortran: known MPI_Allreduce calls from Fortran (use mpi_f08), for test/stats/stats_test.py. The lines
! marked "site:" are the call sites the statistics log must name (built with -g: file:line). Under MPICH the calls
! pass through MPICH's Fortran binding library before reaching the C MPI_Allreduce; under Open MPI ARShim's own
! Fortran entry points receive them.
program stats_fortran
  use mpi_f08
  implicit none
  integer :: rank, nprocs, i, errors, total
  double precision :: x, y
  integer :: ia(100)
  real :: a(3000), b(3000)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  errors = 0
  x = 1.0d0
  do i = 1, 4
    call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)  ! site: 4 x 8 B
    if (y /= dble(nprocs)) errors = errors + 1
  end do
  do i = 1, 2
    ia = rank
    call MPI_Allreduce(MPI_IN_PLACE, ia, 100, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)  ! site: 2 x 400 B
    if (ia(1) /= nprocs - 1) errors = errors + 1
  end do
  a = 1.0
  call MPI_Allreduce(a, b, 3000, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)  ! site: 1 x 12000 B
  if (b(3000) /= real(nprocs)) errors = errors + 1
  call MPI_Reduce(errors, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'stats_fortran: ', nprocs, ' ranks, all results correct'
    else
      print '(a,i0,a)', 'stats_fortran: ', total, ' WRONG RESULTS'
    end if
  end if
  call MPI_Finalize()
  if (total /= 0) stop 1
end program stats_fortran
