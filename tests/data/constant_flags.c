/* The best constant configuration of docs/phase-ordering.md as plain clang
   flags: `-Oz -mllvm -inline-threshold=10 -Xclang -fmerge-functions` gives
   the object of the pipeline `default<Oz;inline-threshold=10>,mergefunc`.
   Two functions with the same code (merged), and a callee that -Oz keeps
   out of line and a threshold of 10 inlines at two of its three calls. */
#include <stdint.h>

uint32_t mix_a(const uint32_t *v, int n) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < n; ++i)
    h = (h ^ v[i]) * 16777619u + (h >> 7);
  return h;
}

uint32_t mix_b(const uint32_t *v, int n) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < n; ++i)
    h = (h ^ v[i]) * 16777619u + (h >> 7);
  return h;
}

int scale(int x, int k) {
  if (x > k)
    return (x >> 1) * 3 + (x >> 2) * 5 - k;
  return x + k * 5;
}

int scale_all(int *v, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i)
    s += scale(v[i], 7) ^ scale(v[i] >> 1, 9) ^ scale(s, i);
  return s;
}
