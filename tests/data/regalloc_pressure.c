extern int g(int);
int pressure(int *a, int n) {
  int s0 = 0, s1 = 1, s2 = 2, s3 = 3, s4 = 4, s5 = 5, s6 = 6, s7 = 7;
  int s8 = 8, s9 = 9, s10 = 10, s11 = 11, s12 = 12, s13 = 13, s14 = 14;
  for (int i = 0; i < n; ++i) {
    s0 += a[i] * s1; s1 ^= a[i + 1] + s2; s2 += a[i + 2] * s3; s3 -= a[i + 3] ^ s4;
    s4 += g(s5); s5 ^= a[i + 5] * s6; s6 += a[i + 6] - s7; s7 ^= a[i + 7] + s8;
    s8 += a[i + 8] * s9; s9 -= a[i + 9] ^ s10; s10 += g(s11 + s12); s11 ^= a[i] * s12;
    s12 += a[i + 1] * s13; s13 -= s14 * a[i + 2]; s14 += s0 ^ a[i + 3];
  }
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13 + s14;
}
