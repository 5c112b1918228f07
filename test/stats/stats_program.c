/* stats_program: an ordinary MPI program (no ARShim headers) that makes a known set of MPI_Allreduce calls and
 * writes what it did (from rank 0) to EXPECT_FILE as JSON, so that test/stats/stats_test.py can compare ARShim's
 * statistics log with it: calls and bytes per (communicator, datatype class, op, size bucket), fallback reasons,
 * calls per path (ARShim's query API, summed over ranks), paused calls and the call sites.
 *
 *   stats_program EXPECT_FILE [--exit-early | --abort]
 *
 * --exit-early leaves without MPI_Finalize, --abort calls MPI_Abort: neither may damage an earlier log. */
#include <mpi.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ROWS 64
#define NOINLINE __attribute__((noinline))

/* What this rank did, keyed like the log's rows without the path. */
struct row {
    char comm[48];
    const char *dtype, *op;
    int bucket;
    long long calls, bytes;
};
static struct row rows[MAX_ROWS];
static int nrows;
static long long reasons[8]; /* derived_datatype, user_op, noncommutative_op, zero_count, single_rank */
static const char *reason_names[] = {"derived_datatype", "user_op", "noncommutative_op", "zero_count", "single_rank"};
static long long paused_calls;
static long long site_small, site_max; /* calls from small_sums() and max_loop() */
static int world_rank, world_size;

static int bucket_of(long long bytes) {
    int b = 0;
    while (bytes > 0) {
        ++b;
        bytes >>= 1;
    }
    return b;
}

/* The log's label of a communicator with this shape (docs/stats.md). */
static void comm_label(MPI_Comm comm, char *out) {
    int size = 0, inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    MPI_Comm_size(comm, &size);
    MPI_Group group, world;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks[2] = {0, 1}, wr[2] = {0, 0};
    MPI_Group_translate_ranks(group, size > 1 ? 2 : 1, ranks, world, wr);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    int stride = size > 1 ? wr[1] - wr[0] : 1;
    if (size == world_size && stride == 1 && wr[0] == 0) strcpy(out, "world");
    else if (size == 1) strcpy(out, "self");
    else sprintf(out, "size %d stride %d", size, stride);
}

static void note(MPI_Comm comm, const char *dtype, const char *op, long long bytes) {
    char label[48];
    comm_label(comm, label);
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (size == 1) ++reasons[4]; /* single_rank: every call on a one-rank communicator goes native */
    int bucket = bucket_of(bytes);
    for (int i = 0; i < nrows; ++i)
        if (!strcmp(rows[i].comm, label) && rows[i].dtype == dtype && rows[i].op == op && rows[i].bucket == bucket) {
            rows[i].calls++;
            rows[i].bytes += bytes;
            return;
        }
    if (nrows == MAX_ROWS) MPI_Abort(MPI_COMM_WORLD, 3);
    strcpy(rows[nrows].comm, label);
    rows[nrows].dtype = dtype;
    rows[nrows].op = op;
    rows[nrows].bucket = bucket;
    rows[nrows].calls = 1;
    rows[nrows].bytes = bytes;
    ++nrows;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    int size = 0;
    MPI_Type_size(*type, &size);
    for (int i = 0; i < *len * size / (int)sizeof(int); ++i) ((int *)inout)[i] += ((int *)in)[i];
}

/* Call site 1: ten 8-byte double sums. */
NOINLINE static void small_sums(MPI_Comm comm) {
    double x = 1.0, y = 0.0;
    for (int i = 0; i < 10; ++i) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm);
        note(comm, "float", "sum", 8);
        ++site_small;
        if (y != world_size) MPI_Abort(MPI_COMM_WORLD, 4);
    }
}

/* Call site 2: five 4000-byte int max, in place. */
NOINLINE static void max_loop(MPI_Comm comm) {
    static int v[1000];
    for (int i = 0; i < 5; ++i) {
        for (int k = 0; k < 1000; ++k) v[k] = world_rank + k;
        MPI_Allreduce(MPI_IN_PLACE, v, 1000, MPI_INT, MPI_MAX, comm);
        note(comm, "int", "max", 4000);
        ++site_max;
    }
}

NOINLINE static void fallbacks(void) {
    int in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    MPI_Op commutative, noncommutative;
    MPI_Op_create(user_sum, 1, &commutative);
    MPI_Op_create(user_sum, 0, &noncommutative);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int i = 0; i < 2; ++i) {
        MPI_Allreduce(in, out, 3, pair, commutative, MPI_COMM_WORLD);  /* predefined ops need predefined types */
        note(MPI_COMM_WORLD, "derived", "user", 24);
        ++reasons[0];
    }
    MPI_Type_free(&pair);
    for (int i = 0; i < 2; ++i) {
        MPI_Allreduce(in, out, 4, MPI_INT, commutative, MPI_COMM_WORLD);
        note(MPI_COMM_WORLD, "int", "user", 16);
        ++reasons[1];
    }
    MPI_Allreduce(in, out, 4, MPI_INT, noncommutative, MPI_COMM_WORLD);
    note(MPI_COMM_WORLD, "int", "user", 16);
    ++reasons[2];
    MPI_Op_free(&commutative);
    MPI_Op_free(&noncommutative);
    MPI_Allreduce(in, out, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    note(MPI_COMM_WORLD, "int", "sum", 0);
    ++reasons[3];
    for (int i = 0; i < 3; ++i) {
        MPI_Allreduce(in, out, 2, MPI_LONG_LONG, MPI_BOR, MPI_COMM_SELF);
        note(MPI_COMM_SELF, "int", "bor", 16);
    }
}

