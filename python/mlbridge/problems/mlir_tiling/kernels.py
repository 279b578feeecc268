"""A suite of linalg kernels that the MLIR tiling pass tiles, lowered to LLVM
and run under ``mlir-cpu-runner-19``, timed.

Each :class:`Kernel` is one MLIR module: ``@kernel`` holds the linalg
operation(s) on memrefs, and ``@main`` (scf loops only, so that the pass sees
no linalg operation there) fills the operands with deterministic values, runs
the kernel ``repeats`` times (re-filling its outputs first), and prints the
fastest run in seconds and a checksum of the outputs, one per line.
:func:`compile_and_run` tiles the module with the plugin, lowers it and runs
it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from mlbridge.mlir.plugin_settings import TilingPassSettings
from mlbridge.session import run_tool

#: Lowering of tiled linalg on memrefs to the LLVM dialect.
LOWERING = (
    "builtin.module(func.func(convert-linalg-to-loops),expand-strided-metadata,"
    "lower-affine,convert-scf-to-cf,finalize-memref-to-llvm,convert-arith-to-llvm,"
    "convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)"
)
#: Seconds a tool (mlir-opt, mlir-cpu-runner) may take on one kernel.
TOOL_TIMEOUT = 300.0
#: MLIR's C runner utilities (rtclock, printF64), from Debian's mlir-19-tools.
RUNNER_UTILS = Path("/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so")


@dataclass(frozen=True)
class Operand:
    """A memref operand of the kernel: its shape, and whether it is written."""

    shape: Tuple[int, ...]
    output: bool = False

    @property
    def type(self) -> str:
        return "memref<" + "x".join(map(str, self.shape)) + "xf32>"


@dataclass(frozen=True)
class Kernel:
    """One kernel: a name, its operands and the body of ``@kernel`` (MLIR
    text using ``%a0``, ``%a1``... for the operands)."""

    name: str
    operands: Tuple[Operand, ...]
    body: str

    def module(self, repeats: int = 5) -> str:
        """The whole module: ``@kernel`` and the timing ``@main``."""
        args = ", ".join(f"%a{i}: {o.type}" for i, o in enumerate(self.operands))
        types = ", ".join(o.type for o in self.operands)
        values = ", ".join(f"%m{i}" for i in range(len(self.operands)))
        lines = [
            "func.func private @rtclock() -> f64",
            "func.func private @printF64(f64)",
            "func.func private @printNewline()",
            f"func.func @kernel({args}) {{",
            self.body,
            "  return",
            "}",
            "func.func @main() {",
            "  %c0 = arith.constant 0 : index",
            "  %c1 = arith.constant 1 : index",
            f"  %reps = arith.constant {repeats} : index",
            "  %big = arith.constant 1.0e30 : f64",
        ]
        for i, o in enumerate(self.operands):
            lines.append(f"  %m{i} = memref.alloc() : {o.type}")
            if not o.output:
                lines += _fill(f"%m{i}", o, f"in{i}", zero=False)
        lines += [
            "  %best = scf.for %r = %c0 to %reps step %c1 iter_args(%b = %big) -> (f64) {",
        ]
        for i, o in enumerate(self.operands):
            if o.output:
                lines += ["  " + line for line in _fill(f"%m{i}", o, f"out{i}", zero=True)]
        lines += [
            "    %t0 = func.call @rtclock() : () -> f64",
            f"    func.call @kernel({values}) : ({types}) -> ()",
            "    %t1 = func.call @rtclock() : () -> f64",
            "    %dt = arith.subf %t1, %t0 : f64",
            "    %nb = arith.minimumf %b, %dt : f64",
            "    scf.yield %nb : f64",
            "  }",
            "  func.call @printF64(%best) : (f64) -> ()",
            "  func.call @printNewline() : () -> ()",
        ]
        zero = "%zero64"
        lines.append(f"  {zero} = arith.constant 0.0 : f64")
        total = zero
        for i, o in enumerate(self.operands):
            if o.output:
                sum_lines, total = _checksum(f"%m{i}", o, f"out{i}", total)
                lines += sum_lines
        lines += [
            f"  func.call @printF64({total}) : (f64) -> ()",
            "  func.call @printNewline() : () -> ()",
        ]
        for i, o in enumerate(self.operands):
            lines.append(f"  memref.dealloc %m{i} : {o.type}")
        lines += ["  return", "}"]
        return "\n".join(lines) + "\n"


def _bounds(o: Operand, tag: str) -> List[str]:
    return [f"  %{tag}_n{d} = arith.constant {n} : index" for d, n in enumerate(o.shape)]


def _fill(memref: str, o: Operand, tag: str, zero: bool) -> List[str]:
    """scf loops storing 0, or ((sum of index * (d + 3)) mod 13) / 13."""
    lines = _bounds(o, tag)
    ivs = [f"%{tag}_i{d}" for d in range(len(o.shape))]
    for d, iv in enumerate(ivs):
        lines.append("  " * d + f"  scf.for {iv} = %c0 to %{tag}_n{d} step %c1 {{")
    pad = "  " * len(ivs) + "  "
    if zero:
        lines.append(pad + f"%{tag}_v = arith.constant 0.0 : f32")
    else:
        lines.append(pad + f"%{tag}_s0 = arith.constant 0 : index")
        acc = f"%{tag}_s0"
        for d, iv in enumerate(ivs):
            lines += [
                pad + f"%{tag}_k{d} = arith.constant {d + 3} : index",
                pad + f"%{tag}_p{d} = arith.muli {iv}, %{tag}_k{d} : index",
                pad + f"%{tag}_s{d + 1} = arith.addi {acc}, %{tag}_p{d} : index",
            ]
            acc = f"%{tag}_s{d + 1}"
        lines += [
            pad + f"%{tag}_13 = arith.constant 13 : index",
            pad + f"%{tag}_m = arith.remui {acc}, %{tag}_13 : index",
            pad + f"%{tag}_mi = arith.index_cast %{tag}_m : index to i64",
            pad + f"%{tag}_mf = arith.sitofp %{tag}_mi : i64 to f32",
            pad + f"%{tag}_13f = arith.constant 13.0 : f32",
            pad + f"%{tag}_v = arith.divf %{tag}_mf, %{tag}_13f : f32",
        ]
    lines.append(pad + f"memref.store %{tag}_v, {memref}[{', '.join(ivs)}] : {o.type}")
    for d in reversed(range(len(ivs))):
        lines.append("  " * d + "  }")
    return lines


def _checksum(memref: str, o: Operand, tag: str, start: str) -> Tuple[List[str], str]:
    """scf loops summing the elements (as f64) onto ``start``."""
    lines = _bounds(o, tag)
    ivs = [f"%{tag}_i{d}" for d in range(len(o.shape))]
    acc = start
    for d, iv in enumerate(ivs):
        lines.append(
            "  " * d + f"  %{tag}_r{d} = scf.for {iv} = %c0 to %{tag}_n{d} step %c1 "
            f"iter_args(%{tag}_a{d} = {acc}) -> (f64) {{"
        )
        acc = f"%{tag}_a{d}"
    pad = "  " * len(ivs) + "  "
    lines += [
        pad + f"%{tag}_e = memref.load {memref}[{', '.join(ivs)}] : {o.type}",
        pad + f"%{tag}_ed = arith.extf %{tag}_e : f32 to f64",
        pad + f"%{tag}_sum = arith.addf {acc}, %{tag}_ed : f64",
    ]
    result = f"%{tag}_sum"
    for d in reversed(range(len(ivs))):
        lines.append("  " * d + f"    scf.yield {result} : f64")
        lines.append("  " * d + "  }")
        result = f"%{tag}_r{d}"
    return lines, result


def matmul(m: int, n: int, k: int) -> Kernel:
    a, b, c = Operand((m, k)), Operand((k, n)), Operand((m, n), output=True)
    body = f"  linalg.matmul ins(%a0, %a1 : {a.type}, {b.type}) outs(%a2 : {c.type})"
    return Kernel(f"matmul_{m}x{n}x{k}", (a, b, c), body)


def batch_matmul(batch: int, m: int, n: int, k: int) -> Kernel:
    a, b = Operand((batch, m, k)), Operand((batch, k, n))
    c = Operand((batch, m, n), output=True)
    body = f"  linalg.batch_matmul ins(%a0, %a1 : {a.type}, {b.type}) outs(%a2 : {c.type})"
    return Kernel(f"batch_matmul_{batch}x{m}x{n}x{k}", (a, b, c), body)


def matvec(m: int, n: int) -> Kernel:
    a, x, y = Operand((m, n)), Operand((n,)), Operand((m,), output=True)
    body = f"  linalg.matvec ins(%a0, %a1 : {a.type}, {x.type}) outs(%a2 : {y.type})"
    return Kernel(f"matvec_{m}x{n}", (a, x, y), body)


def conv2d(size: int, channels: int, filters: int, window: int = 3) -> Kernel:
    inp = Operand((1, size + window - 1, size + window - 1, channels))
    filt = Operand((window, window, channels, filters))
    out = Operand((1, size, size, filters), output=True)
    body = (
        "  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, "
        "strides = dense<1> : tensor<2xi64>} "
        f"ins(%a0, %a1 : {inp.type}, {filt.type}) outs(%a2 : {out.type})"
    )
    return Kernel(f"conv2d_{size}x{size}x{channels}x{filters}", (inp, filt, out), body)


def _generic(maps: Sequence[str], iterators: Sequence[str], operands: Sequence[Operand]) -> str:
    ins = [(i, o) for i, o in enumerate(operands) if not o.output]
    outs = [(i, o) for i, o in enumerate(operands) if o.output]
    return (
        "  linalg.generic {indexing_maps = ["
        + ", ".join(maps)
        + "], iterator_types = ["
        + ", ".join(f'"{t}"' for t in iterators)
        + "]} ins("
        + ", ".join(f"%a{i}" for i, _ in ins)
        + " : "
        + ", ".join(o.type for _, o in ins)
        + ") outs("
        + ", ".join(f"%a{i}" for i, _ in outs)
        + " : "
        + ", ".join(o.type for _, o in outs)
        + ") {\n"
    )


def _sum(name: str, a: Operand, s: Operand, maps: Sequence[str]) -> Kernel:
    """``s`` += the elements of ``a`` along the reduction loop of ``maps``
    (parallel loop first)."""
    body = (
        _generic(maps, ["parallel", "reduction"], (a, s))
        + "  ^bb0(%x: f32, %acc: f32):\n"
        + "    %r = arith.addf %acc, %x : f32\n"
        + "    linalg.yield %r : f32\n  }"
    )
    return Kernel(name, (a, s), body)


def row_sum(m: int, n: int) -> Kernel:
    maps = ["affine_map<(i, j) -> (i, j)>", "affine_map<(i, j) -> (i)>"]
    return _sum(f"row_sum_{m}x{n}", Operand((m, n)), Operand((m,), output=True), maps)


def column_sum(m: int, n: int) -> Kernel:
    maps = ["affine_map<(j, i) -> (i, j)>", "affine_map<(j, i) -> (j)>"]
    return _sum(f"column_sum_{m}x{n}", Operand((m, n)), Operand((n,), output=True), maps)


def elementwise_chain(m: int, n: int) -> Kernel:
    a, b, c = Operand((m, n)), Operand((m, n)), Operand((m, n), output=True)
    ident = "affine_map<(i, j) -> (i, j)>"
    body = (
        _generic([ident, ident, ident], ["parallel", "parallel"], (a, b, c))
        + "  ^bb0(%x: f32, %y: f32, %o: f32):\n"
        + "    %s = arith.addf %x, %y : f32\n"
        + "    %p = arith.mulf %s, %x : f32\n"
        + "    %z = arith.constant 0.0 : f32\n"
        + "    %r = arith.maximumf %p, %z : f32\n"
        + "    linalg.yield %r : f32\n  }"
    )
    return Kernel(f"elementwise_{m}x{n}", (a, b, c), body)


def transpose_add(n: int) -> Kernel:
    a, b, c = Operand((n, n)), Operand((n, n)), Operand((n, n), output=True)
    body = (
        _generic(
            [
                "affine_map<(i, j) -> (j, i)>",
                "affine_map<(i, j) -> (i, j)>",
                "affine_map<(i, j) -> (i, j)>",
            ],
            ["parallel", "parallel"],
            (a, b, c),
        )
        + "  ^bb0(%x: f32, %y: f32, %o: f32):\n"
        + "    %r = arith.addf %x, %y : f32\n"
        + "    linalg.yield %r : f32\n  }"
    )
    return Kernel(f"transpose_add_{n}", (a, b, c), body)


def suite() -> List[Kernel]:
    """The kernels of the tiling study, several sizes of each kind."""
    return [
        matmul(256, 256, 256),
        matmul(384, 384, 384),
        matmul(128, 512, 256),
        matmul(64, 1024, 64),
        batch_matmul(8, 128, 128, 128),
        matvec(2048, 2048),
        conv2d(64, 32, 32),
        conv2d(32, 64, 64),
        row_sum(2048, 2048),
        column_sum(2048, 2048),
        elementwise_chain(1024, 1024),
        transpose_add(2048),
    ]


#: Which kinds of kernel validate and which are held out (a kind is a
#: project: its sizes are never split); the other kinds train.
SPLITS: Dict[str, str] = {
    "conv2d": "validation",
    "transpose_add": "validation",
    "batch_matmul": "held-out",
    "column_sum": "held-out",
}


def kind_of(name: str) -> str:
    """A kernel's kind: its name without its sizes (``matmul_256x256x256``: matmul)."""
    return name.rsplit("_", 1)[0]


