"""Several PPO runs of one configuration, one per seed, the best on the
validation programs kept (``mlbridge train TASK --seeds 0,1,2``).

PPO on the inlining problem finds a policy better than ``-Oz`` with one
seed in four (docs/inlining-size.md, "PPO across seeds"), so one run is a
gamble and several are a method. The runs share one validation measure
(the same validation units), so their ratios compare::

    OUT/seed-S/        one run of :func:`mlbridge.train.ppo.train` per seed
    OUT/seeds.json     per seed: its best validation ratio, steps and bonus,
                       whether it wrote a policy; and the seed kept
    OUT/policy.onnx    a copy of the kept seed's policy (none: no seed did
                       better than the compiler's own heuristic)

With ``resume``, a seed whose run finished (its ``run.json``) is not run
again, and an interrupted one continues from its newest checkpoint.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from mlbridge.errors import MlbridgeError
from mlbridge.train.ppo import TrainConfig, train

#: The file saying what each seed's run found, in the run directory.
SEEDS = "seeds.json"


def seed_dir(out: Path, seed: int) -> Path:
    """The run directory of ``seed`` under ``out``."""
    return out / f"seed-{seed}"


def train_seeds(
    config: TrainConfig,
    seeds: Sequence[int],
    validate: Any,
    progress: Optional[Callable[[str], None]] = None,
) -> Dict[str, Any]:
    """Trains ``config`` once per seed (``config.seed`` is not used) in
    :func:`seed_dir`, measured by ``validate``; copies the policy of the
    seed with the best validation ratio (the first of equals) to
    ``config.out / "policy.onnx"``. Returns what :data:`SEEDS` says."""
    if validate is None:
        raise MlbridgeError("several seeds need validation programs to choose between them")
    if not seeds or len(set(seeds)) != len(seeds):
        raise MlbridgeError(f"--seeds needs distinct seeds, not {list(seeds)}")
    config.out.mkdir(parents=True, exist_ok=True)
    kept = config.out / "policy.onnx"
    kept.unlink(missing_ok=True)
    runs: List[Dict[str, Any]] = []
    for seed in seeds:
        out = seed_dir(config.out, seed)
        finished = out / "run.json"
        if config.resume and finished.is_file():
            summary = json.loads(finished.read_text())
            if progress:
                progress(f"seed {seed}: finished before, not run again")
        else:
            resume = config.resume and (out / "checkpoints" / "state.json").is_file()
            if progress:
                progress(f"seed {seed}: {'resuming' if resume else 'training'} in {out}")
            summary = train(replace(config, seed=seed, out=out, resume=resume), validate, progress)
        runs.append(_seed_result(seed, summary))
    best = min(
        (r for r in runs if r["policy"] is not None),
        key=lambda r: r["best_ratio"],
        default=None,
    )
    if best is not None:
        shutil.copyfile(best["policy"], kept)
    report = {
        "seeds": runs,
        "kept": None if best is None else best["seed"],
        "policy": str(kept) if best is not None else None,
    }
    (config.out / SEEDS).write_text(json.dumps(report, indent=2) + "\n")
    return report


def _seed_result(seed: int, summary: Dict[str, Any]) -> Dict[str, Any]:
    """What :data:`SEEDS` says of one seed's run, from its summary."""
    validation = summary.get("validation")
    if not isinstance(validation, dict):
        raise MlbridgeError(f"seed {seed}: its run.json has no validation curve")
    policy = summary.get("policy")
    return {
        "seed": seed,
        "best_ratio": float(validation["best_ratio"]),
        "best_steps": int(validation["best_steps"]),
        "best_deference": validation.get("best_deference"),
        "timesteps": int(summary["timesteps"]),
        "policy": policy if policy and Path(policy).is_file() else None,
    }


__all__ = ["SEEDS", "seed_dir", "train_seeds"]
