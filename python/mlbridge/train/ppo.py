"""PPO (Stable-Baselines3) on a compiler environment, with the rollouts
collected by a worker pool (Ray actors by default), progress bars, CSV logs,
resumable checkpoints, and the policy exported to ONNX at the end.

A run directory holds everything::

    OUT/checkpoints/ppo_<steps>_steps.zip   every --checkpoint-every steps
    OUT/checkpoints/state.json             the checkpoints written, with their SHA-256
    OUT/logs/progress.csv                  SB3's metrics, one row per update
    OUT/final.zip                          the trained model (SB3 format)
    OUT/policy.onnx                        the deployable policy
    OUT/curve.jsonl                        with validation: one line per checkpoint
    OUT/run.json                           the configuration and the timings

With a validation measure (the problem's ``validate``, on a corpus with
validation programs), the policy is measured at every checkpoint,
``policy.onnx`` is the best one, and training stops after ``patience``
checkpoints without a better one (:mod:`mlbridge.train.ppo_validation`);
none is written if no checkpoint beats the compiler's own heuristic.

Training again with the same ``OUT`` and ``resume=True`` continues from the
newest checkpoint the run recorded up to ``timesteps`` in total, its
weights loaded as data only (:mod:`mlbridge.train.checkpoints`).
"""

from __future__ import annotations

import importlib.util
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from mlbridge.errors import MlbridgeError
from mlbridge.gym.pool import make_pool
from mlbridge.problems import resolve
from mlbridge.problems.capabilities import (
    ActionMask,
    AnswerTable,
    CompilerDecision,
    Deferral,
    Heuristic,
)
from mlbridge.train.ppo_init import load_actor
from mlbridge.train.tasks import (
    Task,
    action_mask,
    deployed_inputs,
    env_kwargs,
    export,
    get_task,
    seen_through_plugin,
    wrapper,
)
from mlbridge.train.warm_start import Constant, FollowFeature, warm_start

if TYPE_CHECKING:
    from mlbridge.train.checkpoints import Hyperparameters
    from mlbridge.train.ppo_validation import Measure


@dataclass
class TrainConfig:
    """What to train, where, and how long."""

    task: str
    out: Path
    timesteps: int = 20_000
    workers: int = 2
    backend: str = "ray"
    address: Optional[str] = None
    seed: int = 0
    corpus: Optional[Path] = None
    n_steps: int = 256  #: steps per worker between two updates
    batch_size: int = 128
    epochs: int = 10
    learning_rate: float = 3e-4
    entropy: float = 0.01
    gamma: Optional[float] = None  #: None: the task's
    warm_start: bool = True  #: imitate the task's warm-start feature first
    warm_start_steps: int = 2000  #: per worker, collected for the warm start
    #: A deployed policy.onnx whose actor training starts from instead of
    #: the warm start (:mod:`mlbridge.train.ppo_init`).
    init: Optional[Path] = None
    checkpoint_every: int = 5_000
    #: With validation: checkpoints in a row without a better one before stopping.
    patience: int = 3
    #: Deference bonuses to the compiler's own decision that validation tries
    #: at each checkpoint (:mod:`mlbridge.train.ppo_validation`); without
    #: validation, one. None: the ``init`` model's own bonus (0 without one),
    #: or, when the run resumes, the bonus its curve kept.
    deference: Optional[Tuple[float, ...]] = None
    resume: bool = False
    progress: bool = True
    #: Where the deployed model answers the compiler's own action (the
    #: task's :class:`~mlbridge.problems.capabilities.Deferral`), the
    #: compiler gives it without asking the policy, so that episodes hold
    #: the decisions the deployed model makes.
    #: False: the policy is asked at every decision.
    defer_in_training: bool = False
    #: The compiler asks through mlbridge's plugin, as it asks a deployed
    #: model, and the policy sees the hidden features only the plugin sends
    #: intact (the task's :class:`~mlbridge.problems.capabilities.PluginFeatures`;
    #: inlining: ``callee_basic_block_count``). False: they stay hidden.
    plugin_features: bool = False
    env_kwargs: Dict[str, Any] = field(default_factory=dict)


def latest_checkpoint(directory: Path) -> Optional[Path]:
    """The checkpoint with the most steps that the run in ``directory``
    recorded, if any."""
    from mlbridge.train.checkpoints import RunState

    state = RunState.load(directory)
    entry = state.latest() if state else None
    return None if entry is None else directory / entry.file


def _hyperparameters(config: TrainConfig, task: Task) -> "Hyperparameters":
    from mlbridge.train.checkpoints import Hyperparameters

    return Hyperparameters(
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.epochs,
        learning_rate=config.learning_rate,
        ent_coef=config.entropy,
        gamma=task.gamma if config.gamma is None else config.gamma,
        gae_lambda=task.gae_lambda,
        seed=config.seed,
    )


def warm_policy(task: Task, kept: Sequence[str]) -> Optional[Callable[[Any], int]]:
    """What the actor imitates before PPO, over the features it sees
    (``kept``): the task's warm-start feature or heuristic, else its
    baseline action; None: nothing."""
    decision = task.get(CompilerDecision)
    if decision is not None:
        return FollowFeature(list(kept).index(decision.feature))
    heuristic = task.get(Heuristic)
    if heuristic is not None:
        follow: Callable[[Any], int] = resolve(heuristic.make)(kept)
        return follow
    table = task.get(AnswerTable)
    if table is not None:
        return Constant(table.keeps_default)
    return None


