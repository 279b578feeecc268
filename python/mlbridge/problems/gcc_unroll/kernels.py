"""A suite of C loop kernels that GCC's unroll factors change, each built
with the mlbridge GCC plugin, linked with a timing harness and run.

A kernel is the body of ``double kernel(void)`` over the harness's arrays
(:data:`PRELUDE`); it returns a checksum of its work, which no unroll factor
may change. :func:`build` compiles one kernel with the plugin (a runner, or
none: GCC decides) and links it with :data:`HARNESS`, compiled without it;
:func:`run` times the program: the fastest of ``reps`` batches of ``calls``
calls, in nanoseconds per call, and the checksum.

Each kernel is its own project: :data:`SPLITS` says which kernels train,
validate and are held out (docs/gcc-plugin.md).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from mlbridge.gcc.plugin_settings import GccPluginSettings
from mlbridge.session import run_tool

#: The compiler the plugin loads into.
GCC = "gcc-12"
#: Seconds a kernel's build or run may take.
TOOL_TIMEOUT = 120.0

#: What every kernel sees: the harness's arrays, filled before each batch.
PRELUDE = """\
#include <stddef.h>
#include <stdint.h>
#define N 4096
extern float xs[N], ys[N];
extern int32_t is[N];
extern uint8_t bytes[N], copy[N];
extern int32_t next_index[N];
extern float mat[64][64], vec[64], out[64];
extern uint32_t hist[256];
"""

#: Times ``kernel()``: ``harness [CALLS [REPS]]`` prints "NS CHECKSUM".
HARNESS = """\
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define N 4096
float xs[N], ys[N];
int32_t is[N];
uint8_t bytes[N], copy[N];
int32_t next_index[N];
float mat[64][64], vec[64], out[64];
uint32_t hist[256];
double kernel(void);

