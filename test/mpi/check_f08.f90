! mpi_f08 bindings: Open MPI's mpi_allreduce_f08_ calls PMPI_Allreduce directly, so ARShim exports it too.
! Checks results with and without MPI_IN_PLACE, and with the optional ierror argument omitted.
program check_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 777
  integer :: rank, nprocs, i, errors, total
  real :: x(n), y(n)
  integer(kind=8) :: k(n)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  errors = 0
  do i = 1, n
    x(i) = real(rank + i)
  end do
  call MPI_Allreduce(x, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, n
    if (y(i) /= real(nprocs * i + nprocs * (nprocs - 1) / 2)) errors = errors + 1
  end do
  do i = 1, n
    k(i) = int(rank, 8) * 100000_8 - int(i, 8)
  end do
  call MPI_Allreduce(MPI_IN_PLACE, k, n, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD)
  do i = 1, n
    if (k(i) /= -int(i, 8)) errors = errors + 1
  end do
  call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'check_f08: ', nprocs, ' ranks, all results correct (3 allreduce calls per rank)'
    else
      print '(a,i0,a)', 'check_f08: ', total, ' WRONG RESULTS'
    end if
  end if
  call MPI_Finalize()
  if (total /= 0) stop 1
end program check_f08
