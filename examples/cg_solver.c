/* cg_solver: an ordinary MPI program (no ARShim headers), the small-message example. It solves the 3-D Poisson
 * problem with the conjugate-gradient method and measures the time per CG iteration, whose only global
 * communication is two MPI_Allreduce calls of ONE double each (p.Ap and r.r; a third, MPI_MAX, with
 * --extra-check), next to a halo exchange of two (N+2)^2-double planes with the neighbouring ranks: the 8-byte
 * allreduce latency that Krylov solvers are bound by at scale.
 *
 *   mpirun -n 4 ./cg_solver [--n 64] [--iters 200] [--tol 1e-8] [--warmup 10] [--repeat 1] [--extra-check]
 *                           [--history] [--json]
 *
 * Problem: -Laplace(u) = f on the unit cube, u = 0 on the boundary, N interior grid points per dimension (spacing
 * h = 1/(N+1)), the 7-point stencil scaled by h^2: (A v)_ijk = 6 v_ijk - (the six neighbours; 0 outside). The
 * right-hand side is manufactured, f = A u* on the grid with
 *   u*(x,y,z) = sin(pi x) sin(pi y) sin(pi z) (1 + x + 2 y^2 + 3 z^3),
 * so the discrete solution is u* itself (up to the rounding of f) and the error of the computed x is known. (A plain
 * product of sines would be an eigenvector of A and CG would stop after one iteration.)
 *
 * Decomposition: 1-D slabs in z. Rank r owns N/P planes, one more if r < N % P (so N need not be a multiple of the
 * rank count, but N >= P); each plane is stored with a ghost ring in x and y, and one ghost plane above and below,
 * exchanged with MPI_Sendrecv before every product with A (MPI_PROC_NULL at the cube's faces). One dimension keeps
 * the halo exchange to two contiguous messages per rank and iteration, so the allreduces stay the part that varies.
 *
 * CG, from x = 0 (r = p = f): per iteration  q = A p;  alpha = (r.r) / (p.q);  x += alpha p;  r -= alpha q;
 * r.r;  beta = (r.r)_new / (r.r)_old;  p = r + beta p. The relative residual ||r||_2 / ||f||_2 of every iteration
 * is the "history"; with --extra-check also max|r_i| / max|f_i| (MPI_MAX), and the solve stops only when both are
 * below --tol. Every rank holds the same history (the dot products come from the allreduces); the program checks it.
 *
 * Timing: --warmup W iterations of an untimed solve first (connection set-up, ARShim's context and its tuning's
 * first calls), then --repeat R solves from x = 0, each timed from a barrier to its last iteration (the slowest
 * rank's time). Reported: the median, min and max over the R solves of the time per iteration, and of the time per
 * iteration spent inside the allreduces (which includes waiting there for the slowest rank's compute and halo
 * exchange). The R histories must be bit-identical (reported as histories_identical).
 *
 * Verification, computed by the program itself after the last solve:
 *   - the true residual f - A x (recomputed, not the recurrence's) and its relative 2-norm;
 *   - the error max|x - u*| (MPI_MAX) against a bound that holds whether or not CG converged: with e = x - u*,
 *     A e = (f - r) - A u*, so ||e||_max <= ||e||_2 <= (||r||_2 + ||d||_2) / lambda_min, where d is the rounding in
 *     computing f and r (each entry a 7-term sum of terms <= 6 M, M = max(|u*|, |x|), so |d_i| <= 2 * 8 * 12 eps M
 *     with room; taken as 256 eps M sqrt(N^3)) and lambda_min = 12 sin^2(pi h / 2) is A's smallest eigenvalue.
 *     The bound is 1.001 times that. It is rigorous but pessimistic (the final residual is mostly high-frequency,
 *     which A^-1 scales by ~1/12, not 1 / lambda_min): at N = 64, tol 1e-8, 2.1e-6 against an error of 2.9e-11;
 *     at N = 16, 1.7e-7 against 1.3e-10. It holds whether or not CG converged, so an iteration limit is no failure.
 * Exit status 1 if the solve diverged (NaN, breakdown p.q <= 0, or relative residual above 10), the error exceeds
 * the bound, the recurrence claimed convergence that the true residual contradicts (true relative residual above
 * 10 tol + 100 eps kappa, kappa = A's condition number: more than rounding can explain), or the ranks' histories
 * differ. Reaching --iters without converging is reported (status "iteration_limit"), not a failure. 2: bad usage.
 *
 * Output (rank 0): with --history, "iter K RELRES" per iteration of the first timed solve (%.17g, so runs compare
 * bit for bit); then a few summary lines, or with --json one JSON line holding n, ranks, iterations,
 * time_per_iter_us {median, min, max}, the final relative residual, the error, and history_digest: 64-bit FNV-1a
 * over the little-endian bytes of every history value (2-norm then, with --extra-check, max-norm, per iteration).
 * Two runs with the same n, ranks and flags have equal digests iff their histories are bit-identical. */
