"""Trains the per-module pipeline chooser on training projects and selects
it on validation projects (docs/phase-ordering.md#a-per-module-pipeline-choice).

Reads the table of ``studies/size_configurations.py`` (``--table``: every
unit under every configuration, allocated bytes), and each unit's features
from the phase service (its observation when it loads the module). Trains
``fit_chooser`` on the training units for each L2 weight of ``--l2``,
measures each on the validation units (total allocated bytes under its
choices, as a ratio to ``-Oz``, in all and per project), keeps the best of
those that make no validation project larger than ``-Oz`` (the best of all
when none does), and writes it as ONNX with
a report beside: per validation project the chooser, the best constant
(chosen on validation among every configuration of the table) and the
per-module search over the chooser's choices. Test projects are not read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

from mlbridge.corpus.load import load_corpus
from mlbridge.gym.modules import Module, default_cache_dir, prepare_modules
from mlbridge.llvm.versions import tools
from mlbridge.native import phase_service_path
from mlbridge.problems.phase_ordering.chooser import (
    CHOICES,
    FEATURE_INPUTS,
    action_indices,
    export_chooser,
    fit_chooser,
    service_inputs,
)
from mlbridge.problems.phase_ordering.configurations import OZ, best_constant, read_table
from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv, describe_service

SPLITS = ("train", "validation")
#: A training unit's weight in the chooser's loss, from its -Oz bytes.
WEIGHTINGS = {"bytes": lambda oz: oz, "sqrt": np.sqrt, "unit": np.ones_like}


def features(modules: List[Module]) -> Dict[str, np.ndarray]:
    """Each module's features: the service's observation when it loads it,
    the entries of FEATURE_INPUTS."""
    env = PhaseOrderingEnv(modules=modules, max_steps=1)
    try:
        names = env.feature_names
        autophase = [i for i, n in enumerate(names) if n.split("[")[0] not in _SCALARS]
        keep = autophase + [names.index(n) for n in FEATURE_INPUTS[1:]]
        out = {}
        for module in modules:
            observation, _ = env.reset(options={"module": module.name})
            out[module.name] = np.asarray(observation, dtype=float)[keep]
        return out
    finally:
        env.close()


_SCALARS = {"instcount", "initial_instcount", "baseline_instcount", "status", "module", "steps"}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--table", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--l2", type=float, nargs="+", default=[0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1])
    parser.add_argument(
        "--weighting",
        nargs="+",
        choices=sorted(WEIGHTINGS),
        default=["bytes"],
        help="how much a training unit counts: its -Oz bytes (the total), their "
        "square root, or each alike; with several, chosen on validation as L2 is",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()

    table = read_table(args.table)
    configs = [config for _, config in CHOICES]
    programs = [p for p in load_corpus(args.corpus) if p.split in SPLITS]
    by_name = {p.name: p for p in programs if len(p.sources) == 1}
    usable = [
        u
        for u, row in table.items()
        if u in by_name
        and all(isinstance(row.get(c), dict) for c in configs)
        and all(isinstance(o, dict) for o in row.values())
        and row[OZ]["allocated"] > 0  # an empty object: nothing to choose
    ]
    modules = prepare_modules(
        [by_name[u] for u in usable], default_cache_dir(), clang=tools().clang
    )
    # The service's features, made once (for the inputs FEATURE_INPUTS names).
    cached = args.out / "features.json"
    saved = json.loads(cached.read_text()) if cached.exists() else {}
    known = saved.get("units", {}) if saved.get("inputs") == list(FEATURE_INPUTS) else {}
    missing = [m for m in modules if m.name not in known]
    if missing:
        known.update({k: v.tolist() for k, v in features(missing).items()})
        args.out.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"inputs": list(FEATURE_INPUTS), "units": known}))
    x_of = {m.name: np.asarray(known[m.name], dtype=float) for m in modules}
    split_of = {u: by_name[u].split for u in usable}
    project_of = {u: by_name[u].project for u in usable}

    def arrays(split: str):
        names = [u for u in usable if split_of[u] == split and u in x_of]
        x = np.stack([x_of[u] for u in names])
        oz = np.array([table[u][OZ]["allocated"] for u in names], dtype=float)
        ratios = np.array(
            [[table[u][c]["allocated"] / table[u][OZ]["allocated"] for c in configs] for u in names]
        )
        return names, x, ratios, oz

    train, validation = arrays("train"), arrays("validation")
    # Units where every choice makes the same object teach nothing; left in,
    # their bytes (a generator's tables in .bss) would only scale the others'.
    informative = np.ptp(train[2], axis=1) > 0
    fit_x, fit_ratios, fit_oz = (a[informative] for a in train[1:])

    def total(data, chosen) -> float:
        _, _, ratios, oz = data
        return float((ratios[np.arange(len(oz)), chosen] * oz).sum() / oz.sum())

    def largest_project(data, chosen) -> float:
        names, _, ratios, oz = data
        bytes_chosen = ratios[np.arange(len(oz)), chosen] * oz
        projects = np.array([project_of[u] for u in names])
        return max(
            float(bytes_chosen[projects == p].sum() / oz[projects == p].sum())
            for p in set(projects)
        )

    candidates = []
    for weighting, l2 in ((w, l2) for w in args.weighting for l2 in args.l2):
        chooser = fit_chooser(fit_x, fit_ratios, WEIGHTINGS[weighting](fit_oz), l2=l2)
        on_validation = chooser.choose(validation[1])
        candidates.append(
            {
                "weighting": weighting,
                "l2": l2,
                "train": total(train, chooser.choose(train[1])),
                "validation": total(validation, on_validation),
                "largest_validation_project": largest_project(validation, on_validation),
                "model": chooser,
            }
        )
    safe = [c for c in candidates if c["largest_validation_project"] <= 1.0]
    best = min(safe or candidates, key=lambda c: (c["validation"], -c["l2"]))
    chooser = best["model"]
    description = describe_service(phase_service_path())
    args.out.mkdir(parents=True, exist_ok=True)
    export_chooser(
        chooser,
        args.out / "pipeline-size.onnx",
        service_inputs(description),
        action_indices(description),
    )

    constant, totals = best_constant(table, validation[0])
    chosen = chooser.choose(validation[1])
    per_project: Dict[str, Dict[str, float]] = {}
    for project in sorted({project_of[u] for u in validation[0]}):
        idx = [i for i, u in enumerate(validation[0]) if project_of[u] == project]
        names = [validation[0][i] for i in idx]
        oz = sum(table[u][OZ]["allocated"] for u in names)
        per_project[project] = {
            "units": len(names),
            "chooser": sum(table[u][configs[chosen[i]]]["allocated"] for i, u in zip(idx, names))
            / oz,
            "best_constant": sum(table[u][constant]["allocated"] for u in names) / oz,
            "search": sum(min(table[u][c]["allocated"] for c in configs) for u in names) / oz,
        }
    report = {
        "train_units": len(train[0]),
        "train_units_informative": int(informative.sum()),
        "validation_units": len(validation[0]),
        "l2": [{k: v for k, v in c.items() if k != "model"} for c in candidates],
        "candidates_no_project_above_oz": len(safe),
        "chosen_l2": best["l2"],
        "chosen_weighting": best["weighting"],
        "best_constant": constant,
        "best_constant_validation": totals[constant] / totals[OZ],
        "chooser_validation": best["validation"],
        "search_validation": total(validation, np.argmin(validation[2] * 1.0, axis=1)),
        "choices_on_validation": {
            configs[k]: int((chosen == k).sum()) for k in range(len(configs))
        },
        "per_project": per_project,
        "seconds": round(time.monotonic() - started, 1),
    }
    (args.out / "chooser.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "per_project"}, indent=1))
    for project, row in per_project.items():
        cells = "  ".join(f"{k} {row[k]:.4f}" for k in ("chooser", "best_constant", "search"))
        print(f"  {project:20} {row['units']:4}  {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
