/* Loop kernels of the GCC unroll study (unroll_study.py): compiled with the
   mlbridge GCC plugin, each a function the harness (harness.c, compiled
   without it) times. Every kernel returns a checksum of its work, which must
   not change with the unroll factor. */
#include <stddef.h>
#include <stdint.h>

#define N 4096

float xs[N], ys[N];
int32_t is[N];
uint8_t bytes[N], copy[N];
int32_t next_index[N];
float mat[64][64], vec[64], out[64];
uint32_t hist[256];

double saxpy(void) {
  for (int i = 0; i < N; ++i)
    ys[i] += 0.5f * xs[i];
  return ys[N / 2];
}

double dot(void) {
  float s = 0;
  for (int i = 0; i < N; ++i)
    s += xs[i] * ys[i];
  return s;
}

double prefix_sum(void) {
  int32_t s = 0;
  for (int i = 0; i < N; ++i) {
    s += is[i];
    is[i] = s & 0xffff;
  }
  return s;
}

double fnv_hash(void) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < N; ++i)
    h = (h ^ bytes[i]) * 16777619u;
  return h;
}

double byte_copy(void) {
  for (int i = 0; i < N; ++i)
    copy[i] = bytes[i] ^ 0x5a;
  return copy[7];
}

double matvec(void) {
  for (int i = 0; i < 64; ++i) {
    float s = 0;
    for (int j = 0; j < 64; ++j)
      s += mat[i][j] * vec[j];
    out[i] = s;
  }
  return out[3];
}

double stencil(void) {
  for (int i = 1; i < N - 1; ++i)
    ys[i] = 0.25f * xs[i - 1] + 0.5f * xs[i] + 0.25f * xs[i + 1];
  return ys[100];
}

double histogram(void) {
  for (int i = 0; i < 256; ++i)
    hist[i] = 0;
  for (int i = 0; i < N; ++i)
    ++hist[bytes[i]];
  return hist[17];
}

double pointer_chase(void) {
  int32_t at = 0, steps = 0;
  while (at >= 0 && steps < N) {
    at = next_index[at];
    ++steps;
  }
  return steps;
}

double popcount_loop(void) {
  uint32_t total = 0;
  for (int i = 0; i < N; ++i) {
    uint32_t v = (uint32_t)is[i];
    while (v) {
      v &= v - 1;
      ++total;
    }
  }
  return total;
}

double small_trip(void) {
  int32_t s = 0;
  for (int i = 0; i < N; i += 8)
    for (int j = 0; j < 8; ++j)
      s += is[i + j] * (j + 1);
  return s;
}

double search_first(void) {
  int hits = 0;
  for (int k = 0; k < 16; ++k) {
    int i = 0;
    while (i < N && is[i] != k * 977)
      ++i;
    hits += i;
  }
  return hits;
}
