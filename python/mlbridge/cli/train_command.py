"""``mlbridge train TASK``: PPO on a compiler environment, then the policy
deployed and measured on held-out modules (docs/training.md)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, Dict, Tuple

from mlbridge.cli.arguments import natural
from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.llvm.versions import add_llvm_argument
from mlbridge.problems.capabilities import KernelSuite, Trainer, Validation
from mlbridge.train.run_inputs import init_model, run_seed, say_aside, validated_programs

NAME = "train"
GROUP = "learn"

#: mlbridge.gym.pool.BACKENDS, written here so that building the parser
#: imports nothing of the optional dependencies (a test checks they agree).
BACKENDS = ("ray", "process", "serial")

#: The options only PPO reads, by destination, with their defaults: the
#: parser's defaults, and another ``--method`` refuses any other value.
PPO_ONLY: Dict[str, Any] = {
    "timesteps": 20_000,
    "backend": "ray",
    "address": None,
    "warm_start_steps": 2000,
    "defer_in_training": False,
    "plugin_features": False,
    "n_steps": 256,
    "learning_rate": 3e-4,
    "checkpoint_every": 5_000,
}


def add_parser(sub: Any) -> None:
    """Adds ``train`` to the ``mlbridge`` subcommands."""
    from mlbridge.problems import resolve
    from mlbridge.train.tasks import TASKS

    train = sub.add_parser(
        "train",
        help="train a policy for a problem (PPO on its environments, Ray workers, or the "
        "problem's own trainers), export it to ONNX, deploy and measure it on held-out modules",
    )
    train.add_argument(
        "task",
        choices=sorted(TASKS),
        help="what to learn: "
        + "; ".join(f"{name}: {p.description}" for name, p in sorted(TASKS.items())),
    )
    train.add_argument("--out", default="train-out", help="run directory (default: train-out)")
    train.add_argument(
        "--timesteps",
        type=natural,
        default=PPO_ONLY["timesteps"],
        help="environment steps in total",
    )
    train.add_argument(
        "--workers",
        type=natural,
        default=2,
        help="rollout workers (ppo), or compilations at once (--method search)",
    )
    train.add_argument(
        "--backend",
        choices=BACKENDS,
        default=PPO_ONLY["backend"],
        help="where the workers run (default: ray, on this machine unless --address)",
    )
    train.add_argument("--address", help="a Ray cluster to join (e.g. auto, HOST:PORT)")
    train.add_argument(
        "--corpus",
        metavar="PATH",
        help="programs to train on, any format of docs/corpus.md "
        "(default: $MLBRIDGE_CORPUS, else ./.cache/corpus, with the bundled programs)",
    )
    train.add_argument(
        "--full", action="store_true", help="every program of the corpus (default: small ones)"
    )
    train.add_argument(
        "--max-programs",
        type=natural,
        metavar="N",
        help="train on a fixed sample of N programs of the train split (and measure "
        "on N of the held-out one), projects interleaved",
    )
    train.add_argument("--seed", type=int, help="seed of the run (default 0)")
    train.add_argument(
        "--seeds",
        metavar="S[,S...]",
        type=_seeds,
        help="ppo: one run per seed (OUT/seed-S), the best on the validation programs "
        "kept as OUT/policy.onnx (OUT/seeds.json says each one's)",
    )
    train.add_argument(
        "--warm-start-steps",
        type=int,
        default=PPO_ONLY["warm_start_steps"],
        help="steps per worker the actor imitates the compiler's own decision "
        "(or the problem's heuristic) before PPO (0: no warm start)",
    )
    train.add_argument(
        "--defer-in-training",
        action="store_true",
        help="where the deployed model gives the compiler's own decision (inlining: "
        "calls of C++ inline functions), the compiler gives it in training too, "
        "without asking the policy (default: the policy is asked everywhere)",
    )
    train.add_argument(
        "--plugin-features",
        action="store_true",
        help="the compiler asks the policy through mlbridge's plugin, as it asks the "
        "deployed model, and the policy sees the features only the plugin sends intact "
        "(inlining: callee_basic_block_count; default: hidden)",
    )
    train.add_argument(
        "--n-steps", type=natural, default=PPO_ONLY["n_steps"], help="steps per worker per update"
    )
    train.add_argument(
        "--learning-rate",
        type=float,
        default=PPO_ONLY["learning_rate"],
        help="PPO's learning rate (default 3e-4; lower to fine-tune gently)",
    )
    train.add_argument(
        "--checkpoint-every",
        type=natural,
        default=PPO_ONLY["checkpoint_every"],
        help="steps between checkpoints",
    )
    train.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in --out"
    )
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument(
        "--init",
        metavar="MODEL",
        help="fine-tune from a policy: a shipped model's name (inlining-size, "
        "docs/models.md) or a policy.onnx of a run of the same method",
    )
    train.add_argument(
        "--patience",
        type=natural,
        default=3,
        help="with validation programs in the corpus: stop after this many rounds "
        "(--method search) or checkpoints (ppo) without a better validation ratio",
    )
    train.add_argument(
        "--deference",
        metavar="BONUS[,BONUS...]",
        type=_bonuses,
        help="ppo: logit bonuses of the compiler's own decision; with validation programs, "
        "each checkpoint is measured with each and the best kept (default: the --init "
        "model's own, or 0: the policy as trained)",
    )
    train.add_argument(
        "--validation-units",
        type=natural,
        default=40,
        help="validation units measured per validation project",
    )
    train.add_argument(
        "--no-evaluate", action="store_true", help="skip the deployment on held-out modules"
    )
    train.add_argument(
        "--evaluate-only",
        action="store_true",
        help="only deploy and measure the policy already in --out",
    )
    trainers = {t.method: (p.name, t) for p in TASKS.values() for t in p.all(Trainer)}
    train.add_argument(
        "--method",
        choices=("ppo", *sorted(trainers)),
        default="ppo",
        help="ppo (default), or a problem's own trainer: "
        + "; ".join(f"{m} ({name}): {t.summary}" for m, (name, t) in sorted(trainers.items())),
    )
    #: Each method's own options, by destination, with their defaults.
    options: Dict[str, Dict[str, Any]] = {"ppo": PPO_ONLY}
    for method, (name, trainer) in sorted(trainers.items()):
        if trainer.options is not None:
            group = train.add_argument_group(f"--method {method} ({name})")
            added = resolve(trainer.options)(group, natural)
            options[method] = {dest: train.get_default(dest) for dest in added}
    train.set_defaults(method_options=options)
    train.add_argument(
        "--tool",
        help="the native half the deployment uses: the plugin for inlining, "
        "mlbridge-phase-service for phase ordering (default: mlbridge config)",
    )
    add_llvm_argument(
        train, "of the compiler trained on and deployed in (default: the newest installed)"
    )


def _evaluate(args: argparse.Namespace, out: Path) -> Dict[str, Any]:
    from mlbridge.cli.evaluate_command import measure

    return measure(
        args.task,
        out / "policy.onnx",
        Path(args.corpus) if args.corpus else None,
        "held-out",
        args.full,
        Path(args.tool) if args.tool else None,
        out / "deploy",
        args.max_programs,
        args.llvm,
    )


def _bonuses(text: str) -> Tuple[float, ...]:
    """``--deference``: comma-separated finite bonuses of at least 0."""
    try:
        bonuses = tuple(float(b) for b in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not numbers: {text!r}") from None
    if not all(math.isfinite(b) and b >= 0 for b in bonuses):
        raise argparse.ArgumentTypeError(f"bonuses are finite and at least 0: {text!r}")
    return bonuses


def _seeds(text: str) -> Tuple[int, ...]:
    """``--seeds``: comma-separated distinct integers."""
    try:
        seeds = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not integers: {text!r}") from None
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds are distinct: {text!r}")
    return seeds


def _ppo_validation(args: argparse.Namespace, out: Path, env: Dict[str, Any]) -> Any:
    """The task's validation measure for PPO on the corpus's validation
    programs (docs/training.md), or None when there is none. A corpus
    without validation programs gets a share of its training files set
    aside, which the environment's keywords ``env`` then leave out."""
    from mlbridge.corpus.defaults import default_corpus
    from mlbridge.errors import MlbridgeError
    from mlbridge.native import NativeError
    from mlbridge.train.tasks import TASKS, resolve

    problem = TASKS[args.task]
    corpus = Path(args.corpus) if args.corpus else default_corpus()
    validation = problem.get(Validation)
    if validation is None or problem.get(KernelSuite) is not None or corpus is None:
        return None
    try:
        programs, aside = validated_programs(corpus, not args.full)
        measure = resolve(validation.measure)(
            programs,
            out,
            args.workers,
            Path(args.tool) if args.tool else None,
            args.llvm,
            args.validation_units,
            run_seed(args),
        )
    except NativeError as err:
        # Training itself needs no plugin: it goes on, without a curve.
        print(f"no validation curve: {err} (give --tool)")
        return None
    except MlbridgeError as err:
        raise CommandError(str(err), ENVIRONMENT) from None
    if measure is None:
        print("the corpus names no validation programs: no validation curve")
    elif aside:
        say_aside(aside)
        env["validation_aside"] = True
    return measure


