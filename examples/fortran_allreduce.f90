! fortran_allreduce: an ordinary Fortran MPI program (use mpi) that allreduces with and without MPI_IN_PLACE and
! checks the results. Under Open MPI the Fortran bindings call PMPI_Allreduce directly, so ARShim must intercept the
! Fortran symbol itself and recognize Fortran's MPI_IN_PLACE sentinel.
program fortran_allreduce
  use mpi
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, nprocs, i, errors, total_errors
  double precision :: a(n), b(n), expected
  integer :: ia(n), ib(n), imax

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  errors = 0

  ! out of place, double precision SUM
  do i = 1, n
    a(i) = dble(rank + 1) * dble(mod(i, 13))
    b(i) = -1.0d0
  end do
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    expected = dble(mod(i, 13)) * dble(nprocs * (nprocs + 1) / 2)
    if (b(i) /= expected) errors = errors + 1
  end do
  ! the send buffer is untouched
  do i = 1, n
    if (a(i) /= dble(rank + 1) * dble(mod(i, 13))) errors = errors + 1
  end do

  ! in place, double precision SUM
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (a(i) /= b(i)) errors = errors + 1
  end do

  ! in place, INTEGER MAX
  do i = 1, n
    ia(i) = rank * 1000 + i
  end do
  call MPI_Allreduce(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (ia(i) /= (nprocs - 1) * 1000 + i) errors = errors + 1
  end do

  ! out of place, INTEGER SUM, then the error count itself
  ib = 0
  ia = 1
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (ib(i) /= nprocs) errors = errors + 1
  end do
  imax = 0
  call MPI_Allreduce(errors, total_errors, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)

  if (rank == 0) then
    if (total_errors == 0) then
      print '(a,i0,a)', 'fortran_allreduce: ', nprocs, ' ranks, all results correct (5 allreduce calls per rank)'
    else
      print '(a,i0,a)', 'fortran_allreduce: ', total_errors, ' WRONG RESULTS'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total_errors /= 0) stop 1
end program fortran_allreduce
