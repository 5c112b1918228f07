// Device buffers never reach ARShim's host code (issue 41; docs/device.md). Linked against the fake CUDA driver
// (fake_cuda.c: "device memory" is mapped PROT_NONE), this program plays a CUDA-aware MPI: its PMPI_Allreduce opens
// the device allocations to the host around the library's own allreduce, as a GPU-aware library reads GPU memory.
// Any other host access to a device buffer (an ARShim path, kernel, copy, verify or SHARP) dies with SIGSEGV; ARShim
// substituting its own (host) op for a device call is counted by the interposer and fails the run.
//
//   check_device PLACEMENT      PLACEMENT: all (every rank's buffers on the device), rank0 (only rank 0's),
//                               alternate (device and host buffers alternate call by call on the same key),
//                               host (the runtime loaded, every buffer on the host)
//
// Every call's result is checked on every rank against values computed here. Prints one JSON line:
// {"ok": true|false, "calls": N, "device_calls": M, "op_substituted": K}.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void* fake_cuda_malloc(size_t size);
void fake_cuda_free(void* p);
int fake_cuda_host_access(int open);
int cuPointerGetAttributes(unsigned count, int* attributes, void** data, unsigned long long ptr);

static int on_device(const void* p) {
    int attribute = 2;
    unsigned type = 0;
    void* data = &type;
    return p != NULL && p != MPI_IN_PLACE && cuPointerGetAttributes(1, &attribute, &data, (uintptr_t)p) == 0 &&
           type == 2;
}

// The "GPU-aware library": the real allreduce, with the device allocations open to it. A device call must arrive
// with a predefined op (ARShim's own ops are host code).
static long op_substituted;
int PMPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    typedef int (*Allreduce)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);
    static Allreduce real;
    if (real == NULL) real = (Allreduce)dlsym(RTLD_NEXT, "PMPI_Allreduce");
    if ((on_device(sendbuf) || on_device(recvbuf)) && op != MPI_SUM && op != MPI_MAX && op != MPI_MIN)
        ++op_substituted;
    const int was = fake_cuda_host_access(1);
    const int rc = real(sendbuf, recvbuf, count, datatype, op, comm);
    fake_cuda_host_access(was);
    return rc;
}

enum { KIND_INT, KIND_DOUBLE, KIND_ULONG };
static const char* kind_name[] = {"int", "double", "unsigned long"};
static size_t kind_size[] = {sizeof(int), sizeof(double), sizeof(unsigned long)};

// Rank r's element i: small integers, so every sum is exact in every order (and no library bug's trigger: the
// unsigned MAX stays below 2^31).
static long value(int rank, size_t i) { return (long)((rank * 7 + (int)(i % 23)) % 41) - 9; }

static void fill(void* buf, int kind, int rank, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const long v = value(rank, i);
        if (kind == KIND_INT) ((int*)buf)[i] = (int)v;
        else if (kind == KIND_DOUBLE) ((double*)buf)[i] = (double)v;
        else ((unsigned long*)buf)[i] = (unsigned long)(v + 100);
    }
}

// Checks buf against the reduction over the communicator's ranks (their world ranks in `members`).
static int check(const void* buf, int kind, MPI_Op op, const int* members, int size, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        long expect = op == MPI_SUM ? 0 : -1000000;
        for (int m = 0; m < size; ++m) {
            const long v = kind == KIND_ULONG ? value(members[m], i) + 100 : value(members[m], i);
            expect = op == MPI_SUM ? expect + v : (v > expect ? v : expect);
        }
        long got = kind == KIND_INT ? ((const int*)buf)[i]
                   : kind == KIND_DOUBLE ? (long)((const double*)buf)[i]
                                         : (long)((const unsigned long*)buf)[i];
        if (kind == KIND_DOUBLE && ((const double*)buf)[i] != (double)expect) got = expect + 1;
        if (got != expect) {
            fprintf(stderr, "check_device: element %zu is %ld, expected %ld\n", i, got, expect);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char* placement = argc > 1 ? argv[1] : "all";
    if (dlsym(RTLD_DEFAULT, "PMPI_Allreduce") != (void*)PMPI_Allreduce) {  // the library must call through us
        fprintf(stderr, "check_device: this program's PMPI_Allreduce is not the one the process uses\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);

    static const size_t counts[] = {0, 1, 7, 1031, 65537};
    const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_UNSIGNED_LONG};
    long calls = 0, device_calls = 0, bad = 0;
    // Each key is called several times, so that served routes are cached and would be replayed; "first" (device
    // buffers in the first 3 rounds, host buffers after) gives each key enough host calls to finish exploring.
    const int rounds = !strcmp(placement, "first") ? 36 : 6;
    for (int round = 0; round < rounds; ++round)
        for (int c = 0; c < 2; ++c) {
            const MPI_Comm comm = c == 0 ? MPI_COMM_WORLD : half;
            int comm_rank, comm_size;
            MPI_Comm_rank(comm, &comm_rank);
            MPI_Comm_size(comm, &comm_size);
            int members[256];
            MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, comm);
            for (int k = 0; k < 3; ++k)
                for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ++ci)
                    for (int in_place = 0; in_place < 2; ++in_place) {
                        const MPI_Op op = k == KIND_INT ? MPI_SUM : k == KIND_DOUBLE ? (round % 2 ? MPI_MAX : MPI_SUM)
                                                                                     : MPI_MAX;
                        const size_t n = counts[ci], bytes = n * kind_size[k];
                        int device = !strcmp(placement, "all") || (!strcmp(placement, "rank0") && rank == 0) ||
                                     (!strcmp(placement, "alternate") && (round + (int)ci) % 2 == 0) ||
                                     (!strcmp(placement, "first") && round < 3);
                        void* send = device ? fake_cuda_malloc(bytes) : malloc(bytes ? bytes : 1);
                        void* recv = device ? fake_cuda_malloc(bytes) : malloc(bytes ? bytes : 1);
                        int was = fake_cuda_host_access(1);
                        fill(in_place ? recv : send, k, rank, n);
                        fake_cuda_host_access(was);
                        const int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)n, types[k], op, comm);
                        was = fake_cuda_host_access(1);
                        const int ok = rc == MPI_SUCCESS && check(recv, k, op, members, comm_size, n);
                        fake_cuda_host_access(was);
                        if (!ok) {
                            fprintf(stderr, "check_device: rank %d: %s %s count %zu%s on %s (%s buffers) wrong\n", rank,
                                    kind_name[k], op == MPI_SUM ? "SUM" : "MAX", n, in_place ? " in place" : "",
                                    c == 0 ? "world" : "half", device ? "device" : "host");
                            ++bad;
                        }
                        ++calls;
                        device_calls += device;
                        if (device) {
                            fake_cuda_free(send);
                            fake_cuda_free(recv);
                        } else {
                            free(send);
                            free(recv);
                        }
                    }
        }
    long totals[3] = {bad, device_calls, op_substituted}, sums[3];
    MPI_Reduce(totals, sums, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"ok\": %s, \"calls\": %ld, \"device_calls\": %ld, \"op_substituted\": %ld}\n",
               sums[0] == 0 && sums[2] == 0 ? "true" : "false", calls * size, sums[1], sums[2]);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
