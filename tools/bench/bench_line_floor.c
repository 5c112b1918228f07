/* The floor of a two-rank allreduce on one node: two processes that do nothing per call but store a value and a
 * sequence number into their own cache line and wait for the other's, alternating two pairs of lines as ARShim's
 * latency path alternates two buffers. No MPI. What it prints per iteration is what moving a line each way between
 * the two cores costs on this machine: the least an 8-byte allreduce through shared memory can take
 * (docs/paths.md "The latency path").
 *
 *   arshim-bench-line-floor [--iterations N] [--pause] [--cpus A,B]
 *
 * --pause: a pause instruction between polls (as ARShim's waits poll); --cpus: the two CPUs to pin to (default 0,1;
 * pinning fails on machines with fewer CPUs, and the run is then unpinned and says so). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static void relax(void) { _mm_pause(); }
#elif defined(__aarch64__)
static void relax(void) { __asm__ volatile("yield" ::: "memory"); }
#else
static void relax(void) {}
#endif

typedef struct {
  _Atomic uint64_t sequence;
  double value;
  char pad[64 - sizeof(uint64_t) - sizeof(double)];
} __attribute__((aligned(64))) line_t;

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv) {
  long iterations = 2000000;
  int pause = 0, cpus[2] = {0, 1};
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: arshim-bench-line-floor [--iterations N] [--pause] [--cpus A,B]\n"
             "Two processes store a value and a sequence number into their own cache line and wait for the other's,\n"
             "N times (default 2000000, at least 2000): the floor of a small allreduce on one node (docs/paths.md).\n");
      return 0;
    }
    if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = atol(argv[++i]);
    else if (!strcmp(argv[i], "--pause")) pause = 1;
    else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
      if (sscanf(argv[++i], "%d,%d", &cpus[0], &cpus[1]) != 2 || cpus[0] < 0 || cpus[1] < 0) {
        fprintf(stderr, "arshim-bench-line-floor: --cpus %s: two CPU numbers, e.g. 0,1\n", argv[i]);
        return 2;
      }
    } else {
      fprintf(stderr, "arshim-bench-line-floor: %s: unknown; usage: [--iterations N] [--pause] [--cpus A,B]\n",
              argv[i]);
      return 2;
    }
  }
  if (iterations < 2000 || iterations > 1000000000L) {
    fprintf(stderr, "arshim-bench-line-floor: --iterations %ld: between 2000 and 1000000000\n", iterations);
    return 2;
  }
  /* two buffers x two ranks, one line each */
  line_t *lines = mmap(NULL, 4 * sizeof(line_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (lines == MAP_FAILED) {
    fprintf(stderr, "arshim-bench-line-floor: mmap: %s\n", strerror(errno));
    return 1;
  }
  memset(lines, 0, 4 * sizeof(line_t));
  const pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "arshim-bench-line-floor: fork: %s\n", strerror(errno));
    return 1;
  }
  const int me = child == 0 ? 1 : 0;
  const int pinned = pin(cpus[me]) == 0;
  const long warmup = 1000;
  double sum = 0, start = 0;
  for (long i = 1; i <= iterations; ++i) {
    if (i == warmup) start = seconds();
    line_t *mine = &lines[(i % 2) * 2 + me], *other = &lines[(i % 2) * 2 + 1 - me];
    mine->value = (double)(me + i);
    atomic_store_explicit(&mine->sequence, (uint64_t)i, memory_order_release);
    /* after 1000 polls it yields, so that two processes sharing a core still finish (slowly: a busy machine shows) */
    for (int polls = 0; atomic_load_explicit(&other->sequence, memory_order_acquire) < (uint64_t)i; ++polls) {
      if (pause) relax();
      if (polls > 1000) sched_yield();
    }
    sum += mine->value + other->value;
  }
  const double elapsed = seconds() - start;
  if (me == 1) return 0;
  int status = 0;
  waitpid(child, &status, 0);
  /* every iteration adds (i) + (1 + i): the check that both sides ran every iteration */
  const double want = (double)iterations * (double)(iterations + 1) + (double)iterations;
  printf("%.1f ns per iteration (%ld iterations, %s, %s)%s\n", elapsed / (double)(iterations - warmup) * 1e9,
         iterations, pause ? "pause between polls" : "no pause", pinned ? "pinned" : "not pinned",
         sum == want ? "" : " WRONG SUM");
  return sum == want ? 0 : 1;
}
