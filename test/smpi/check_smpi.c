/* The SMPI simulation's check program (test/smpi, built with smpicc and linked with libarshim-smpi.a): an ordinary
 * MPI program that checks MPI_Allreduce on every rank against values it computes itself. Ops x types x counts 0, 1,
 * 7, 1031 and one large count, in place and not, on MPI_COMM_WORLD and two sub-communicators (even/odd world ranks,
 * and the world in reverse order cut in two uneven parts). Test values are small integers, so float and double sums
 * and products are exact in any order and every result can be compared exactly.
 *
 * A smaller cousin of test/mpi/check_allreduce.cpp, which also compiles with smpicxx but takes minutes of simulation
 * at 16 ranks (100 000 checks).
 *
 * Env: CHECK_EXPECT_PATH=name: ARShim must be linked, must have seen every call, and some calls on every rank must
 * have taken that path (arshim_path_calls, looked up in the program itself). CHECK_EXPECT_FLAVOR=mpich|openmpi:
 * the flavor whose policy rules ARShim decides with (arshim_mpi_flavor). CHECK_LARGE=n: the large count (default
 * 70001). CHECK_NO_ZERO=1: no count 0 (SimGrid 3.32's ompi selector dies of a division by zero in
 * allreduce__ompi_ring_segmented on a 0-element MPI_Allreduce, with or without ARShim, which sends such calls to the
 * library). Exit status 1 when any rank saw a wrong value. */
#include <mpi.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_INT, K_UNSIGNED, K_LONG_LONG, K_UINT8, K_FLOAT, K_DOUBLE, K_DOUBLE_INT };
struct type_case {
  MPI_Datatype type;
  const char* name;
  enum kind kind;
  size_t size;
};
struct op_case {
  MPI_Op op;
  const char* name;
};
struct double_int {
  double value;
  int index;
};

static int g_rank;
static long long g_calls, g_checks, g_failures;