static long long shim_path_calls(const char *path) {
    long long (*fn)(const char *) = (long long (*)(const char *))dlsym(RTLD_DEFAULT, "arshim_path_calls");
    return fn ? fn(path) : -1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (argc < 2) {
        if (world_rank == 0) fprintf(stderr, "usage: stats_program EXPECT_FILE [--exit-early | --abort]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argc > 2 ? argv[2] : "";

    small_sums(MPI_COMM_WORLD);
    max_loop(MPI_COMM_WORLD);

    /* Paused: routed, not counted. */
    MPI_Pcontrol(0);
    for (int i = 0; i < 7; ++i) {
        double x = 1.0, y = 0.0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ++paused_calls;
    }
    MPI_Pcontrol(1);

    /* A duplicate of the world shares its row; a split by parity has stride 2 (or is a single rank). */
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    small_sums(dup);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    max_loop(half);

    /* Large messages: 1 MiB of floats, twice. */
    int count = 1 << 18;
    float *a = malloc((size_t)count * sizeof(float)), *b = malloc((size_t)count * sizeof(float));
    for (int i = 0; i < count; ++i) a[i] = (float)(i % 5);
    for (int r = 0; r < 2; ++r) {
        MPI_Allreduce(a, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        note(MPI_COMM_WORLD, "float", "sum", (long long)count * 4);
        for (int i = 0; i < count; ++i)
            if (b[i] != (float)(i % 5) * (float)world_size) MPI_Abort(MPI_COMM_WORLD, 5);
    }
    free(a);
    free(b);

    fallbacks();

    if (!strcmp(mode, "--exit-early")) {
        if (world_rank == 0) printf("stats_program: leaving without MPI_Finalize\n");
        fflush(stdout);
        _exit(0);
    }
    if (!strcmp(mode, "--abort")) {
        if (world_rank == 0) printf("stats_program: calling MPI_Abort\n");
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 7);
    }

    /* Expectations: this rank's rows and counters, written by rank 0 after a plain gather (a test program). */
    static const char *paths[] = {"native", "pipelined", "multileader", "sharp", "reproducible", "latency"};
    enum { kPaths = sizeof paths / sizeof paths[0] };
    long long path_calls[kPaths], path_total[kPaths];
    for (int p = 0; p < kPaths; ++p) path_calls[p] = shim_path_calls(paths[p]);
    MPI_Reduce(path_calls, path_total, kPaths, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    char line[256];
    char *mine = malloc(MAX_ROWS * 256 + 1024);
    mine[0] = '\0';
    for (int i = 0; i < nrows; ++i) {
        snprintf(line, sizeof line,
                 "{\"rank\": %d, \"comm\": \"%.47s\", \"datatype\": \"%s\", \"op\": \"%s\", \"bucket\": %d, "
                 "\"calls\": %lld, \"bytes\": %lld},\n",
                 world_rank, rows[i].comm, rows[i].dtype, rows[i].op, rows[i].bucket, rows[i].calls,
                 rows[i].bytes);
        strcat(mine, line);
    }
    int mylen = (int)strlen(mine);
    int *lens = world_rank == 0 ? malloc(sizeof(int) * (size_t)world_size) : NULL;
    MPI_Gather(&mylen, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *displs = NULL, total = 0;
    char *all = NULL;
    if (world_rank == 0) {
        displs = malloc(sizeof(int) * (size_t)world_size);
        for (int r = 0; r < world_size; ++r) {
            displs[r] = total;
            total += lens[r];
        }
        all = malloc((size_t)total + 1);
    }
    MPI_Gatherv(mine, mylen, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    long long counts[3 + 5] = {paused_calls, site_small, site_max}, sums[8];
    for (int i = 0; i < 5; ++i) counts[3 + i] = reasons[i];
    MPI_Reduce(counts, sums, 8, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        all[total] = '\0';
        if (total > 1) all[total - 2] = '\0'; /* drop the last ",\n" */
        FILE *f = fopen(argv[1], "w");
        if (!f) MPI_Abort(MPI_COMM_WORLD, 6);
        fprintf(f, "{\"np\": %d, \"paused\": %lld, \"sites\": {\"small_sums\": %lld, \"max_loop\": %lld},\n",
                world_size, sums[0], sums[1], sums[2]);
        fprintf(f, "\"reasons\": {");
        for (int i = 0; i < 5; ++i) fprintf(f, "%s\"%s\": %lld", i ? ", " : "", reason_names[i], sums[3 + i]);
        fprintf(f, "},\n\"paths\": {");
        for (int p = 0; p < kPaths; ++p) fprintf(f, "%s\"%s\": %lld", p ? ", " : "", paths[p], path_total[p]);
        fprintf(f, "},\n\"rows\": [\n%s\n]}\n", all);
        fclose(f);
        printf("stats_program: %d ranks done\n", world_size);
    }
    free(mine);
    free(all);
    free(lens);
    free(displs);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
