/* Argument-check test program (test/verify/test_verify.py): rank 1 calls MPI_Allreduce with arguments that differ
 * from the other ranks' in one way, which MPI forbids and which can hang or corrupt on any path.
 *
 *   check_args --mismatch count|datatype|op|inplace|legal|none [--errors return|fatal] [--count N]
 *
 * legal: every rank passes a derived datatype of two ints, rank 1 built with MPI_Type_vector, the others with
 * MPI_Type_contiguous, and a user op that sums them: the same datatype as MPI sees it (same type map), which the
 * check must accept (predefined ops are not defined on derived datatypes). With
 * --errors return (MPI_ERRORS_RETURN on the
 * communicator) every rank prints the error class it got, then a correct allreduce shows the communicator still
 * works; with fatal (the default handler) the job is expected to end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sum_int_pairs(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < 2 * *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mismatch = "none", *errors = "return";
    int count = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mismatch")) mismatch = argv[i + 1];
        else if (!strcmp(argv[i], "--errors")) errors = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (!strcmp(errors, "return")) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    int *send = calloc((size_t)count + 1, sizeof(int)), *recv = calloc((size_t)count + 1, sizeof(int));
    for (int i = 0; i <= count; ++i) send[i] = rank + i;
    const int odd = rank == 1;
    int n = count;
    MPI_Datatype type = MPI_INT, pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op op = MPI_SUM;
    const void *sendbuf = send;
    if (odd && !strcmp(mismatch, "count")) n = count + 1;
    if (odd && !strcmp(mismatch, "datatype")) type = MPI_FLOAT;
    if (odd && !strcmp(mismatch, "op")) op = MPI_MAX;
    if (odd && !strcmp(mismatch, "inplace")) {
        memcpy(recv, send, sizeof(int) * (size_t)count);
        sendbuf = MPI_IN_PLACE;
    }
    if (!strcmp(mismatch, "legal")) {
        MPI_Type_free(&pair);
        if (odd) MPI_Type_vector(2, 1, 1, MPI_INT, &pair);
        else MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        type = pair, n = count / 2;
        MPI_Op_create(sum_int_pairs, 1, &op);
    }

    const double start = MPI_Wtime();
    const int rc = MPI_Allreduce(sendbuf, recv, n, type, op, comm);
    int error_class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &error_class);
    const double seconds = MPI_Wtime() - start;
    const char *outcome =
        error_class == MPI_SUCCESS ? "MPI_SUCCESS" : error_class == MPI_ERR_ARG ? "MPI_ERR_ARG" : "another error";
    printf("check_args: rank %d: %s after %.3f s\n", rank, outcome, seconds);
    fflush(stdout);  /* seen even if the fatal handler ends the job below */
    int right = 1;
    if (rc == MPI_SUCCESS)
        for (int i = 0; i < (count & ~1); ++i) right &= recv[i] == size * (size - 1) / 2 + size * i;
    if (rc == MPI_SUCCESS && !right) printf("check_args: rank %d: WRONG RESULT\n", rank);

    /* The communicator still works. */
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, comm);
    if (total != size) printf("check_args: rank %d: the communicator is broken afterwards\n", rank);
    /* Each rank's outcome as data, for the test (test_verify.py). */
    printf("{\"check_args\": {\"rank\": %d, \"outcome\": \"%s\", \"seconds\": %.3f, \"right\": %s, "
           "\"comm_works\": %s}}\n", rank, outcome, seconds, right ? "true" : "false", total == size ? "true" : "false");
    MPI_Type_free(&pair);
    if (op != MPI_SUM && op != MPI_MAX) MPI_Op_free(&op);
    MPI_Comm_free(&comm);
    free(send);
    free(recv);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