def run(args: argparse.Namespace) -> int:
    """Runs ``mlbridge train``."""
    from mlbridge.train.tasks import TASKS, llvm_choice, resolve

    out = Path(args.out)
    if args.corpus and not Path(args.corpus).exists():
        fail(f"--corpus {args.corpus}: no such file or directory", USAGE)
    if args.corpus and TASKS[args.task].get(KernelSuite) is not None:
        fail(f"--corpus: {args.task} runs on its own kernel suite", USAGE)
    if args.address and args.backend != "ray":
        fail("--address is for --backend ray", USAGE)
    methods = TASKS[args.task].methods()
    if args.method not in methods:
        fail(f"--method {args.method}: {args.task} is trained by {', '.join(methods)}", USAGE)
    if args.max_programs and args.method != "ppo":
        fail(f"--max-programs is for --method ppo (--method {args.method} samples its own)", USAGE)
    if not args.learning_rate > 0:
        fail("--learning-rate must be positive", USAGE)
    if args.init and args.resume:
        fail("--init starts a run: --resume goes on with one", USAGE)
    for method, defaults in args.method_options.items():
        given = [k for k, v in defaults.items() if getattr(args, k) != v]
        if given and args.method != method:
            options = ", ".join("--" + k.replace("_", "-") for k in given)
            fail(f"{options}: for --method {method}, not read by --method {args.method}", USAGE)
    if args.deference is not None and args.method != "ppo":
        fail(f"--deference is for --method ppo, not {args.method}", USAGE)
    if args.seeds is not None and args.seed is not None:
        fail("--seed is one run's, --seeds several runs': give one of them", USAGE)
    if args.seeds is not None and (args.method != "ppo" or args.evaluate_only):
        fail("--seeds is for training with --method ppo", USAGE)
    try:
        llvm_kwargs = llvm_choice(TASKS[args.task], args.llvm)
    except ValueError as err:
        fail(str(err), USAGE)
    if args.method != "ppo" and not args.evaluate_only:
        trainer = next(t for t in TASKS[args.task].all(Trainer) if t.method == args.method)
        measured = resolve(trainer.train)(args, out)
        if measured is not None:  # the trainer deployed and measured its policy itself
            return 0 if args.no_evaluate else _report(measured, out)
    elif not args.evaluate_only:
        from mlbridge.train.ppo import TrainConfig, train

        config = TrainConfig(
            task=args.task,
            out=out,
            timesteps=args.timesteps,
            workers=args.workers,
            backend=args.backend,
            address=args.address,
            seed=run_seed(args),
            corpus=Path(args.corpus) if args.corpus else None,
            n_steps=args.n_steps,
            batch_size=min(128, args.n_steps * args.workers),
            learning_rate=args.learning_rate,
            checkpoint_every=args.checkpoint_every,
            patience=args.patience,
            deference=args.deference,
            resume=args.resume,
            progress=not args.no_progress,
            warm_start=args.warm_start_steps > 0,
            warm_start_steps=max(1, args.warm_start_steps),
            init=init_model(args.init, args.task),
            defer_in_training=args.defer_in_training,
            plugin_features=args.plugin_features,
            env_kwargs={"quick": not args.full, "max_programs": args.max_programs, **llvm_kwargs},
        )
        measure = _ppo_validation(args, out, config.env_kwargs)
        if args.seeds:
            _train_seeds(config, args.seeds, measure, None if args.no_progress else print)
            return 0 if args.no_evaluate else _deploy(args, out)
        summary = train(config, measure, progress=None if args.no_progress else print)
        print(f"trained {summary['timesteps']} steps in {summary['seconds']} s")
        if "validation" in summary:
            best = summary["validation"]
            print(
                f"best on the validation programs: {best['best_ratio']:.4f}x the compiler's "
                f"own heuristic, at {best['best_steps']} steps"
            )
        if summary["policy"] is None:
            fail(
                "no checkpoint did better than the compiler's own heuristic on the "
                "validation programs: no policy written",
                ENVIRONMENT,
            )
        print(f"policy: {summary['policy']}")
    if args.no_evaluate:
        return 0
    return _deploy(args, out)