def split_of(name: str) -> str:
    """The split of the suite's kernel called ``name``."""
    return SPLITS.get(kind_of(name), "train")


def tools() -> None:
    """Raises FileNotFoundError naming the first MLIR tool that is missing."""
    for tool in ("mlir-opt-19", "mlir-cpu-runner-19"):
        if shutil.which(tool) is None:
            raise FileNotFoundError(f"{tool} (apt install mlir-19-tools)")
    if not RUNNER_UTILS.exists():
        raise FileNotFoundError(str(RUNNER_UTILS))


def tile_command(source: Path, out: Path, plugin: Path, settings: TilingPassSettings) -> List[str]:
    """mlir-opt-19 running the plugin's mlbridge-tile on ``source``, told
    ``settings`` (ValueError when one cannot be written as a pass option)."""
    return [
        "mlir-opt-19",
        f"--load-pass-plugin={plugin}",
        f"--pass-pipeline={settings.pipeline()}",
        str(source),
        "-o",
        str(out),
    ]


def tile(
    source: Path, out: Path, plugin: Path, settings: TilingPassSettings
) -> "subprocess.CompletedProcess[str]":
    """Runs :func:`tile_command`; raises :class:`~mlbridge.session.ToolError` on failure."""
    return run_tool(tile_command(source, out, plugin, settings), timeout=TOOL_TIMEOUT)


def lower(tiled: Path, lowered: Path) -> None:
    """Lowers a tiled module to the LLVM dialect (:data:`LOWERING`)."""
    run_tool(
        ["mlir-opt-19", f"--pass-pipeline={LOWERING}", str(tiled), "-o", str(lowered)],
        timeout=TOOL_TIMEOUT,
    )


def execute(lowered: Path) -> Tuple[float, float]:
    """Runs a lowered module: the fastest time (s) and the checksum."""
    done = run_tool(
        [
            "mlir-cpu-runner-19",
            str(lowered),
            "-e",
            "main",
            "-entry-point-result=void",
            "-O3",
            f"-shared-libs={RUNNER_UTILS}",
        ],
        timeout=TOOL_TIMEOUT,
    )
    seconds, checksum = done.stdout.split()[:2]
    return float(seconds), float(checksum)


def run(tiled: Path, work: Path) -> Tuple[float, float]:
    """Lowers the tiled module and runs it: the fastest time (s) and the checksum."""
    lowered = work / (tiled.stem + ".llvm.mlir")
    lower(tiled, lowered)
    return execute(lowered)
