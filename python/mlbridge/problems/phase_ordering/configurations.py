"""Size configurations of clang-19 measured as users measure them.

A configuration is what a user could set once for a whole build: clang's
own ``-Oz`` or ``-Os``, ``-Oz`` with a knob (``-mllvm -inline-threshold=N``,
the machine outliner), or a module pipeline run by ``mlbridge-phase-service
--pipeline`` (``default<Oz>`` twice, ``default<Oz>`` then function merging)
followed by clang's ``-Oz`` code generation; or a model choosing the
pipeline in the service (``--runner``), as a deployed chooser does. Every unit of a corpus is
compiled under every configuration and its object measured in allocated
bytes (``.text`` beside): the table behind three figures,

- the best constant configuration, chosen on the validation projects
  (:func:`best_constant`) and reported on the test projects;
- the per-module search's bound (:func:`per_unit_best`): each unit under the
  configuration that is smallest for it, a search with a budget of one
  compilation per configuration and unit;
- the ratios of any of them to ``-Oz``, per project (:func:`project_ratios`).

The harness identity (``default<Oz>`` through the service, then clang's
code generation, is plain ``clang -Oz`` byte for byte) is what makes a
pipeline configuration comparable with a plain one; docs/phase-ordering.md
states where it was measured.
"""

from __future__ import annotations

import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from mlbridge.errors import MlbridgeError
from mlbridge.llvm.outcomes import SIZE_METRICS, OutcomeError, object_sizes
from mlbridge.session import ToolError, run_tool

#: Longest one compilation (or one pipeline run) may take.
COMPILE_TIMEOUT = 300.0
#: The configuration every ratio is against.
OZ = "Oz"


class ConfigurationError(MlbridgeError):
    """A configuration table cannot give the figure asked for."""


@dataclass(frozen=True)
class Configuration:
    """One way to compile every unit: ``flags`` added to clang's (after
    ``-Oz`` unless they set another level); with ``pipeline``, the module
    goes through ``mlbridge-phase-service --pipeline`` first and ``flags``
    reach clang's code generation of its result."""

    name: str
    flags: Tuple[str, ...] = ()
    pipeline: Optional[str] = None
    #: Instead of a pipeline: a runner configuration whose model chooses
    #: the unit's actions in the service (``--runner``), at most
    #: ``max_steps`` of them (a chooser: 1).
    runner: Optional[str] = None
    max_steps: int = 1
    #: With ``runner``: its model does not read ``baseline_instcount``, so
    #: the service skips computing it (``--no-baseline``), as deployed.
    no_baseline: bool = False


#: The constant configurations a user of clang-19 (or of the phase service's
#: wrapper) has today. Unwind tables are kept (``-fno-asynchronous-unwind-
#: tables`` shrinks objects by dropping what debuggers, profilers and C++
#: exceptions need: not an optimisation).
CANDIDATES: Tuple[Configuration, ...] = (
    Configuration(OZ),
    Configuration("Os", ("-Os",)),
    *(
        Configuration(f"inline-threshold={n}", ("-mllvm", f"-inline-threshold={n}"))
        for n in (-20, -10, 0, 10, 25)
    ),
    Configuration("machine-outliner", ("-mllvm", "-enable-machine-outliner")),
    Configuration("mergefunc", pipeline="default<Oz>,mergefunc"),
    Configuration("Oz-twice", pipeline="default<Oz>,default<Oz>"),
    *(
        Configuration(
            f"inline-threshold={n}+mergefunc",
            pipeline=f"default<Oz;inline-threshold={n}>,mergefunc",
        )
        for n in (0, 10, 25)
    ),
    # clang -Os's code from the -Oz front end's module (the optsize element of
    # the phase service's pipelines), so that a per-module choice made after
    # the front end can give it; with function merging too
    Configuration("optsize", pipeline="optsize,default<Os>"),
    Configuration("optsize+mergefunc", pipeline="optsize,default<Os>,mergefunc"),
)


@dataclass(frozen=True)
class Unit:
    """One translation unit: its ``source`` compiled with ``flags``;
    ``module`` its bitcode before optimisation (``mlbridge.gym.modules``),
    needed by pipeline configurations; ``codegen_flags`` the options that
    still matter when compiling that module."""

    name: str
    project: str
    split: str
    source: Path
    flags: Tuple[str, ...]
    module: Optional[Path] = None
    codegen_flags: Tuple[str, ...] = ()


#: A unit's sizes under one configuration (``allocated``, ``text``), or why
#: it could not be compiled so.
Outcome = Union[Dict[str, int], str]
#: Unit name -> configuration name -> outcome.
Table = Dict[str, Dict[str, Outcome]]


def _object(
    unit: Unit, config: Configuration, work: Path, clang: str, service: Optional[str]
) -> Path:
    out = work / "unit.o"
    level = [] if any(f.startswith("-O") for f in config.flags) else ["-Oz"]
    if config.pipeline is None and config.runner is None:
        command = [clang, "-c", "-w", *unit.flags, *level, *config.flags, str(unit.source)]
    else:
        if unit.module is None or service is None:
            raise ConfigurationError(f"{config.name} needs the unit's module and the service")
        optimised = work / "unit.bc"
        if config.runner is not None:
            step = ["--runner", config.runner, "--max-steps", str(config.max_steps)]
            step += ["--no-baseline"] if config.no_baseline else []
        else:
            step = ["--pipeline", str(config.pipeline)]
        run_tool(
            [service, *step, "--module", str(unit.module), "-o", str(optimised)],
            timeout=COMPILE_TIMEOUT,
        )
        command = [
            clang,
            "-c",
            "-w",
            *unit.codegen_flags,
            *level,
            *config.flags,
            "-Xclang",
            "-disable-llvm-passes",
            str(optimised),
        ]
    run_tool([*command, "-o", str(out)], timeout=COMPILE_TIMEOUT)
    return out


