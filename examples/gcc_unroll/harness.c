/* Times the kernels of kernels.c (unroll_study.py): for each, the fastest of
   REPS batches of CALLS calls, in nanoseconds per call, and its checksum:
     harness [CALLS [REPS]]   ->   "name ns_per_call checksum" per line */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096
extern float xs[N], ys[N];
extern int32_t is[N];
extern uint8_t bytes[N];
extern int32_t next_index[N];
extern float mat[64][64], vec[64];

double saxpy(void), dot(void), prefix_sum(void), fnv_hash(void),
    byte_copy(void), matvec(void), stencil(void), histogram(void),
    pointer_chase(void), popcount_loop(void), small_trip(void),
    search_first(void);

static const struct {
  const char *name;
  double (*run)(void);
} Kernels[] = {
    {"saxpy", saxpy},
    {"dot", dot},
    {"prefix_sum", prefix_sum},
    {"fnv_hash", fnv_hash},
    {"byte_copy", byte_copy},
    {"matvec", matvec},
    {"stencil", stencil},
    {"histogram", histogram},
    {"pointer_chase", pointer_chase},
    {"popcount_loop", popcount_loop},
    {"small_trip", small_trip},
    {"search_first", search_first},
};

static void fill(void) {
  uint32_t seed = 12345;
  for (int i = 0; i < N; ++i) {
    seed = seed * 1103515245u + 12345u;
    xs[i] = (float)(seed >> 16) / 65536.0f;
    ys[i] = 1.0f;
    is[i] = (int32_t)(seed >> 8) & 0xfffff;
    bytes[i] = (uint8_t)(seed >> 24);
    next_index[i] = (int32_t)((i * 2654435761u + 1) % N);
  }
  next_index[N / 3] = -1;
  for (int i = 0; i < 64; ++i) {
    vec[i] = (float)i / 64.0f;
    for (int j = 0; j < 64; ++j)
      mat[i][j] = (float)((i * 7 + j) % 13) / 13.0f;
  }
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 2000;
  int reps = argc > 2 ? atoi(argv[2]) : 7;
  for (size_t k = 0; k < sizeof Kernels / sizeof Kernels[0]; ++k) {
    double best = 1e300, checksum = 0;
    fill();
    for (int r = 0; r < reps; ++r) {
      double start = now_ns();
      for (int c = 0; c < calls; ++c)
        checksum += Kernels[k].run();
      double per_call = (now_ns() - start) / calls;
      if (per_call < best)
        best = per_call;
    }
    fill();
    printf("%s %.1f %.9g\n", Kernels[k].name, best, Kernels[k].run());
  }
  return 0;
}
