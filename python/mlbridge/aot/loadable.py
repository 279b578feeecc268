"""An ONNX model compiled ahead of time into a loadable module: mlbridge-aot's
C++ built by the C++ compiler into a shared object exporting the model's C
interface (what the plugins' ``aot`` runner loads)."""

from __future__ import annotations

from pathlib import Path

from mlbridge.errors import MlbridgeError
from mlbridge.session import ToolError, run_tool

#: Longest the compilation of an AOT model module may take.
AOT_COMPILE_TIMEOUT = 600.0


def build_aot_module(
    onnx_path: Path, out_dir: Path, class_name: str = "InlinePolicy", cxx: str = "c++"
) -> Path:
    """mlbridge-aot + the C++ compiler: a loadable module exporting the
    model's C interface (what the plugin's ``aot`` runner loads)."""
    from mlbridge.aot import compile_model

    header, source = compile_model(onnx_path, class_name=class_name).write(out_dir)
    module = out_dir / f"{class_name}.so"
    command = [
        cxx,
        "-std=c++17",
        "-O3",
        "-ffp-contract=fast",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        "-DMLBRIDGE_AOT_ENTRY_POINT",
        str(source),
        "-o",
        str(module),
    ]
    try:
        run_tool(command, timeout=AOT_COMPILE_TIMEOUT, tail=2000)
    except ToolError as err:
        raise MlbridgeError(f"compiling the AOT model failed: {err}") from None
    return module