/* Rank r's contribution at index i: a small integer, so every fold order gives the same exact result. */
static long long value(int rank, long i, int op_index) {
  uint64_t x = (uint64_t)(rank + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ull ^
               (uint64_t)op_index * 0x94D049BB133111EBull;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 29;
  return (long long)(x % 7);
}

/* For PROD: 1 or 2 (a product over 16 ranks stays below 2^16; in uint8 it wraps, as the library's would). */
static long long prod_value(int rank, long i, int op_index) { return 1 + (value(rank, i, op_index) == 3); }

/* The expected result as a long long (or double for floating types), folded over the communicator's ranks. */
static long long expect_int(const char* op, int size, const int* world_of, long i, int op_index, unsigned bits) {
  const uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  long long acc = 0;
  for (int r = 0; r < size; ++r) {
    long long v = strcmp(op, "PROD") == 0 ? prod_value(world_of[r], i, op_index) : value(world_of[r], i, op_index);
    if (r == 0) {
      acc = v;
      continue;
    }
    if (strcmp(op, "SUM") == 0) acc += v;
    else if (strcmp(op, "PROD") == 0) acc = (long long)(((uint64_t)acc * (uint64_t)v) & mask);
    else if (strcmp(op, "MIN") == 0) acc = v < acc ? v : acc;
    else if (strcmp(op, "MAX") == 0) acc = v > acc ? v : acc;
    else if (strcmp(op, "BAND") == 0) acc &= v;
    else if (strcmp(op, "BOR") == 0) acc |= v;
    else if (strcmp(op, "BXOR") == 0) acc ^= v;
    else if (strcmp(op, "LAND") == 0) acc = (acc != 0) && (v != 0);
    else if (strcmp(op, "LOR") == 0) acc = (acc != 0) || (v != 0);
  }
  if (strcmp(op, "LAND") == 0 || strcmp(op, "LOR") == 0) acc = acc != 0;
  return (long long)((uint64_t)acc & mask);
}

static void put(void* buf, const struct type_case* t, long i, long long v) {
  switch (t->kind) {
    case K_INT: ((int*)buf)[i] = (int)v; break;
    case K_UNSIGNED: ((unsigned*)buf)[i] = (unsigned)v; break;
    case K_LONG_LONG: ((long long*)buf)[i] = v; break;
    case K_UINT8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case K_FLOAT: ((float*)buf)[i] = (float)v; break;
    case K_DOUBLE: ((double*)buf)[i] = (double)v; break;
    case K_DOUBLE_INT: ((struct double_int*)buf)[i].value = (double)v; ((struct double_int*)buf)[i].index = g_rank; break;
  }
}

static long long get(const void* buf, const struct type_case* t, long i) {
  switch (t->kind) {
    case K_INT: return ((const int*)buf)[i];
    case K_UNSIGNED: return ((const unsigned*)buf)[i];
    case K_LONG_LONG: return ((const long long*)buf)[i];
    case K_UINT8: return ((const uint8_t*)buf)[i];
    case K_FLOAT: return (long long)((const float*)buf)[i];
    case K_DOUBLE: return (long long)((const double*)buf)[i];
    case K_DOUBLE_INT: return (long long)((const struct double_int*)buf)[i].value;
  }
  return 0;
}

static unsigned bits_of(const struct type_case* t) {
  switch (t->kind) {
    case K_INT: case K_UNSIGNED: return 32;
    case K_UINT8: return 8;
    default: return 64;
  }
}

static void check_case(const struct type_case* t, const struct op_case* o, int op_index, long count, int in_place,
                       MPI_Comm comm, const char* comm_name, const int* world_of) {
  int size = 0, me = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &me);
  const int pairs = t->kind == K_DOUBLE_INT;
  const int prod = strcmp(o->name, "PROD") == 0;
  char* in = malloc((size_t)(count > 0 ? count : 1) * t->size);
  char* out = malloc((size_t)(count > 0 ? count : 1) * t->size);
  for (long i = 0; i < count; ++i) {
    put(in, t, i, prod ? prod_value(g_rank, i, op_index) : value(g_rank, i, op_index));
    put(out, t, i, -1);
  }
  ++g_calls;
  const int rc = in_place ? MPI_Allreduce(MPI_IN_PLACE, in, (int)count, t->type, o->op, comm)
                          : MPI_Allreduce(in, out, (int)count, t->type, o->op, comm);
  const char* result = in_place ? in : out;
  long wrong = 0, first = -1;
  for (long i = 0; i < count && rc == MPI_SUCCESS; ++i) {
    long long want = 0;
    int want_index = -1;
    if (pairs) {
      /* MAXLOC / MINLOC: the extreme value, the lowest world rank holding it (world_of is increasing or not: take
       * the lowest communicator rank's world rank, as MPI defines the index by the value given, here g_rank). */
      for (int r = 0; r < size; ++r) {
        const long long v = value(world_of[r], i, op_index);
        const int better = r == 0 || (strcmp(o->name, "MAXLOC") == 0 ? v > want : v < want) ||
                           (v == want && world_of[r] < want_index);
        if (better) want = v, want_index = world_of[r];
      }
      if (get(result, t, i) != want || ((const struct double_int*)result)[i].index != want_index) ++wrong;
    } else {
      want = expect_int(o->name, size, world_of, i, op_index, bits_of(t));
      if (get(result, t, i) != want) ++wrong;
    }
    if (wrong == 1 && first < 0) first = i;
  }
  ++g_checks;
  if (rc != MPI_SUCCESS || wrong > 0) {
    ++g_failures;
    printf("rank %d: FAIL %s %s count %ld %s on %s (rank %d of %d): rc %d, %ld wrong, first at %ld\n", g_rank,
           t->name, o->name, count, in_place ? "in place" : "out of place", comm_name, me, size, rc, wrong, first);
  }
  free(in);
  free(out);
}

