/* A module that LLVM 19's MLInlineAdvisor stops inlining half-way (at -O2):
   inlining mix() into its eight call sites in each of six functions grows
   the module past -ml-advisor-size-increase-threshold (2x), while LLVM's
   default inliner, which has no cap, also inlines the calls of g0..g5.
   Used by the size-cap tests of the plugin and of `mlbridge llvm`. */

static int mix(int x) {
  int s = x;
  s = s * 3 + (s >> 1) ^ 5;
  s = s * 4 + (s >> 2) ^ 22;
  s = s * 5 + (s >> 3) ^ 39;
  s = s * 6 + (s >> 4) ^ 56;
  s = s * 7 + (s >> 5) ^ 73;
  s = s * 8 + (s >> 6) ^ 90;
  s = s * 9 + (s >> 7) ^ 107;
  s = s * 10 + (s >> 1) ^ 124;
  s = s * 11 + (s >> 2) ^ 141;
  s = s * 12 + (s >> 3) ^ 158;
  return s;
}

static int small0(int x) {
  int y = x * 3;
  if (y > 0)
    y -= x;
  return y + 0;
}
static int small1(int x) {
  int y = x * 4;
  if (y > 10)
    y -= x;
  return y + 1;
}
static int small2(int x) {
  int y = x * 5;
  if (y > 20)
    y -= x;
  return y + 2;
}
static int small3(int x) {
  int y = x * 6;
  if (y > 30)
    y -= x;
  return y + 3;
}
static int small4(int x) {
  int y = x * 7;
  if (y > 40)
    y -= x;
  return y + 4;
}
static int small5(int x) {
  int y = x * 8;
  if (y > 50)
    y -= x;
  return y + 5;
}

int f0(int x) {
  return mix(x + 0) + mix(x + 1) + mix(x + 2) + mix(x + 3) +
         mix(x + 4) + mix(x + 5) + mix(x + 6) + mix(x + 7);
}
int g0(int x) { return small0(x) + small1(x + 1); }
int f1(int x) {
  return mix(x + 0) + mix(x + 1) + mix(x + 2) + mix(x + 3) +
         mix(x + 4) + mix(x + 5) + mix(x + 6) + mix(x + 7);
}
int g1(int x) { return small1(x) + small2(x + 1); }
int f2(int x) {
  return mix(x + 0) + mix(x + 1) + mix(x + 2) + mix(x + 3) +
         mix(x + 4) + mix(x + 5) + mix(x + 6) + mix(x + 7);
}
int g2(int x) { return small2(x) + small3(x + 1); }
int f3(int x) {
  return mix(x + 0) + mix(x + 1) + mix(x + 2) + mix(x + 3) +
         mix(x + 4) + mix(x + 5) + mix(x + 6) + mix(x + 7);
}
int g3(int x) { return small3(x) + small4(x + 1); }
int f4(int x) {
  return mix(x + 0) + mix(x + 1) + mix(x + 2) + mix(x + 3) +
         mix(x + 4) + mix(x + 5) + mix(x + 6) + mix(x + 7);
}
int g4(int x) { return small4(x) + small5(x + 1); }
int f5(int x) {
  return mix(x + 0) + mix(x + 1) + mix(x + 2) + mix(x + 3) +
         mix(x + 4) + mix(x + 5) + mix(x + 6) + mix(x + 7);
}
int g5(int x) { return small5(x) + small0(x + 1); }
