/* Two things clang -Oz does that opt's default<Oz> does not: SLP
   vectorization (the driver passes -vectorize-slp at -Oz), and a switch made
   a relative lookup table (the target is position independent). The phase
   service's default<Oz> must do both to be clang -Oz byte for byte. */
#include <stdint.h>

void round4(uint32_t *restrict acc, const uint32_t *restrict in) {
  acc[0] = (acc[0] ^ in[0]) + 0x9e3779b9u;
  acc[1] = (acc[1] ^ in[1]) + 0x9e3779b9u;
  acc[2] = (acc[2] ^ in[2]) + 0x9e3779b9u;
  acc[3] = (acc[3] ^ in[3]) + 0x9e3779b9u;
}

const char *name(int c) {
  switch (c) {
  case 0:
    return "zero";
  case 1:
    return "one";
  case 2:
    return "two";
  case 3:
    return "three";
  case 4:
    return "four";
  case 5:
    return "five";
  default:
    return "many";
  }
}
