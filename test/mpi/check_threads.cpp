// MPI_THREAD_MULTIPLE: two threads per rank call MPI_Allreduce concurrently, each on its own communicator (a dup of
// MPI_COMM_WORLD), interleaving calls of many sizes; every result is checked against a locally computed value.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

long long run(MPI_Comm comm, int thread, int rounds) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long long errors = 0;
    const int counts[] = {1, 7, 1000, 65537, 300000};
    for (int round = 0; round < rounds; ++round)
        for (int count : counts) {
            std::vector<double> in(count), out(count);
            for (int i = 0; i < count; ++i) in[i] = (rank + 1) * (i % 5 + thread + 1) + round;
            MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, comm);
            for (int i = 0; i < count; ++i) {
                const double want = (i % 5 + thread + 1) * (size * (size + 1) / 2.0) + round * size;
                if (out[i] != want) {
                    ++errors;
                    break;
                }
            }
            std::vector<long> mx(count);
            for (int i = 0; i < count; ++i) mx[i] = rank * 3 + i + thread;
            MPI_Allreduce(MPI_IN_PLACE, mx.data(), count, MPI_LONG, MPI_MAX, comm);
            for (int i = 0; i < count; ++i)
                if (mx[i] != (size - 1) * 3 + i + thread) {
                    ++errors;
                    break;
                }
        }
    return errors;
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) std::printf("check_threads: MPI_THREAD_MULTIPLE not provided (%d); skipped\n", provided);
        MPI_Finalize();
        return 77;
    }
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
    MPI_Comm comms[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    long long errors[2] = {0, 0};
    std::thread other([&] { errors[1] = run(comms[1], 1, rounds); });
    errors[0] = run(comms[0], 0, rounds);
    other.join();
    long long mine = errors[0] + errors[1], total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("check_threads: %lld wrong results\n", total);
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    int failed = total != 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
