"""The harness identity: is ``default<Oz>`` through the phase service, then
clang's ``-Oz`` code generation, plain ``clang-19 -Oz``, byte for byte?

For every unit of a corpus's split, three objects:

- ``service``: the unit's module (``clang -Oz -Xclang -disable-llvm-passes
  -emit-llvm``) loaded by ``mlbridge-phase-service``, the ``default<Oz>``
  action applied, the state written (``PhaseOrderingEnv.write_bitcode``) and
  compiled by ``clang -Oz -Xclang -disable-llvm-passes -c``: the harness's
  object of the default pipeline;
- ``module``: ``clang -Oz -c`` of the same module;
- ``source``: ``clang -Oz -c`` of the unit's source with its own options;
- ``driver`` (where ``mlbridge-pipeline-clang`` is built): the same command
  through it with ``--pipeline 'default<Oz>'``: front end, the pipeline and
  code generation in one process, as a build's wrappers run it.

It prints the counts and writes ``identity.json`` with every unit that
differs. Run it on training and validation projects (it reads sources).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from mlbridge.corpus.load import load_corpus
from mlbridge.gym.modules import Module, default_cache_dir, module_name, prepare_modules
from mlbridge.llvm.versions import tools
from mlbridge.native import pipeline_clang_path
from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv

SPLITS = ("train", "validation")


def _compile(command: List[str], out: Path) -> bytes:
    subprocess.run([*command, "-o", str(out)], check=True, capture_output=True, timeout=300)
    return out.read_bytes()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--splits", nargs="+", default=list(SPLITS), choices=SPLITS)
    parser.add_argument("--max-units", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("identity.json"))
    args = parser.parse_args(argv)

    programs = [p for p in load_corpus(args.corpus) if p.split in args.splits]
    clang = tools().clang
    driver = pipeline_clang_path()
    failed: Dict[str, str] = {}
    modules: List[Module] = prepare_modules(
        programs, default_cache_dir(), clang=clang, failed=failed
    )
    sources = {module_name(p, s): s for p in programs for s in p.sources}
    by_program = {p.name: p for p in programs}
    if args.max_units is not None:
        modules = modules[: args.max_units]
    env = PhaseOrderingEnv(modules=modules, max_steps=2)
    rows: List[Dict[str, Any]] = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for module in modules:
                env.reset(options={"module": module.name})
                env.step(env.default_action)
                state = env.write_bitcode(work / "state.bc")
                flags = module.codegen_flags()
                base = [clang, "-c", "-w", *flags, "-Oz"]
                service = _compile(
                    [*base, "-Xclang", "-disable-llvm-passes", str(state)], work / "s.o"
                )
                plain = _compile([*base, str(module.bitcode)], work / "m.o")
                program = by_program[module.program]
                source = sources[module.name]
                compiled = _compile(
                    [clang, "-c", "-w", *program.flags, "-Oz", str(source)], work / "c.o"
                )
                row = {
                    "unit": module.name,
                    "project": program.project,
                    "service_is_module": service == plain,
                    "service_is_source": service == compiled,
                    "module_is_source": plain == compiled,
                }
                if driver is not None:
                    own = [str(driver), "--pipeline", "default<Oz>", "--", "-c", "-w"]
                    own += [*program.flags, "-Oz", str(source)]
                    row["driver_is_source"] = _compile(own, work / "d.o") == compiled
                rows.append(row)
    finally:
        env.close()
    counts = {
        key: sum(r[key] for r in rows)
        for key in ("service_is_module", "service_is_source", "module_is_source")
    }
    if driver is not None:
        counts["driver_is_source"] = sum(r["driver_is_source"] for r in rows)
    report = {
        "units": len(rows),
        "projects": sorted({r["project"] for r in rows}),
        "counts": counts,
        "not_compiled": failed,
        "differ": [r for r in rows if not all(r[k] for k in counts)],
        "seconds": round(time.monotonic() - started, 1),
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{len(rows)} units of {len(report['projects'])} projects; {len(failed)} not compiled")
    for key, value in counts.items():
        print(f"  {key}: {value}/{len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
