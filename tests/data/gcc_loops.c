/* Loops for the GCC plugin's tests (tests/python/test_gcc_plugin.py): known
   and unknown trip counts, a nest, a call, a pragma the plugin must keep. */
#include <stddef.h>

float dot(const float *a, const float *b, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

void saxpy(float *restrict y, const float *restrict x, float a) {
  for (int i = 0; i < 1000; ++i)
    y[i] += a * x[i];
}

int sum_matrix(int m[64][64]) {
  int s = 0;
  for (int i = 0; i < 64; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < 64; ++j)
      s += m[i][j];
  return s;
}

extern int visit(int);

int walk(const int *next, int start) {
  int steps = 0;
  for (int at = start; at >= 0; at = next[at])
    steps += visit(at);
  return steps;
}

unsigned checksum(const unsigned char *p, size_t n) {
  unsigned h = 2166136261u;
  while (n--)
    h = (h ^ *p++) * 16777619u;
  return h;
}
