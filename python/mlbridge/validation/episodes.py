"""Robustness of a problem's environment: one episode on each module of a
corpus (llvm-stress's random IR: ``mlbridge corpus generate llvm-stress``),
the compiler's own action or a random legal one at every step.

An episode may end three ways that are the environment doing its job:
``done`` (terminated or truncated without an error), ``error`` (it ended
with ``info["error"]``: the compiler crashed, refused the module or ran past
a deadline, and said so) and ``skipped`` (the module gives no episode, with
why). Three are findings (:data:`EPISODE_FINDINGS`): ``raised`` (an
exception other than the environment's own escaped ``reset`` or ``step``),
``overran`` (the episode lasted longer than the environment's deadlines
allow: a hang it did not catch) and ``orphaned`` (a process the episode
started outlived it).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["EPISODE_FINDINGS", "MARGIN_S", "EpisodeCheck", "child_processes", "run_episodes"]

#: Statuses that are findings against the environment.
EPISODE_FINDINGS = ("raised", "overran", "orphaned")
#: Seconds an episode may outlast its deadlines before it counts as a hang
#: the environment did not catch (killing a process group takes a grace).
MARGIN_S = 30.0
#: Seconds a compiler may take to be reaped after its episode ended.
_REAP_S = 5.0


@dataclass
class EpisodeCheck:
    """One episode: its module, how it ended, its steps and seconds."""

    module: str
    status: str
    detail: str = ""
    steps: int = 0
    seconds: float = 0.0


def child_processes(pid: Optional[int] = None) -> List[int]:
    """The live children of ``pid`` (default: this process), read from
    /proc (zombies, already dead, are not counted)."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 2 and int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def _deadline(env: Any, steps: int, margin: float) -> float:
    """The longest an episode of ``steps`` steps may last in ``env``."""
    episode = getattr(env, "episode_timeout", None)
    per_step = float(env.step_timeout) * (steps + 2)
    return (float(episode) if episode is not None else per_step) + margin


def _action(env: Any, mode: str, rng: np.random.Generator) -> int:
    if mode == "baseline":
        return int(env.baseline_action())
    masks = getattr(env, "action_masks", None)
    if masks is not None:
        return int(rng.choice(np.flatnonzero(masks())))
    return int(rng.integers(env.action_space.n))


def _episode(
    env: Any, name: str, mode: str, rng: np.random.Generator, margin: float
) -> EpisodeCheck:
    from mlbridge.gym.corpus_modules import EnvError

    start = time.monotonic()
    steps = 0

    def done(status: str, detail: str = "") -> EpisodeCheck:
        return EpisodeCheck(name, status, detail, steps, time.monotonic() - start)

    try:
        env.reset(options={"module": name})
        while True:
            _, _, terminated, truncated, info = env.step(_action(env, mode, rng))
            steps += 1
            if info.get("error"):
                check = done("error", str(info["error"])[:500])
                break
            if terminated or truncated:
                check = done("done")
                break
            if time.monotonic() - start > _deadline(env, steps, margin):
                check = done("overran", f"still running after {steps} steps")
                break
    except EnvError as err:
        return done("skipped", str(err)[:500])
    except Exception as err:  # noqa: BLE001 - an escaped exception is the finding
        return done("raised", f"{type(err).__name__}: {err}"[:500])
    if check.status != "overran" and check.seconds > _deadline(env, steps, margin):
        check = done("overran", f"{check.status} after {check.seconds:.0f} s")
    return check


def _reaped(env: Any, before: Sequence[int], ended: Callable[[], None]) -> Optional[str]:
    """What outlived the episode once ``ended`` (None: nothing): its
    compiler, or another child of this process that was not there before
    it; a long-lived compiler service the environment still runs
    (``compiler_pid`` after the episode) is its own, not an orphan."""
    ended()
    limit = time.monotonic() + _REAP_S
    while True:
        kept = {env.compiler_pid} - {None}
        extra = sorted(set(child_processes()) - set(before) - kept)
        if not extra:
            return None
        if time.monotonic() > limit:
            return f"processes {extra} outlived the episode"
        time.sleep(0.05)


def run_episodes(
    env: Any,
    names: Sequence[str],
    mode: str = "baseline",
    seed: int = 0,
    progress: Optional[Callable[[EpisodeCheck], None]] = None,
    margin: float = MARGIN_S,
) -> Dict[str, Any]:
    """One episode of ``env`` (a problem's environment, unwrapped) on each
    module ``names`` names, actions ``mode`` (``baseline``: the compiler's
    own; ``random``: a random legal one, from ``seed``), then ``env``
    closed: the report (counts per status, the findings, every episode;
    a process that outlived ``close`` is one more ``orphaned`` finding).
    An episode is ``overran`` ``margin`` seconds past its deadlines."""
    if mode not in ("baseline", "random"):
        raise ValueError(f"mode must be baseline or random, got {mode!r}")
    rng = np.random.default_rng(seed)
    start = time.monotonic()
    checks = []
    at_start = child_processes()
    for name in names:
        before = child_processes()
        check = _episode(env, name, mode, rng, margin)
        left = _reaped(env, before, env._end_episode)
        if left is not None and check.status in EPISODE_FINDINGS:
            check.detail += f"; {left}"
        elif left is not None:
            check = EpisodeCheck(name, "orphaned", left, check.steps, check.seconds)
        checks.append(check)
        if progress is not None:
            progress(check)
    left = _reaped(env, at_start, env.close)
    if left is not None:
        checks.append(EpisodeCheck("(close)", "orphaned", left))
    counts: Dict[str, int] = {}
    for check in checks:
        counts[check.status] = counts.get(check.status, 0) + 1
    return {
        "episodes": len(checks),
        "mode": mode,
        "counts": dict(sorted(counts.items())),
        "findings": [asdict(c) for c in checks if c.status in EPISODE_FINDINGS],
        "steps": sum(c.steps for c in checks),
        "seconds": round(time.monotonic() - start, 3),
        "checks": [asdict(c) for c in checks],
    }