static void fill(void) {
  uint32_t seed = 12345;
  for (int i = 0; i < N; ++i) {
    seed = seed * 1103515245u + 12345u;
    xs[i] = (float)(seed >> 16) / 65536.0f;
    ys[i] = 1.0f;
    is[i] = (int32_t)(seed >> 8) & 0xfffff;
    bytes[i] = (uint8_t)(seed >> 24);
    copy[i] = 0;
    next_index[i] = (int32_t)((i * 2654435761u + 1) % N);
  }
  next_index[N / 3] = -1;
  for (int i = 0; i < 64; ++i) {
    vec[i] = (float)i / 64.0f;
    out[i] = 0;
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
  int calls = argc > 1 ? atoi(argv[1]) : 1000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  double best = 1e300, sink = 0;
  if (calls < 1 || reps < 1)
    return 2;
  fill();
  for (int r = 0; r < reps; ++r) {
    double start = now_ns();
    for (int c = 0; c < calls; ++c)
      sink += kernel();
    double per_call = (now_ns() - start) / calls;
    if (per_call < best)
      best = per_call;
  }
  fill();
  printf("%.1f %.9g\\n", best, kernel());
  return sink != sink; /* keeps the calls */
}
"""


@dataclass(frozen=True)
class Kernel:
    """One kernel: its name and the body of ``double kernel(void)``."""

    name: str
    body: str

    def source(self) -> str:
        """The kernel's translation unit."""
        return f"{PRELUDE}\ndouble kernel(void) {{\n{self.body}\n}}\n"


_KERNELS = (
    Kernel(
        "saxpy", "  for (int i = 0; i < N; ++i)\n    ys[i] += 0.5f * xs[i];\n  return ys[N / 2];"
    ),
    Kernel(
        "dot", "  float s = 0;\n  for (int i = 0; i < N; ++i)\n    s += xs[i] * ys[i];\n  return s;"
    ),
    Kernel(
        "prefix_sum",
        "  int32_t s = 0;\n  for (int i = 0; i < N; ++i) {\n    s += is[i];\n"
        "    is[i] = s & 0xffff;\n  }\n  return s;",
    ),
    Kernel(
        "fnv_hash",
        "  uint32_t h = 2166136261u;\n  for (int i = 0; i < N; ++i)\n"
        "    h = (h ^ bytes[i]) * 16777619u;\n  return h;",
    ),
    Kernel(
        "byte_copy",
        "  for (int i = 0; i < N; ++i)\n    copy[i] = bytes[i] ^ 0x5a;\n  return copy[7];",
    ),
    Kernel(
        "matvec",
        "  for (int i = 0; i < 64; ++i) {\n    float s = 0;\n    for (int j = 0; j < 64; ++j)\n"
        "      s += mat[i][j] * vec[j];\n    out[i] = s;\n  }\n  return out[3];",
    ),
    Kernel(
        "stencil",
        "  for (int i = 1; i < N - 1; ++i)\n"
        "    ys[i] = 0.25f * xs[i - 1] + 0.5f * xs[i] + 0.25f * xs[i + 1];\n  return ys[100];",
    ),
    Kernel(
        "histogram",
        "  for (int i = 0; i < 256; ++i)\n    hist[i] = 0;\n  for (int i = 0; i < N; ++i)\n"
        "    ++hist[bytes[i]];\n  return hist[17];",
    ),
    Kernel(
        "pointer_chase",
        "  int32_t at = 0, steps = 0;\n  while (at >= 0 && steps < N) {\n"
        "    at = next_index[at];\n    ++steps;\n  }\n  return steps;",
    ),
    Kernel(
        "popcount_loop",
        "  uint32_t total = 0;\n  for (int i = 0; i < N; ++i) {\n"
        "    uint32_t v = (uint32_t)is[i];\n    while (v) {\n      v &= v - 1;\n"
        "      ++total;\n    }\n  }\n  return total;",
    ),
    Kernel(
        "small_trip",
        "  int32_t s = 0;\n  for (int i = 0; i < N; i += 8)\n    for (int j = 0; j < 8; ++j)\n"
        "      s += is[i + j] * (j + 1);\n  return s;",
    ),
    Kernel(
        "search_first",
        "  int hits = 0;\n  for (int k = 0; k < 16; ++k) {\n    int i = 0;\n"
        "    while (i < N && is[i] != k * 977)\n      ++i;\n    hits += i;\n  }\n  return hits;",
    ),
    Kernel(
        "max_reduce",
        "  int32_t m = is[0];\n  for (int i = 1; i < N; ++i)\n    if (is[i] > m)\n"
        "      m = is[i];\n  return m;",
    ),
    Kernel(
        "strided_sum",
        "  float s = 0;\n  for (int k = 0; k < 4; ++k)\n    for (int i = k; i < N; i += 4)\n"
        "      s += xs[i] * (float)(k + 1);\n  return s;",
    ),
    Kernel(
        "fir8",
        "  static const float taps[8] = {0.1f, 0.2f, 0.3f, 0.4f, 0.4f, 0.3f, 0.2f, 0.1f};\n"
        "  for (int i = 0; i < N - 8; ++i) {\n    float s = 0;\n    for (int t = 0; t < 8; ++t)\n"
        "      s += taps[t] * xs[i + t];\n    ys[i] = s;\n  }\n  return ys[N / 3];",
    ),
    Kernel(
        "count_matches",
        "  int32_t c = 0;\n  for (int i = 0; i < N; ++i)\n"
        "    c += bytes[i] == 0x5a || bytes[i] == 0xa5;\n  return c;",
    ),
    Kernel(
        "reverse_copy",
        "  for (int i = 0; i < N; ++i)\n    copy[i] = bytes[N - 1 - i];\n  return copy[N / 5];",
    ),
    Kernel(
        "crc_bitwise",
        "  uint32_t crc = 0xffffffffu;\n  for (int i = 0; i < 512; ++i) {\n    crc ^= bytes[i];\n"
        "    for (int b = 0; b < 8; ++b)\n      crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));\n"
        "  }\n  return ~crc;",
    ),
    Kernel(
        "scale_clamp",
        "  for (int i = 0; i < N; ++i) {\n    float v = xs[i] * 3.0f - 1.0f;\n"
        "    ys[i] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);\n  }\n  return ys[N / 7];",
    ),
    Kernel(
        "matmul16",
        "  for (int i = 0; i < 16; ++i)\n    for (int j = 0; j < 16; ++j) {\n      float s = 0;\n"
        "      for (int k = 0; k < 16; ++k)\n        s += mat[i][k] * mat[k][j];\n"
        "      out[(i * 16 + j) & 63] += s;\n    }\n  return out[5];",
    ),
)

#: Which kernels validate and which are held out; the others train.
SPLITS: Dict[str, str] = {
    "byte_copy": "validation",
    "small_trip": "validation",
    "strided_sum": "validation",
    "max_reduce": "validation",
    "stencil": "held-out",
    "popcount_loop": "held-out",
    "fir8": "held-out",
    "count_matches": "held-out",
}


def suite() -> List[Kernel]:
    """Every kernel of the suite."""
    return list(_KERNELS)


def split_of(name: str) -> str:
    """The split of the suite's kernel called ``name``."""
    return SPLITS.get(name, "train")


def tools() -> None:
    """Raises FileNotFoundError naming the compiler when it is missing."""
    if shutil.which(GCC) is None:
        raise FileNotFoundError(f"{GCC} (apt install gcc-12)")


def harness_object(work: Path) -> Path:
    """The harness compiled (once) in ``work``."""
    obj = work / "harness.o"
    if not obj.exists():
        source = work / "harness.c"
        source.write_text(HARNESS)
        partial = work / "harness.o.partial"
        run_tool([GCC, "-O2", "-c", str(source), "-o", str(partial)], timeout=TOOL_TIMEOUT)
        partial.replace(obj)
    return obj


def compile_command(
    source: Path,
    obj: Path,
    plugin: Path,
    settings: GccPluginSettings,
    extra: Sequence[str] = (),
) -> List[str]:
    """``gcc-12 -O2 -c`` of one kernel with the plugin told ``settings``."""
    return [
        GCC,
        "-O2",
        "-c",
        str(source),
        "-o",
        str(obj),
        f"-fplugin={plugin}",
        *settings.arguments(),
        *extra,
    ]


def link(obj: Path, work: Path, program: Path) -> None:
    """Links a compiled kernel with the harness into ``program``."""
    run_tool(
        [GCC, "-O2", str(harness_object(work)), str(obj), "-o", str(program)],
        timeout=TOOL_TIMEOUT,
    )


def run(program: Path, calls: int = 1000, reps: int = 5) -> Tuple[float, str]:
    """Runs a linked kernel: nanoseconds per call (fastest batch) and checksum."""
    done = run_tool([str(program.resolve()), str(calls), str(reps)], timeout=TOOL_TIMEOUT)
    ns, checksum = done.stdout.split()[:2]
    return float(ns), checksum
