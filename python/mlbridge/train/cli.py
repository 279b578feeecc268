"""``mlbridge train TASK``: PPO on a compiler environment, then the policy
deployed and measured on held-out modules (docs/training.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable, Dict

from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail

#: mlbridge.gym.pool.BACKENDS, written here so that building the parser
#: imports nothing of the optional dependencies (a test checks they agree).
BACKENDS = ("ray", "process", "serial")


def add_parser(sub: Any, natural: Callable[[str], int]) -> None:
    """Adds ``train`` to the ``mlbridge`` subcommands."""
    from mlbridge.train.tasks import TASKS

    train = sub.add_parser(
        "train",
        help="train a policy with PPO on a compiler environment (Ray workers), "
        "export it to ONNX, deploy and measure it on held-out modules",
    )
    train.add_argument("task", choices=sorted(TASKS), help="what to learn")
    train.add_argument("--out", default="train-out", help="run directory (default: train-out)")
    train.add_argument(
        "--timesteps", type=natural, default=20_000, help="environment steps in total"
    )
    train.add_argument("--workers", type=natural, default=2, help="rollout workers")
    train.add_argument(
        "--backend",
        choices=BACKENDS,
        default="ray",
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
    train.add_argument("--seed", type=int, default=0, help="seed of the run")
    train.add_argument(
        "--warm-start-steps",
        type=int,
        default=2000,
        help="steps per worker the actor imitates the compiler's own decision "
        "before PPO (0: no warm start)",
    )
    train.add_argument("--n-steps", type=natural, default=256, help="steps per worker per update")
    train.add_argument(
        "--checkpoint-every", type=natural, default=5_000, help="steps between checkpoints"
    )
    train.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in --out"
    )
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument(
        "--no-evaluate", action="store_true", help="skip the deployment on held-out modules"
    )
    train.add_argument(
        "--evaluate-only",
        action="store_true",
        help="only deploy and measure the policy already in --out",
    )
    train.add_argument(
        "--tool",
        help="the native half the deployment uses: the plugin for inlining, "
        "mlbridge-phase-service for phase ordering (default: mlbridge config)",
    )


def _evaluate(args: argparse.Namespace, out: Path) -> Dict[str, Any]:
    from mlbridge.gym.modules import default_cache_dir, prepare_modules
    from mlbridge.loop.corpus import default_corpus, load_corpus
    from mlbridge.native import NativeError
    from mlbridge.train.tasks import get_task

    task = get_task(args.task)
    policy = out / "policy.onnx"
    if not policy.is_file():
        fail(f"{policy} does not exist: train first", ENVIRONMENT)
    if task.evaluate is None:
        fail(f"the task {task.name} has no deployment to measure", USAGE)
    corpus = Path(args.corpus) if args.corpus else default_corpus()
    programs = [p for p in load_corpus(corpus, not args.full) if p.split == "held-out"]
    modules = prepare_modules(programs, default_cache_dir())
    if not modules:
        fail("the corpus has no held-out module to evaluate on", ENVIRONMENT)
    try:
        return task.evaluate(
            policy, modules, out / "deploy", Path(args.tool) if args.tool else None
        )
    except NativeError as err:
        raise CommandError(f"{err} (give --tool)", ENVIRONMENT) from None


def run(args: argparse.Namespace) -> int:
    """Runs ``mlbridge train``."""
    from mlbridge.train.ppo import TrainConfig, train

    out = Path(args.out)
    if args.corpus and not Path(args.corpus).exists():
        fail(f"--corpus {args.corpus}: no such file or directory", USAGE)
    if args.address and args.backend != "ray":
        fail("--address is for --backend ray", USAGE)
    if not args.evaluate_only:
        config = TrainConfig(
            task=args.task,
            out=out,
            timesteps=args.timesteps,
            workers=args.workers,
            backend=args.backend,
            address=args.address,
            seed=args.seed,
            corpus=Path(args.corpus) if args.corpus else None,
            n_steps=args.n_steps,
            batch_size=min(128, args.n_steps * args.workers),
            checkpoint_every=args.checkpoint_every,
            resume=args.resume,
            progress=not args.no_progress,
            warm_start=args.warm_start_steps > 0,
            warm_start_steps=max(1, args.warm_start_steps),
            env_kwargs={"quick": not args.full},
        )
        summary = train(config)
        print(f"trained {summary['timesteps']} steps in {summary['seconds']} s: {out}/policy.onnx")
    if args.no_evaluate:
        return 0
    report = _evaluate(args, out)
    (out / "deploy.json").write_text(json.dumps(report, indent=2) + "\n")
    for line in report["summary"]:
        print(line)
    print(f"details: {out}/deploy.json")
    return 0