static void run(MPI_Comm comm, const char* comm_name, long large) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  /* The world rank of every rank of the communicator, for the expected values. */
  int* world_of = malloc(sizeof(int) * (size_t)size);
  MPI_Allgather(&g_rank, 1, MPI_INT, world_of, 1, MPI_INT, comm);
  const struct type_case types[] = {
      {MPI_INT, "MPI_INT", K_INT, sizeof(int)},
      {MPI_UNSIGNED, "MPI_UNSIGNED", K_UNSIGNED, sizeof(unsigned)},
      {MPI_LONG_LONG, "MPI_LONG_LONG", K_LONG_LONG, sizeof(long long)},
      {MPI_UINT8_T, "MPI_UINT8_T", K_UINT8, 1},
      {MPI_FLOAT, "MPI_FLOAT", K_FLOAT, sizeof(float)},
      {MPI_DOUBLE, "MPI_DOUBLE", K_DOUBLE, sizeof(double)},
      {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", K_DOUBLE_INT, sizeof(struct double_int)},
  };
  const struct op_case ops[] = {{MPI_SUM, "SUM"},   {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"},   {MPI_MAX, "MAX"},
                                {MPI_BAND, "BAND"}, {MPI_BOR, "BOR"},   {MPI_BXOR, "BXOR"}, {MPI_LAND, "LAND"},
                                {MPI_LOR, "LOR"},   {MPI_MAXLOC, "MAXLOC"}, {MPI_MINLOC, "MINLOC"}};
  const long counts[] = {0, 1, 7, 1031, large};
  const int no_zero = getenv("CHECK_NO_ZERO") != NULL && strcmp(getenv("CHECK_NO_ZERO"), "1") == 0;
  const size_t ncounts = large > 0 ? 5 : 4;
  for (size_t c = no_zero ? 1 : 0; c < ncounts; ++c)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t)
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o) {
        const enum kind k = types[t].kind;
        const int bitwise = o >= 4 && o <= 6, logical = o == 7 || o == 8, loc = o >= 9;
        if (loc != (k == K_DOUBLE_INT)) continue;
        if ((bitwise || logical) && (k == K_FLOAT || k == K_DOUBLE)) continue;
        /* The large count: the sums only (the paths' large-message machinery), on two types. */
        if (c == 4 && !(o == 0 && (k == K_DOUBLE || k == K_INT))) continue;
        for (int in_place = 0; in_place < 2; ++in_place)
          check_case(&types[t], &ops[o], (int)o, counts[c], in_place, comm, comm_name, world_of);
      }
  free(world_of);
}

static long long path_calls(const char* path) {
  long long (*fn)(const char*) = (long long (*)(const char*))dlsym(RTLD_DEFAULT, "arshim_path_calls");
  return fn ? fn(path) : -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const long large = getenv("CHECK_LARGE") ? atol(getenv("CHECK_LARGE")) : 70001;

  run(MPI_COMM_WORLD, "MPI_COMM_WORLD", large);
  MPI_Comm halves, reversed;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &halves);
  MPI_Comm_split(MPI_COMM_WORLD, g_rank < world / 3, world - g_rank, &reversed);
  run(halves, "split(even/odd)", large / 4);
  run(reversed, "split(reversed, uneven)", 0);
  MPI_Comm_free(&halves);
  MPI_Comm_free(&reversed);

  const char* expect = getenv("CHECK_EXPECT_PATH");
  if (expect != NULL) {
    long long total = 0;
    /* Every path name ARShim may know (-1: not in this build's vocabulary). */
    const char* paths[] = {"native", "pipelined", "multileader", "sharp", "reproducible", "latency"};
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; ++p)
      if (path_calls(paths[p]) > 0) total += path_calls(paths[p]);
    ++g_checks;
    if (path_calls("native") < 0) {
      ++g_failures;
      printf("rank %d: FAIL ARShim is not linked (no arshim_path_calls)\n", g_rank);
    } else if (total != g_calls || path_calls(expect) <= 0) {
      ++g_failures;
      printf("rank %d: FAIL ARShim counted %lld calls of the program's %lld, %lld on path %s\n", g_rank, total,
             g_calls, path_calls(expect), expect);
    }
  }
  /* CHECK_EXPECT_FLAVOR: the flavor whose policy rules ARShim decides with (under SMPI: the selector's). */
  const char* want_flavor = getenv("CHECK_EXPECT_FLAVOR");
  if (want_flavor != NULL) {
    const char* (*flavor_fn)(void) = (const char* (*)(void))dlsym(RTLD_DEFAULT, "arshim_mpi_flavor");
    const char* got = flavor_fn != NULL ? flavor_fn() : "(no arshim_mpi_flavor)";
    ++g_checks;
    if (strcmp(got, want_flavor) != 0) {
      ++g_failures;
      printf("rank %d: FAIL ARShim decides with %s's rules, not %s's\n", g_rank, got, want_flavor);
    }
  }
  long long mine[2] = {g_checks, g_failures}, sum[2] = {0, 0};
  MPI_Reduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("check_smpi: %d ranks, %lld checks, %lld failures%s%s\n", world, sum[0], sum[1],
           expect ? ", path " : "", expect ? expect : "");
  int failed = sum[1] > 0;
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
