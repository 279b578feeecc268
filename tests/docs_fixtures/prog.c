/* The `prog.c` of the documentation's commands (tests/python/test_docs.py):
   a few small functions and their call sites, so that an inliner has
   decisions to ask a model for, and one function (pressure) with more values
   live at once than there are registers, so that register allocation has
   eviction decisions to ask for. */

static int square(int x) { return x * x; }

static int clamp(int x, int lo, int hi) {
  if (x < lo)
    return lo;
  if (x > hi)
    return hi;
  return x;
}

static int mix(int a, int b) {
  int s = square(a) + 3 * b;
  s ^= s >> 3;
  return clamp(s, -1000, 1000);
}

int score(const int *values, int n) {
  int total = 0;
  for (int i = 0; i < n; ++i)
    total += mix(values[i], i) - clamp(values[i], 0, 9);
  return total;
}

unsigned long pressure(const unsigned long *v, int n) {
  unsigned long a0 = 0, a1 = 1, a2 = 2, a3 = 3, a4 = 4, a5 = 5, a6 = 6, a7 = 7;
  unsigned long a8 = 8, a9 = 9, a10 = 10, a11 = 11, a12 = 12, a13 = 13, a14 = 14;
  unsigned long a15 = 15;
  for (int i = 0; i < n; ++i) {
    a0 = a0 * 3 + (v[i] ^ a1);
    a1 = a1 * 5 + (v[i] ^ a2);
    a2 = a2 * 7 + (v[i] ^ a3);
    a3 = a3 * 9 + (v[i] ^ a4);
    a4 = a4 * 11 + (v[i] ^ a5);
    a5 = a5 * 13 + (v[i] ^ a6);
    a6 = a6 * 15 + (v[i] ^ a7);
    a7 = a7 * 17 + (v[i] ^ a8);
    a8 = a8 * 19 + (v[i] ^ a9);
    a9 = a9 * 21 + (v[i] ^ a10);
    a10 = a10 * 23 + (v[i] ^ a11);
    a11 = a11 * 25 + (v[i] ^ a12);
    a12 = a12 * 27 + (v[i] ^ a13);
    a13 = a13 * 29 + (v[i] ^ a14);
    a14 = a14 * 31 + (v[i] ^ a15);
    a15 = a15 * 33 + (v[i] ^ a0);
  }
  return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ a8 ^ a9 ^ a10 ^ a11 ^ a12 ^ a13 ^
         a14 ^ a15;
}

int main(void) {
  int values[] = {3, 1, 4, 1, 5, 9, 2, 6};
  return score(values, 8) == 0;
}
