"""The compile CPU of the pipeline wrappers against plain ``clang-19 -Oz``,
per project (docs/phase-ordering.md#deployment-in-a-build).

Each unit of a corpus's split (each split's first ``--max-units``, projects
interleaved) is compiled to an object several ways, in an order rotated round
by round: plain ``clang-19 -Oz -c``; the wrappers with a constant
``--pipeline`` (``default<Oz>``, the same object: the harness's own cost);
the wrappers with ``--policy`` choosing the pipeline in the service (one
step), and with ``--aot`` the same policy's AOT-compiled module doing so
(``--runner aot:MODULE``: no ONNX Runtime to start); with ``--flags``,
plain ``clang-19 -Oz FLAGS``, a constant pipeline given as clang's own
options, whose objects are compared with the
``--pipeline`` ones (allocated and ``.text`` bytes). Where
``mlbridge-pipeline-clang`` is built, every wrapped build is measured twice:
through the Python wrappers running the service, and through the wrappers
running it (named ``... (native)``: the steps in one process). The CPU
seconds (user + system) of every process a compilation starts are summed
(``os.wait4``); the fastest of ``--rounds`` rounds counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from mlbridge.corpus.load import load_corpus
from mlbridge.corpus.split import interleave_projects
from mlbridge.llvm.outcomes import object_sizes
from mlbridge.llvm.versions import tools
from mlbridge.native import phase_service_path, pipeline_clang_path
from mlbridge.problems.phase_ordering.chooser import reads_baseline
from mlbridge.problems.phase_ordering.pipeline_wrapper import write_pipeline_wrappers


def cpu_seconds(command: List[str]) -> float:
    """The CPU seconds of ``command`` and every process it started."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({process.returncode})")
    return usage.ru_utime + usage.ru_stime


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--split", default="validation")
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument(
        "--aot",
        type=Path,
        help="the policy AOT-compiled (mlbridge config --model NAME --aot), measured beside",
    )
    parser.add_argument("--pipeline", default="default<Oz>", help="the constant pipeline")
    parser.add_argument(
        "--flags", help="clang options compiled beside, compared with --pipeline's objects"
    )
    parser.add_argument("--max-units", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    llvm = tools()
    service = str(phase_service_path())
    driver = pipeline_clang_path()
    programs = interleave_projects(
        [p for p in load_corpus(args.corpus) if p.split == args.split], seed=0
    )[: args.max_units]
    work = Path(tempfile.mkdtemp(prefix="mlbridge-cost-"))
    builds: Dict[str, List[str]] = {"Oz": [llvm.clang, "-Oz"]}
    no_baseline = not reads_baseline(args.policy)
    runners = {"chooser": f"onnx:{args.policy.resolve()}"}
    if args.aot is not None:
        runners["chooser-aot"] = f"aot:{args.aot.resolve()}"
    wrapped = {args.pipeline: {"pipeline": args.pipeline}}
    for name, runner in runners.items():
        wrapped[name] = {"runner": runner, "max_steps": 1, "no_baseline": no_baseline}
    drivers = {"": None} if driver is None else {"": None, " (native)": str(driver)}
    for index, (name, what) in enumerate(wrapped.items()):
        for suffix, native in drivers.items():
            cc, _ = write_pipeline_wrappers(
                work / f"wrappers{index}{suffix.strip(' ()')}",
                clang=llvm.clang,
                clangxx=llvm.clangxx,
                service=service,
                driver=native,
                **what,
            )
            builds[name + suffix] = [cc]
    if args.flags:
        builds[args.flags] = [llvm.clang, "-Oz", *shlex.split(args.flags)]
    names = list(builds)
    best: Dict[str, Dict[str, float]] = {}
    identical = 0
    for round_ in range(args.rounds):
        for index, program in enumerate(programs):
            source = program.sources[0]
            turn = (index + round_) % len(names)
            compared = {args.flags, args.pipeline} if round_ == 0 and args.flags else set()
            sizes = {}
            for name in names[turn:] + names[:turn]:
                command = [*builds[name], "-c", "-w", *program.flags, str(source)]
                command += ["-o", str(work / "unit.o")]
                seconds = cpu_seconds(command)
                row = best.setdefault(program.name, {})
                row[name] = min(row.get(name, seconds), seconds)
                if name in compared:
                    sizes[name] = object_sizes(str(work / "unit.o"))
            if compared:
                identical += sizes[args.flags] == sizes[args.pipeline]
        print(f"round {round_ + 1} done", file=sys.stderr)
    per_project: Dict[str, Dict[str, float]] = {}
    for program in programs:
        totals = per_project.setdefault(program.project, dict.fromkeys(names, 0.0))
        for name in names:
            totals[name] += best[program.name][name]
    totals = {n: sum(p[n] for p in per_project.values()) for n in names}
    per_project["total"] = totals
    report = {
        "units": len(programs),
        "rounds": args.rounds,
        "flags_identical_to_pipeline": identical if args.flags else None,
        "cpu_seconds": per_project,
        "ratios": {
            project: {n: row[n] / row["Oz"] for n in names[1:]}
            for project, row in per_project.items()
        },
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for project, ratio in report["ratios"].items():
        cells = "  ".join(f"{n} {r:.3f}x" for n, r in ratio.items())
        print(f"{project:20} -Oz {per_project[project]['Oz']:8.2f} s  {cells}")
    if args.flags:
        print(f"--flags gave --pipeline's sizes on {identical} of {len(programs)} units")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