def measure_unit(
    unit: Unit,
    configurations: Sequence[Configuration],
    *,
    clang: str,
    service: Optional[str] = None,
) -> Dict[str, Outcome]:
    """``unit`` compiled under each configuration: configuration name ->
    its object's sizes, or why it did not compile."""
    outcomes: Dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="mlbridge-sizes-") as tmp:
        for config in configurations:
            try:
                outcomes[config.name] = object_sizes(
                    str(_object(unit, config, Path(tmp), clang, service))
                )
            except (ToolError, OutcomeError, ConfigurationError) as err:
                outcomes[config.name] = str(err)[-2000:]
    return outcomes


def measure(
    units: Sequence[Unit],
    configurations: Sequence[Configuration] = CANDIDATES,
    *,
    clang: str,
    service: Optional[str] = None,
    jobs: Optional[int] = None,
    known: Optional[Mapping[str, Mapping[str, Outcome]]] = None,
) -> Table:
    """Every unit under every configuration it has no outcome of in
    ``known`` (a table measured before: a configuration added later is
    measured alone), ``jobs`` units at a time; the new outcomes."""
    names = [c.name for c in configurations]
    if len(set(names)) != len(names) or OZ not in names:
        raise ConfigurationError(f"configurations need distinct names and {OZ!r}: {names}")
    known = known or {}
    missing = {
        u.name: [c for c in configurations if c.name not in known.get(u.name, {})] for u in units
    }
    todo = [u for u in units if missing[u.name]]
    with ThreadPoolExecutor(max_workers=jobs or min(2, os.cpu_count() or 1)) as pool:
        rows = list(
            pool.map(lambda u: measure_unit(u, missing[u.name], clang=clang, service=service), todo)
        )
    return {unit.name: row for unit, row in zip(todo, rows)}


def read_table(path: Path) -> Table:
    """The table of a JSON-lines file of ``{"unit", "outcomes"}`` rows (as
    :func:`append_rows` writes them; a later row adds to an earlier one of
    its unit), empty when there is no file."""
    table: Table = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            table.setdefault(row["unit"], {}).update(row["outcomes"])
    return table


def append_rows(path: Path, rows: Table) -> None:
    """``rows`` appended to the JSON-lines file ``path``, a line per unit."""
    with path.open("a") as out:
        for unit, outcomes in rows.items():
            out.write(json.dumps({"unit": unit, "outcomes": outcomes}) + "\n")


def complete_units(table: Table) -> List[str]:
    """The units every configuration compiled: the only ones compared."""
    return [name for name, row in table.items() if all(isinstance(o, dict) for o in row.values())]


def _sizes(table: Table, unit: str, config: str) -> Dict[str, int]:
    outcome = table[unit][config]
    if not isinstance(outcome, dict):
        raise ConfigurationError(f"{unit} did not compile under {config}: {outcome}")
    return outcome


def total(table: Table, units: Sequence[str], choice: Mapping[str, str], metric: str) -> int:
    """Bytes (``metric``: ``allocated`` or ``text``) of ``units``, each under
    the configuration ``choice`` gives it."""
    return sum(_sizes(table, u, choice[u])[metric] for u in units)


def best_constant(
    table: Table, units: Sequence[str], metric: str = "allocated"
) -> Tuple[str, Dict[str, int]]:
    """The configuration with the fewest total bytes over ``units`` (the
    validation projects' units), and each configuration's total. A tie goes
    to ``-Oz``, then to the first configuration."""
    if not units:
        raise ConfigurationError("no unit to choose a configuration on")
    configs = list(table[units[0]])
    totals = {c: total(table, units, dict.fromkeys(units, c), metric) for c in configs}
    best = min(configs, key=lambda c: (totals[c], c != OZ, configs.index(c)))
    return best, totals


def per_unit_best(table: Table, units: Sequence[str], metric: str = "allocated") -> Dict[str, str]:
    """Unit -> the configuration smallest for it (``-Oz`` on a tie): the
    per-module search over the configurations."""
    choice = {}
    for unit in units:
        row = table[unit]
        choice[unit] = min(row, key=lambda c: (_sizes(table, unit, c)[metric], c != OZ))
    return choice


def project_ratios(
    table: Table,
    units: Sequence[Unit],
    choice: Mapping[str, str],
) -> Dict[str, Dict[str, float]]:
    """Project -> units, and allocated and ``.text`` bytes under ``choice``
    as a ratio to ``-Oz`` (the complete units of ``units``), with a
    ``total`` row over all of them."""
    complete = set(complete_units(table))
    by_project: Dict[str, List[str]] = {}
    for unit in units:
        if unit.name in complete:
            by_project.setdefault(unit.project, []).append(unit.name)
    by_project["total"] = [u for names in by_project.values() for u in names]
    out: Dict[str, Dict[str, float]] = {}
    for project, names in by_project.items():
        oz = dict.fromkeys(names, OZ)
        row: Dict[str, float] = {"units": float(len(names))}
        for metric in SIZE_METRICS:
            base = total(table, names, oz, metric)
            row[metric] = total(table, names, choice, metric) / base if base else 1.0
            row[f"oz_{metric}"] = float(base)
        out[project] = row
    return out