def _deploy(args: argparse.Namespace, out: Path) -> int:
    """Deploys ``out``'s policy on the held-out programs and reports it."""
    return _report(_evaluate(args, out), out)


def _report(report: Dict[str, Any], out: Path) -> int:
    """Writes a deployment report as deploy.json and prints its summary."""
    (out / "deploy.json").write_text(json.dumps(report, indent=2) + "\n")
    for line in report["summary"]:
        print(line)
    print(f"details: {out}/deploy.json")
    return 0


def _train_seeds(config: Any, seeds: Tuple[int, ...], measure: Any, progress: Any) -> None:
    """``--seeds``: one run per seed, the best on validation kept."""
    from mlbridge.errors import MlbridgeError
    from mlbridge.train.seeds import SEEDS, train_seeds

    if measure is None:
        fail("--seeds needs validation programs to choose between the runs", USAGE)
    try:
        report = train_seeds(config, seeds, measure, progress)
    except MlbridgeError as err:
        raise CommandError(str(err), ENVIRONMENT) from None
    for run in report["seeds"]:
        wrote = "a policy" if run["policy"] else "no policy"
        print(
            f"seed {run['seed']}: best {run['best_ratio']:.4f}x the compiler's own heuristic "
            f"on the validation programs, at {run['best_steps']} steps ({wrote})"
        )
    if report["kept"] is None:
        fail(
            "no seed did better than the compiler's own heuristic on the validation "
            f"programs: no policy written ({config.out / SEEDS})",
            ENVIRONMENT,
        )
    print(f"kept seed {report['kept']}; policy: {report['policy']}")