#define _DEFAULT_SOURCE /* M_PI under -std=c11 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

#if defined(OPEN_MPI)
#define MPI_FLAVOR "openmpi"
#elif defined(MPICH_VERSION)
#define MPI_FLAVOR "mpich"
#else
#define MPI_FLAVOR "unknown"
#endif

typedef struct {
    int n;         /* interior points per dimension */
    int nz;        /* planes this rank owns */
    int z0;        /* global index (0-based) of its first plane */
    int up, down;  /* ranks holding the planes above (z0 + nz) and below (z0 - 1), or MPI_PROC_NULL */
    size_t plane;  /* (n + 2)^2 */
    size_t total;  /* (nz + 2) * plane: local arrays with ghost planes */
} Grid;

static inline size_t at(const Grid *g, int i, int j, int k) {
    return ((size_t)k * (size_t)(g->n + 2) + (size_t)j) * (size_t)(g->n + 2) + (size_t)i;
}

/* Fills v's ghost planes from the neighbours (zeros at the cube's faces stay zero: MPI_PROC_NULL leaves them). */
static void halo_exchange(const Grid *g, double *v) {
    int count = (int)g->plane;
    /* my top plane up, my bottom ghost from below; then my bottom plane down, my top ghost from above */
    MPI_Sendrecv(v + at(g, 0, 0, g->nz), count, MPI_DOUBLE, g->up, 1, v + at(g, 0, 0, 0), count, MPI_DOUBLE, g->down,
                 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(v + at(g, 0, 0, 1), count, MPI_DOUBLE, g->down, 2, v + at(g, 0, 0, g->nz + 1), count, MPI_DOUBLE,
                 g->up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* q = A v on the owned points; v's ghosts must be current. */
static void apply_a(const Grid *g, const double *v, double *q) {
    const size_t sj = (size_t)(g->n + 2), sk = g->plane;
    for (int k = 1; k <= g->nz; ++k)
        for (int j = 1; j <= g->n; ++j) {
            size_t c = at(g, 1, j, k);
            for (int i = 0; i < g->n; ++i, ++c)
                q[c] = 6.0 * v[c] - v[c - 1] - v[c + 1] - v[c - sj] - v[c + sj] - v[c - sk] - v[c + sk];
        }
}

static double local_dot(const Grid *g, const double *a, const double *b) {
    double s = 0.0;
    for (int k = 1; k <= g->nz; ++k)
        for (int j = 1; j <= g->n; ++j) {
            size_t c = at(g, 1, j, k);
            for (int i = 0; i < g->n; ++i, ++c) s += a[c] * b[c];
        }
    return s;
}

static double local_max_abs(const Grid *g, const double *a) {
    double m = 0.0;
    for (int k = 1; k <= g->nz; ++k)
        for (int j = 1; j <= g->n; ++j) {
            size_t c = at(g, 1, j, k);
            for (int i = 0; i < g->n; ++i, ++c) {
                double v = fabs(a[c]);
                if (v > m || v != v) m = v; /* a NaN wins, so it is seen */
            }
        }
    return m;
}

static double exact_solution(double x, double y, double z) {
    return sin(M_PI * x) * sin(M_PI * y) * sin(M_PI * z) * (1.0 + x + 2.0 * y * y + 3.0 * z * z * z);
}

static uint64_t fnv1a_double(uint64_t hash, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    for (int b = 0; b < 8; ++b) {
        hash ^= (bits >> (8 * b)) & 0xffu;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

enum { ST_CONVERGED, ST_LIMIT, ST_DIVERGED };

typedef struct {
    int iterations;
    int status;
    double time;       /* seconds from the barrier to the last iteration (this rank) */
    double allreduce;  /* seconds of it inside MPI_Allreduce (this rank) */
    uint64_t digest;
} Solve;

/* One CG solve from x = 0 of at most max_iters iterations. Writes history (2-norm, and max-norm when extra) when
 * it is not NULL. */
static Solve cg(const Grid *g, const double *f, double *x, double *r, double *p, double *q, int max_iters,
                double tol, int extra, double f_norm, double f_max, double *hist2, double *histmax) {
    Solve s = {0, ST_LIMIT, 0.0, 0.0, 0xcbf29ce484222325ULL};
    memset(x, 0, g->total * sizeof(double));
    memcpy(r, f, g->total * sizeof(double));
    memcpy(p, f, g->total * sizeof(double));
    double rr_local = local_dot(g, r, r), rr;
    MPI_Allreduce(&rr_local, &rr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), in_allreduce = 0.0;
    for (int it = 0; it < max_iters; ++it) {
        halo_exchange(g, p);
        apply_a(g, p, q);
        double pq_local = local_dot(g, p, q), pq;
        double a0 = MPI_Wtime();
        MPI_Allreduce(&pq_local, &pq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        in_allreduce += MPI_Wtime() - a0;
        if (!(pq > 0.0)) { /* breakdown (A is SPD) or NaN: the same verdict on every rank */
            s.status = ST_DIVERGED;
            s.iterations = it;
            break;
        }
        double alpha = rr / pq;
        for (int k = 1; k <= g->nz; ++k)
            for (int j = 1; j <= g->n; ++j) {
                size_t c = at(g, 1, j, k);
                for (int i = 0; i < g->n; ++i, ++c) {
                    x[c] += alpha * p[c];
                    r[c] -= alpha * q[c];
                }
            }
        double rr_new_local = local_dot(g, r, r), rr_new;
        a0 = MPI_Wtime();
        MPI_Allreduce(&rr_new_local, &rr_new, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        in_allreduce += MPI_Wtime() - a0;
        double rel = sqrt(rr_new) / f_norm, rel_max = 0.0;
        s.digest = fnv1a_double(s.digest, rel);
        if (hist2) hist2[it] = rel;
        if (extra) {
            double m_local = local_max_abs(g, r), m;
            a0 = MPI_Wtime();
            MPI_Allreduce(&m_local, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            in_allreduce += MPI_Wtime() - a0;
            rel_max = m / f_max;
            s.digest = fnv1a_double(s.digest, rel_max);
            if (histmax) histmax[it] = rel_max;
        }
        s.iterations = it + 1;
        if (rel != rel || rel > 10.0 || (extra && rel_max != rel_max)) {
            s.status = ST_DIVERGED;
            break;
        }
        if (rel < tol && (!extra || rel_max < tol)) {
            s.status = ST_CONVERGED;
            break;
        }
        double beta = rr_new / rr;
        rr = rr_new;
        for (int k = 1; k <= g->nz; ++k)
            for (int j = 1; j <= g->n; ++j) {
                size_t c = at(g, 1, j, k);
                for (int i = 0; i < g->n; ++i, ++c) p[c] = r[c] + beta * p[c];
            }
    }
    s.time = MPI_Wtime() - t0;
    s.allreduce = in_allreduce;
    return s;
}

static int usage(int rank, const char *program) {
    if (rank == 0)
        fprintf(stderr,
                "usage: %s [--n N] [--iters K] [--tol T] [--warmup W] [--repeat R] [--extra-check] [--history] "
                "[--json]\n",
                program);
    return 2;
}

static int int_arg(const char *text, int min, int *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < min || v > 1000000000L) return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int n = 64, max_iters = 200, warmup = 10, repeat = 1, extra = 0, history = 0, json = 0, ok = 1;
    double tol = 1e-8;
    for (int a = 1; a < argc && ok; ++a) {
        const char *opt = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(opt, "--extra-check")) extra = 1;
        else if (!strcmp(opt, "--history")) history = 1;
        else if (!strcmp(opt, "--json")) json = 1;
        else if (val == NULL) ok = 0;
        else if (!strcmp(opt, "--n")) ok = int_arg(val, 1, &n), ++a;
        else if (!strcmp(opt, "--iters")) ok = int_arg(val, 1, &max_iters), ++a;
        else if (!strcmp(opt, "--warmup")) ok = int_arg(val, 0, &warmup), ++a;
        else if (!strcmp(opt, "--repeat")) ok = int_arg(val, 1, &repeat), ++a;
        else if (!strcmp(opt, "--tol")) {
            char *end;
            tol = strtod(val, &end);
            ok = end != val && *end == '\0' && tol >= 0.0 && tol < 1.0;
            ++a;
        } else ok = 0;
        if (!ok && rank == 0) fprintf(stderr, "cg_solver: bad option or value: %s%s%s\n", opt, val ? " " : "", val ? val : "");
    }
    if (ok && n < size) {
        if (rank == 0) fprintf(stderr, "cg_solver: --n %d is smaller than the %d ranks (one z-plane each at least)\n", n, size);
        ok = 0;
    }
    if (ok && (double)n * n * (n / size + 3) * 8.0 * 4.0 > 8e9) {
        if (rank == 0) fprintf(stderr, "cg_solver: --n %d needs more than 8 GB per rank\n", n);
        ok = 0;
    }
    if (!ok) {
        usage(rank, argv[0]);
        MPI_Finalize();
        return 2;
    }

    Grid g;
    g.n = n;
    g.nz = n / size + (rank < n % size);
    g.z0 = rank * (n / size) + (rank < n % size ? rank : n % size);
    g.up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    g.down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    g.plane = (size_t)(n + 2) * (size_t)(n + 2);
    g.total = (size_t)(g.nz + 2) * g.plane;

    double *u = calloc(g.total, sizeof(double)), *f = calloc(g.total, sizeof(double));
    double *x = calloc(g.total, sizeof(double)), *r = calloc(g.total, sizeof(double));
    double *p = calloc(g.total, sizeof(double)), *q = calloc(g.total, sizeof(double));
    double *hist2 = calloc((size_t)max_iters, sizeof(double));
    double *histmax = calloc((size_t)max_iters, sizeof(double));
    double *per_iter = calloc((size_t)repeat, sizeof(double)), *ar_per_iter = calloc((size_t)repeat, sizeof(double));
    if (!u || !f || !x || !r || !p || !q || !hist2 || !histmax || !per_iter || !ar_per_iter) {
        fprintf(stderr, "cg_solver: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* u* on the owned points (ghosts zero), f = A u* */
    const double h = 1.0 / (n + 1);
    for (int k = 1; k <= g.nz; ++k)
        for (int j = 1; j <= n; ++j)
            for (int i = 1; i <= n; ++i) u[at(&g, i, j, k)] = exact_solution(i * h, j * h, (g.z0 + k) * h);
    halo_exchange(&g, u);
    apply_a(&g, u, f);
    double norms_local[2] = {local_dot(&g, f, f), local_max_abs(&g, f)}, f_norm, f_max, u_max_local = local_max_abs(&g, u), u_max;
    MPI_Allreduce(&norms_local[0], &f_norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&norms_local[1], &f_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&u_max_local, &u_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    f_norm = sqrt(f_norm);

    /* warm-up: untimed, history discarded */
    if (warmup > 0) cg(&g, f, x, r, p, q, warmup < max_iters ? warmup : max_iters, tol, extra, f_norm, f_max, NULL, NULL);

    Solve first = {0};
    int histories_identical = 1;
    for (int rep = 0; rep < repeat; ++rep) {
        Solve s = cg(&g, f, x, r, p, q, max_iters, tol, extra, f_norm, f_max, rep == 0 ? hist2 : NULL,
                     rep == 0 ? histmax : NULL);
        double mine[2] = {s.time, s.allreduce}, slowest[2];
        MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        int its = s.iterations > 0 ? s.iterations : 1;
        per_iter[rep] = slowest[0] / its;
        ar_per_iter[rep] = slowest[1] / its;
        if (rep == 0) first = s;
        else if (s.digest != first.digest || s.iterations != first.iterations) histories_identical = 0;
    }

    /* verification on the last solve's x (every solve is the same computation) */
    halo_exchange(&g, x);
    apply_a(&g, x, q);
    double err_local = 0.0, res_local = 0.0, x_max_local = local_max_abs(&g, x);
    for (int k = 1; k <= g.nz; ++k)
        for (int j = 1; j <= n; ++j) {
            size_t c = at(&g, 1, j, k);
            for (int i = 0; i < n; ++i, ++c) {
                double d = f[c] - q[c], e = fabs(x[c] - u[c]);
                res_local += d * d;
                if (e > err_local || e != e) err_local = e;
            }
        }
    double err_max, res2, x_max;
    MPI_Allreduce(&err_local, &err_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&res_local, &res2, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&x_max_local, &x_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double true_res = sqrt(res2), true_rel = true_res / f_norm;
    const double s_min = sin(M_PI * h / 2.0), c_min = cos(M_PI * h / 2.0);
    const double lambda_min = 12.0 * s_min * s_min, kappa = (c_min * c_min) / (s_min * s_min);
    const double m = u_max > x_max ? u_max : x_max, points = (double)n * n * n;
    const double rounding = 256.0 * DBL_EPSILON * m * sqrt(points);
    const double bound = 1.001 * (true_res + rounding) / lambda_min;

    /* the same history on every rank: compare with rank 0's digest */
    uint64_t digest0 = first.digest;
    MPI_Bcast(&digest0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int differs_local = digest0 != first.digest, ranks_differ;
    MPI_Allreduce(&differs_local, &ranks_differ, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    const char *status = first.status == ST_CONVERGED ? "converged" : first.status == ST_LIMIT ? "iteration_limit" : "diverged";
    int failed = 0;
    const char *failure = "";
    if (first.status == ST_DIVERGED) failed = 1, failure = "diverged";
    else if (!(err_max <= bound)) failed = 1, failure = "error above bound";
    else if (first.status == ST_CONVERGED && !(true_rel <= 10.0 * tol + 100.0 * DBL_EPSILON * kappa))
        failed = 1, failure = "true residual contradicts convergence";
    else if (ranks_differ) failed = 1, failure = "ranks' residual histories differ";

    if (rank == 0) {
        int last = first.iterations - 1;
        double final_rel = last >= 0 ? hist2[last] : 1.0;
        if (history)
            for (int it = 0; it <= last; ++it) {
                if (extra) printf("iter %d %.17g %.17g\n", it + 1, hist2[it], histmax[it]);
                else printf("iter %d %.17g\n", it + 1, hist2[it]);
            }
        double sorted[2][3];
        cli_sort(per_iter, repeat);
        cli_sort(ar_per_iter, repeat);
        double *lists[2] = {per_iter, ar_per_iter};
        for (int l = 0; l < 2; ++l) {
            sorted[l][0] = lists[l][repeat / 2] * 1e6;
            sorted[l][1] = lists[l][0] * 1e6;
            sorted[l][2] = lists[l][repeat - 1] * 1e6;
        }
        if (json) {
            printf("{\"example\":\"cg_solver\",\"mpi\":\"%s\",\"n\":%d,\"ranks\":%d,\"decomposition\":\"z-slabs\","
                   "\"allreduces_per_iter\":%d,\"extra_check\":%s,\"tol\":%.17g,\"max_iters\":%d,\"warmup\":%d,"
                   "\"repeat\":%d,\"iterations\":%d,\"status\":\"%s\","
                   "\"time_per_iter_us\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                   "\"allreduce_us_per_iter\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                   "\"relative_residual\":%.17g,\"true_relative_residual\":%.17g,\"error_max\":%.17g,"
                   "\"error_bound\":%.17g,\"history_digest\":\"%016llx\",\"histories_identical\":%s,\"ok\":%s,"
                   "\"failure\":\"%s\"}\n",
                   MPI_FLAVOR, n, size, extra ? 3 : 2, extra ? "true" : "false", tol, max_iters, warmup, repeat,
                   first.iterations, status, sorted[0][0], sorted[0][1], sorted[0][2], sorted[1][0], sorted[1][1],
                   sorted[1][2], final_rel, true_rel, err_max, bound, (unsigned long long)first.digest,
                   histories_identical ? "true" : "false", failed ? "false" : "true", failure);
        } else {
            printf("cg_solver: %s, %d ranks (z-slabs), N = %d (%.0f unknowns), %d allreduce(s) of 8 B per iteration\n",
                   MPI_FLAVOR, size, n, points, extra ? 3 : 2);
            printf("  %s after %d iterations: relative residual %.3e (true %.3e, tol %.1e)\n", status,
                   first.iterations, final_rel, true_rel, tol);
            printf("  error max|x - u*| = %.3e (bound %.3e)\n", err_max, bound);
            printf("  time per iteration: median %.2f us, min %.2f, max %.2f (%d solve%s); in MPI_Allreduce %.2f us\n",
                   sorted[0][0], sorted[0][1], sorted[0][2], repeat, repeat > 1 ? "s" : "", sorted[1][0]);
            printf("  history digest %016llx%s\n", (unsigned long long)first.digest,
                   histories_identical ? "" : " (WARNING: the repeated solves' histories differ)");
            printf("cg_solver: %s%s\n", failed ? "FAILED: " : "ok", failure);
        }
        fflush(stdout);
    }
    free(u); free(f); free(x); free(r); free(p); free(q);
    free(hist2); free(histmax); free(per_iter); free(ar_per_iter);
    MPI_Finalize();
    return failed;
}
