"""Register allocation eviction: at each eviction question of stock
``llc-19``'s greedy allocator, which live range to evict; reward: MLGO's
regalloc score of the allocated code against the default advisor's.

The folder: this declaration; ``environment`` (``RegallocEvictionEnv``);
``score`` (MLGO's regalloc score of llc's allocation); ``deploy`` (the
exported model served to llc-19 by the interactive host, scored)."""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from mlbridge.policies import evict_lowest_density
from mlbridge.problems.capabilities import (
    ActionMask,
    DeployedBuild,
    Heuristic,
    OptimizedModules,
)
from mlbridge.problems.problem import Problem, TensorInputs
from mlbridge.tensor_spec import TensorSpec

#: Candidates per question: 32 interfering live ranges, then the live range
#: being allocated (choosing it evicts nothing: it is split or spilled).
CANDIDATES = 33
#: The deployed model's output: the index of the candidate to evict.
DECISION = "index_to_evict"
#: The legal candidates (1) among the :data:`CANDIDATES`.
MASK = "mask"
#: What LLVM 19's eviction advisor sends at every question, in its order:
#: (name, element type, elements); a per-candidate feature has the shape
#: (1, CANDIDATES), ``progress`` (1,). Checked against the compiler's header
#: at every episode.
FEATURES: Tuple[Tuple[str, str, int], ...] = (
    (MASK, "int64_t", CANDIDATES),
    ("is_free", "int64_t", CANDIDATES),
    ("nr_urgent", "float", CANDIDATES),
    ("nr_broken_hints", "float", CANDIDATES),
    ("is_hint", "int64_t", CANDIDATES),
    ("is_local", "int64_t", CANDIDATES),
    ("nr_rematerializable", "float", CANDIDATES),
    ("nr_defs_and_uses", "float", CANDIDATES),
    ("weighed_reads_by_max", "float", CANDIDATES),
    ("weighed_writes_by_max", "float", CANDIDATES),
    ("weighed_read_writes_by_max", "float", CANDIDATES),
    ("weighed_indvars_by_max", "float", CANDIDATES),
    ("hint_weights_by_max", "float", CANDIDATES),
    ("start_bb_freq_by_max", "float", CANDIDATES),
    ("end_bb_freq_by_max", "float", CANDIDATES),
    ("hottest_bb_freq_by_max", "float", CANDIDATES),
    ("liverange_size", "float", CANDIDATES),
    ("use_def_density", "float", CANDIDATES),
    ("max_stage", "int64_t", CANDIDATES),
    ("min_stage", "int64_t", CANDIDATES),
    ("progress", "float", 1),
)


def shape(count: int) -> Tuple[int, ...]:
    """LLVM's shape of a feature of ``count`` elements."""
    return (1, count) if count > 1 else (1,)


def observation_names() -> Tuple[str, ...]:
    """The flat observation's names: ``feature[i]`` for each candidate ``i``
    of a per-candidate feature, the feature's name for a scalar."""
    return tuple(
        name if count == 1 else f"{name}[{i}]" for name, _, count in FEATURES for i in range(count)
    )


class DensityHeuristic:
    """:func:`mlbridge.policies.evict_lowest_density` (``--policy default``)
    on the flat observation of the features ``names``. Picklable."""

    def __init__(self, names: Sequence[str]) -> None:
        index = {name: i for i, name in enumerate(names)}
        self.mask = [index[f"{MASK}[{i}]"] for i in range(CANDIDATES)]
        self.density = [index[f"use_def_density[{i}]"] for i in range(CANDIDATES)]

    def __call__(self, observation: Any) -> int:
        obs = np.asarray(observation)
        return evict_lowest_density(obs[self.mask], obs[self.density])


#: The deployed model reads LLVM's tensors as LLVM shapes them.
DEPLOY_INPUTS = TensorInputs(
    tuple(TensorSpec(name, type_name, shape(count)) for name, type_name, count in FEATURES)
)


PROBLEM = Problem(
    name="regalloc-eviction",
    env_id="mlbridge/RegallocEviction-v0",
    environment="mlbridge.problems.regalloc_eviction.environment:RegallocEvictionEnv",
    output=DECISION,
    description="which live range the greedy allocator of llc-19 evicts, "
    "reward: MLGO's regalloc score vs the default advisor",
    deploy_inputs=DEPLOY_INPUTS,
    evaluate="mlbridge.problems.regalloc_eviction.deploy:evaluate_trained",
    llvm_majors=(19,),
    gamma=1.0,
    gae_lambda=1.0,
    capabilities=(
        ActionMask(MASK),
        Heuristic(DensityHeuristic),
        OptimizedModules(),
        DeployedBuild("mlbridge.problems.regalloc_eviction.deploy:deployed_build"),
    ),
)
