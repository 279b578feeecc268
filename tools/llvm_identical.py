"""Does the inline-advisor plugin leave clang's code alone when it answers
LLVM's own decision? Every module of a corpus split compiled three ways with
clang of one LLVM major, the objects compared byte for byte:

- plain ``clang-N -Oz -c``;
- the plugin with its in-process ``default`` runner (LLVM's decision);
- the ``default`` policy served over pipes by :func:`mlbridge.llvm.run_compiler`
  (on LLVM 16 through the plugin's pipe runner, on 19 through LLVM's
  interactive mode).

Usage: python tools/llvm_identical.py --llvm 16 [--split all] [--corpus PATH]
Prints a JSON report (docs/llvm-versions.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from mlbridge import child_process
from mlbridge.corpus.defaults import default_corpus
from mlbridge.gym.corpus_modules import corpus_modules
from mlbridge.llvm import INLINING, run_compiler
from mlbridge.llvm.versions import SUPPORTED, LlvmTools
from mlbridge.native import plugin_path
from mlbridge.policies import load_policy
from mlbridge.session import run_tool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llvm", type=int, choices=SUPPORTED, required=True)
    parser.add_argument("--split", default="all", help="train, validation, held-out or all")
    parser.add_argument("--corpus", type=Path, help="default: the loop's default corpus")
    args = parser.parse_args()
    tools = LlvmTools(args.llvm)
    plugin = plugin_path(llvm=args.llvm)
    policy = load_policy("default", INLINING)
    with tempfile.TemporaryDirectory(prefix="mlbridge-identical-") as tmp:
        work = Path(tmp)
        modules = corpus_modules(
            args.corpus or default_corpus(), args.split, False, work / "modules", clang=tools.clang
        )
        differ: List[str] = []
        start = time.monotonic()
        for module in modules:
            flags = ["-Oz", "-c", "-w", *module.codegen_flags(), str(module.bitcode)]
            plain, inprocess, served = work / "plain.o", work / "inprocess.o", work / "served.o"
            run_tool([tools.clang, *flags, "-o", str(plain)], timeout=1800)
            run_tool(
                [tools.clang, f"-fpass-plugin={plugin}", *flags, "-o", str(inprocess)],
                timeout=1800,
                env=child_process.child_environment({"MLBRIDGE_INLINE_RUNNER": "default"}),
            )
            result = run_compiler(
                [tools.clang, *flags, "-o", str(served)],
                {INLINING: policy},
                timeout=1800,
                llvm=args.llvm,
            )
            if not result.ok:
                print(f"{module.name}: {result.error}", file=sys.stderr)
                return 1
            expected = plain.read_bytes()
            if inprocess.read_bytes() != expected or served.read_bytes() != expected:
                differ.append(module.name)
        report: Dict[str, Any] = {
            "llvm": args.llvm,
            "split": args.split,
            "modules": len(modules),
            "programs": sorted({m.program for m in modules}),
            "identical": len(modules) - len(differ),
            "differ": differ,
            "seconds": round(time.monotonic() - start, 1),
        }
    print(json.dumps(report, indent=1))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