def _logger(directory: Path) -> Any:
    from stable_baselines3.common.logger import configure

    formats = ["csv", "log"]
    if importlib.util.find_spec("tensorboard") is not None:
        formats.append("tensorboard")
    return configure(str(directory), formats)


def train(
    config: TrainConfig,
    validate: Optional["Measure"] = None,
    progress: Optional[Callable[[str], None]] = None,
) -> Dict[str, Any]:
    """Trains (or resumes), saves, exports; returns the run's summary.
    ``validate`` measures an exported policy on the validation programs
    (see the module's docstring); ``progress`` takes its lines."""
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import CallbackList

        from mlbridge.gym.vec_env import PoolVecEnv
        from mlbridge.train.checkpoints import CheckpointCallback, RunState
        from mlbridge.train.ppo_validation import ValidationCallback
    except ImportError as err:
        raise MlbridgeError(
            f"training needs stable-baselines3 and torch ({err}); "
            "pip install 'mlbridge-compiler[train]' (docs/training.md)"
        ) from None
    task: Task = seen_through_plugin(get_task(config.task), config.plugin_features)
    config.out.mkdir(parents=True, exist_ok=True)
    checkpoints = config.out / "checkpoints"
    kwargs = env_kwargs(config.corpus, "train", config.env_kwargs)
    deferral = task.get(Deferral)
    if deferral is not None and config.defer_in_training:
        kwargs["defers_when"] = deferral.when
    if config.plugin_features:
        kwargs["through_plugin"] = True
    started = time.monotonic()
    pool = make_pool(
        task.env_id,
        config.workers,
        kwargs,
        backend=config.backend,
        address=config.address,
        seed=config.seed,
        wrapper=wrapper(task),
    )
    venv = PoolVecEnv(pool)
    logger: Any = None
    try:
        #: the environment's raw feature names (the wrapper keeps some)
        names = venv.get_attr("feature_names")[0]
        state = RunState.load(checkpoints) if config.resume else None
        resume_from = state.latest() if state else None
        if state is None or resume_from is None:
            state = RunState(checkpoints, _hyperparameters(config, task))
            state.save()
        ppo_kwargs = state.hyperparameters.ppo_kwargs()
        policy: Any = "MlpPolicy"
        if task.get(ActionMask) is not None:
            from mlbridge.train.masked_policy import MaskedActorCriticPolicy

            policy = MaskedActorCriticPolicy
            ppo_kwargs["policy_kwargs"]["mask_index"] = action_mask(task, venv, names)
        model = PPO(policy, venv, device="cpu", **ppo_kwargs)
        if resume_from is not None:
            state.restore(model, resume_from)
        warm = None
        follow = warm_policy(task, wrapper(task).names(names))
        if resume_from is None and config.init is not None:
            inputs, keep = deployed_inputs(task, names)
            if keep is not None:
                raise MlbridgeError(f"{task.name}: its deployed model cannot be fine-tuned")
            warm = load_actor(
                model.policy,
                config.init,
                [spec.name for spec in inputs],
                None if deferral is None else deferral.when,
            )
        elif resume_from is None and config.warm_start and follow is not None:
            warm = warm_start(model.policy, pool, follow, steps_per_worker=config.warm_start_steps)
        # The init model's own deference bonus (a run from scratch has none).
        init_bonus = float(warm.get("deference", 0.0)) if config.init and warm else 0.0
        if validate is None and config.deference and len(config.deference) > 1:
            raise MlbridgeError("several deference bonuses need validation programs to choose")
        logger = _logger(config.out / "logs")
        model.set_logger(logger)
        remaining = max(0, config.timesteps - model.num_timesteps)
        every = max(1, config.checkpoint_every // config.workers)
        callbacks: List[Any] = [CheckpointCallback(state, every)]
        validation = None
        if validate is not None:
            validation = ValidationCallback(
                config.out,
                validate,
                lambda policy, path, bonus: export(task, policy, path, names, bonus),
                every,
                config.patience,
                progress,
                None if resume_from is not None else config.init,
                config.deference,
                init_bonus,
                model.policy,
            )
            callbacks.append(validation)
        if validation is None or not validation.exhausted:
            model.learn(
                total_timesteps=remaining,
                callback=CallbackList(callbacks),
                reset_num_timesteps=resume_from is None,
                progress_bar=config.progress,
            )
        model.save(str(config.out / "final.zip"))
        state.save_checkpoint(model)
        if validation is None:
            bonus = config.deference[0] if config.deference else init_bonus
            export(task, model.policy, config.out / "policy.onnx", names, bonus)
        else:
            validation.validate(model)
    finally:
        if logger is not None:
            logger.close()  # its CSV and text files
        venv.close()
    policy_file = config.out / "policy.onnx"
    summary = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        "timesteps": int(model.num_timesteps),
        "resumed_from": None if resume_from is None else str(checkpoints / resume_from.file),
        "warm_start": warm,
        "seconds": round(time.monotonic() - started, 1),
        "policy": str(policy_file) if policy_file.is_file() else None,
    }
    if validation is not None:
        summary["validation"] = validation.summary()
    (config.out / "run.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
