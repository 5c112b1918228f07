/* Communicators made and freed at random (shim/paths/window_pool.h): every rank draws the same sequence from one
 * seed and, step by step, makes a communicator (a dup of MPI_COMM_WORLD or of a live one, a split with drawn colors
 * and keys, a drawn subset of the ranks), frees a drawn live one, or reduces a few times on a drawn live one (0 to
 * 8999 doubles, in place or not); every result is checked on every member. At the end half the live communicators
 * are freed and the rest left to MPI_Finalize.
 *
 *   check_random_comms [SEED] [STEPS]
 *
 * Prints "check_random_comms: ok (C checks)" on rank 0 when every check passed on every rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kMaxLive = 6, kMaxCount = 9000 };
static double g_in[kMaxCount], g_out[kMaxCount];
static unsigned long long g_state;

static unsigned draw(void) {
    g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(g_state >> 33);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world_rank = 0, world_size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    const unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    const int steps = argc > 2 ? atoi(argv[2]) : 300;
    g_state = seed;
    static const int counts[] = {0, 1, 2, 5, 64, 129, 1000, 2049, 8999};
    MPI_Comm live[kMaxLive]; /* MPI_COMM_NULL where this rank is not a member */
    int nlive = 0, failures = 0, checks = 0;
    for (int s = 0; s < steps; ++s) {
        const unsigned action = draw() % 10;
        if (action < 3 && nlive < kMaxLive) {
            MPI_Comm made = MPI_COMM_NULL;
            const unsigned kind = draw() % 4;
            if (kind == 0) {
                MPI_Comm_dup(MPI_COMM_WORLD, &made);
            } else if (kind == 1 && nlive > 0) {
                const unsigned from = draw() % (unsigned)nlive;
                if (live[from] != MPI_COMM_NULL) MPI_Comm_dup(live[from], &made);
            } else if (kind == 2) {
                const unsigned colors = 1 + draw() % 3, salt = draw();
                const int color = (int)(((unsigned)world_rank * 2654435761u ^ salt) % colors);
                const int key = (draw() & 1) ? world_rank : world_size - world_rank;
                MPI_Comm_split(MPI_COMM_WORLD, color, key, &made);
            } else {
                const unsigned members = draw() | 1u; /* world rank 0 always in */
                MPI_Comm_split(MPI_COMM_WORLD, (members >> (world_rank % 32)) & 1u ? 0 : MPI_UNDEFINED, world_rank,
                               &made);
            }
            live[nlive++] = made;
        } else if (action < 5 && nlive > 0) {
            const unsigned i = draw() % (unsigned)nlive;
            if (live[i] != MPI_COMM_NULL) MPI_Comm_free(&live[i]);
            live[i] = live[--nlive];
        } else if (nlive > 0) {
            const unsigned i = draw() % (unsigned)nlive, calls = 1 + draw() % 12;
            for (unsigned k = 0; k < calls; ++k) {
                const int n = counts[draw() % (sizeof counts / sizeof counts[0])];
                const int in_place = draw() & 1;
                if (live[i] == MPI_COMM_NULL) continue;
                int rank = 0, size = 1;
                MPI_Comm_rank(live[i], &rank);
                MPI_Comm_size(live[i], &size);
                for (int e = 0; e < n; ++e) g_in[e] = g_out[e] = rank + 1 + e * 0.5;
                MPI_Allreduce(in_place ? MPI_IN_PLACE : g_in, g_out, n, MPI_DOUBLE, MPI_SUM, live[i]);
                ++checks;
                for (int e = 0; e < n; ++e)
                    if (g_out[e] != size * (size + 1) / 2.0 + size * e * 0.5) {
                        ++failures;
                        printf("rank %d: FAIL step %d: %d doubles on a %d-rank communicator, wrong at %d\n",
                               world_rank, s, n, size, e);
                        break;
                    }
            }
        }
    }
    for (int i = 0; i < nlive; i += 2)
        if (live[i] != MPI_COMM_NULL) MPI_Comm_free(&live[i]);
    int mine[2] = {checks, failures}, total[2] = {0, 0};
    MPI_Allreduce(mine, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) {
        if (total[1] == 0) printf("check_random_comms: ok (%d checks)\n", total[0]);
        else printf("check_random_comms: %d of %d checks FAILED (seed %llu)\n", total[1], total[0], seed);
        /* The same as data, for the test (test_reused_windows.py). */
        printf("{\"check_random_comms\": {\"checks\": %d, \"failures\": %d}}\n", total[0], total[1]);
    }
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
