"""Training an inlining policy for size by imitation of search, in rounds,
with a validation curve and early stopping (docs/inlining-size.md).

Each round searches the next training units
(:func:`~mlbridge.problems.inlining.search_labels.search_programs`: every single flip of
LLVM's ``-Oz`` decisions, then the improving ones combined), fits a residual
policy to what the single flips did (:func:`~mlbridge.problems.inlining.search_labels.flip_dataset`:
flip LLVM's decision where flipping made ``.text`` smaller, weighed by the
bytes at stake), and measures it through the plugin, in-process, on the
validation projects against plain ``-Oz``. Round 0 is LLVM's own decisions
(or the policy fine-tuning starts from); the policy of the best round is
kept, so none is written unless one does better than round 0 on the
validation projects. Training stops after ``patience`` rounds without a
better one, or when the training units run out.

The run directory holds everything a later session needs to go on:
``search/`` (the searched units), ``oz.json`` (the validation units under
``-Oz``), ``curve.jsonl`` (one line per round) and ``policy.onnx`` (the
best round's policy, when one beat round 0). Running again with the same
directory resumes after the last round written.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from mlbridge.corpus.files import MAX_JSON_BYTES, read_capped
from mlbridge.corpus.program import TRAIN, VALIDATION, Program
from mlbridge.corpus.split import interleave_projects
from mlbridge.errors import CorpusError, MlbridgeError
from mlbridge.llvm.outcomes import CodeBytes, linked_code
from mlbridge.llvm.versions import LlvmTools, tools
from mlbridge.output_files import open_output_file
from mlbridge.problems.inlining.imitation import Policy, train_imitation
from mlbridge.problems.inlining.search_labels import flip_dataset, search_programs, unit_key
from mlbridge.problems.inlining.toolchain import Plugin, compile_program, onnx_plugin
from mlbridge.train.validation_curve import CURVE, POLICY, ValidationCurve

__all__ = [
    "CURVE",
    "OZ",
    "POLICY",
    "SizeTraining",
    "ValidationSet",
    "train_size_policy",
    "validation_measure",
]

#: The validation units' code under -Oz (objects split by COMDAT group).
OZ = "oz-code.json"


@dataclass(frozen=True)
class SizeTraining:
    """How to train (see the module's docstring)."""

    units_per_round: int = 40
    max_rounds: int = 10
    patience: int = 3
    #: Single flips tried per unit (a random sample above that).
    budget: int = 60
    #: Validation units measured per validation project (a fixed sample).
    validation_units: int = 40
    hidden: Tuple[int, ...] = ()
    epochs: int = 200
    batch: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-3
    #: Subtracted from the flip logit: the policy flips only where it is
    #: this sure (0: where flipping is likelier to pay than not).
    margin: float = 1.0
    seed: int = 0
    jobs: int = 1

    def __post_init__(self) -> None:
        for name in ("units_per_round", "max_rounds", "patience", "budget", "validation_units"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.margin < 0 or self.epochs < 1:
            raise ValueError("margin must be non-negative and epochs at least 1")


@dataclass(frozen=True)
class Round:
    """One line of ``curve.jsonl``."""

    round: int
    units: int
    rows: int
    flips_that_paid: int
    validation_ratio: float
    per_project: Dict[str, float]
    best: bool


@dataclass
class SizeResult:
    """The curve of a run, its best round and why it stopped."""

    curve: List[Round] = field(default_factory=list)
    best_round: Optional[int] = None
    stopped: str = ""

    @property
    def best_ratio(self) -> float:
        rounds = [r for r in self.curve if r.round == self.best_round]
        return rounds[0].validation_ratio if rounds else 1.0


def schedule(programs: Sequence[Program], seed: int) -> List[Program]:
    """The single-source programs of ``programs`` in the order rounds search
    them: projects interleaved (:func:`~mlbridge.corpus.split.interleave_projects`)."""
    return interleave_projects([p for p in programs if len(p.sources) == 1], seed)


def validation_sample(programs: Sequence[Program], per_project: int, seed: int) -> List[Program]:
    """At most ``per_project`` programs of each validation project, fixed by ``seed``."""
    taken: Dict[str, int] = defaultdict(int)
    chosen = []
    for program in schedule(programs, seed + 1):
        if taken[program.project] < per_project:
            taken[program.project] += 1
            chosen.append(program)
    return chosen


def _code_json(code: Sequence[CodeBytes]) -> List[Dict[str, object]]:
    return [{"own": c.own, "comdat": c.comdat} for c in code]


def _code_from_json(value: object) -> Optional[List[CodeBytes]]:
    """A program's objects as ``oz-code.json`` holds them, or None if the
    entry is not well formed (it is then measured again)."""
    if not isinstance(value, list):
        return None
    code = []
    for item in value:
        if not isinstance(item, dict):
            return None
        own, comdat = item.get("own"), item.get("comdat")
        if not isinstance(own, int) or not isinstance(comdat, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, int) for k, v in comdat.items()):
            return None
        code.append(CodeBytes(own, dict(comdat)))
    return code


class ValidationSet:
    """The validation units, their code under ``-Oz`` (cached in
    ``oz-code.json``), and a policy's ratio to it, per project and in total.
    A project's units are counted as linked together
    (:func:`~mlbridge.llvm.outcomes.linked_code`): a COMDAT function (a C++
    inline function or template instance) counts once per project, as in the
    linked program, however many units keep a copy."""

    def __init__(
        self,
        programs: Sequence[Program],
        out: Path,
        jobs: int,
        plugin_env: Optional[Mapping[str, str]] = None,
        llvm: Optional[LlvmTools] = None,
    ) -> None:
        self.programs = list(programs)
        self.jobs = jobs
        self.llvm = llvm or tools()
        self.plugin_env = dict(plugin_env or {})
        self.work = out / "validation"
        cache = out / OZ
        self.oz: Dict[str, List[CodeBytes]] = {}
        if cache.is_file():
            try:
                stored = json.loads(read_capped(cache, MAX_JSON_BYTES).decode("utf-8"))
            except (CorpusError, ValueError, UnicodeDecodeError):
                stored = {}
            for name, value in stored.items() if isinstance(stored, dict) else ():
                code = _code_from_json(value)
                if code is not None:
                    self.oz[name] = code
        missing = [p for p in self.programs if p.name not in self.oz]
        self.oz.update(zip((p.name for p in missing), self._code(missing, None)))
        if missing or not cache.is_file():
            with open_output_file(cache) as stream:
                text = json.dumps({k: _code_json(v) for k, v in self.oz.items()}, sort_keys=True)
                stream.write(text.encode("utf-8"))

    def _code(
        self, programs: Sequence[Program], deployed: Optional[Plugin]
    ) -> List[List[CodeBytes]]:
        """Each program's objects' code, ``jobs`` programs compiled at once
        (each in a directory of its own)."""

        def one(program: Program) -> List[CodeBytes]:
            where = self.work / unit_key(program)
            return list(compile_program(program, where, deployed, 1, llvm=self.llvm).code)

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            return list(pool.map(one, programs))

    def code(self, model: Path, plugin: Path) -> List[List[CodeBytes]]:
        """Each program's objects' code with ``model`` deployed through
        ``plugin``, in the order of ``programs``."""
        return self._code(self.programs, onnx_plugin(plugin, model, self.plugin_env))

    def measure(self, model: Path, plugin: Path) -> Tuple[float, Dict[str, float]]:
        """(total ratio, ratio per project) of ``model`` to ``-Oz``."""
        oz: Dict[str, List[CodeBytes]] = defaultdict(list)
        served: Dict[str, List[CodeBytes]] = defaultdict(list)
        for program, code in zip(self.programs, self.code(model, plugin)):
            oz[program.project] += self.oz[program.name]
            served[program.project] += code
        sizes = {k: (linked_code(oz[k]), linked_code(served[k])) for k in sorted(oz)}
        base = sum(o for o, _ in sizes.values())
        total = sum(s for _, s in sizes.values()) / base if base else 1.0
        return total, {k: round(s / o, 5) if o else 1.0 for k, (o, s) in sizes.items()}


def validation_measure(
    programs: Sequence[Program],
    out: Path,
    jobs: int,
    tool: Optional[Path],
    llvm: Optional[int],
    per_project: int,
    seed: int,
    plugin_env: Optional[Mapping[str, str]] = None,
) -> Optional[Callable[[Path], Tuple[float, Dict[str, float]]]]:
    """The inlining problem's ``validate`` (:mod:`mlbridge.problems.problem`):
    a policy measured through ``tool`` (the plugin; None: the installed one)
    on at most ``per_project`` programs of each validation project of
    ``programs``, against ``-Oz``; None when there is no validation program.
    ``plugin_env``: what compilers loading the plugin need besides its settings."""
    from mlbridge.native import plugin_path

    chosen = [p for p in programs if p.split == VALIDATION]
    if not chosen:
        return None
    plugin = tool or plugin_path(llvm=llvm)
    validation = ValidationSet(
        validation_sample(chosen, per_project, seed), out, jobs, plugin_env, tools(llvm, plugin)
    )
    return lambda model: validation.measure(model, plugin)


def fit(
    search: Path,
    searched: Sequence[Program],
    config: SizeTraining,
    init: Optional[Policy] = None,
) -> Tuple[Policy, int, int]:
    """The residual policy fitted to the single flips of ``searched``, with
    ``config.margin`` applied; (policy, rows, rows whose flip paid)."""
    data, weights = flip_dataset(search, searched)
    policy, _ = train_imitation(
        data,
        hidden=config.hidden,
        epochs=config.epochs,
        batch=config.batch,
        lr=config.lr,
        weight_decay=config.weight_decay,
        seed=config.seed,
        weights=weights,
        flips=True,
        init=init,
    )
    if init is None:
        policy.layers[-1][1][1] -= config.margin
    return policy, len(data), int(data.decisions.sum())


def train_size_policy(
    programs: Sequence[Program],
    out: Path,
    plugin: Path,
    config: SizeTraining = SizeTraining(),
    init: Optional[Policy] = None,
    progress: Optional[Callable[[str], None]] = None,
    plugin_env: Optional[Mapping[str, str]] = None,
    llvm: Optional[int] = None,
) -> SizeResult:
    """Rounds of search, fit and validation over the ``train`` and
    ``validation`` programs of ``programs`` (see the module's docstring);
    resumes a run already in ``out``. ``init`` (a residual policy) is where
    fitting starts, and round 0 measures it: fine-tuning keeps it unless a
    round does better on the validation projects. ``plugin_env``: what
    compilers loading the plugin need besides its settings. ``llvm``: the
    LLVM major ``plugin`` was built for (default: the newest installed)."""
    compilers = tools(llvm, plugin)
    if init is not None and not init.flips:
        raise MlbridgeError("fine-tuning starts from a residual policy (one that flips LLVM's)")
    train = schedule([p for p in programs if p.split == TRAIN], config.seed)
    validation_programs = [p for p in programs if p.split == VALIDATION]
    if not train:
        raise MlbridgeError("the corpus has no training program of one source file")
    if not validation_programs:
        raise MlbridgeError(
            "the corpus has no validation program: it cannot tell when to stop "
            "(mlbridge.corpus.split.set_aside_validation sets some training ones aside)"
        )
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _line: None)
    validation = ValidationSet(
        validation_sample(validation_programs, config.validation_units, config.seed),
        out,
        config.jobs,
        plugin_env,
        compilers,
    )
    curve = ValidationCurve(out, Round)
    result = SizeResult(curve=curve.points)
    search = out / "search"

    def record(entry: Round) -> None:
        curve.record(entry)
        if entry.best:
            result.best_round = entry.round
        say(
            f"round {entry.round}: {entry.units} units searched, {entry.rows} call sites "
            f"({entry.flips_that_paid} flips paid), validation {entry.validation_ratio:.4f}x -Oz"
            + (" (best)" if entry.best else "")
        )

    best = curve.best
    result.best_round = None if best is None else best.round
    if not curve.points:
        # Round 0 is where training starts: LLVM's own decisions (exactly
        # -Oz, 1.0 by construction: no policy file) or the policy ``init``.
        if init is None:
            record(Round(0, 0, 0, 0, 1.0, {}, True))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                model = Path(tmp) / POLICY
                init.to_onnx(model)
                ratio, per_project = validation.measure(model, plugin)
                curve.keep(model, ratio)
            record(Round(0, 0, 0, 0, ratio, per_project, True))
    while True:
        done = curve.points[-1].round
        if curve.since_best() >= config.patience:
            result.stopped = f"no better validation ratio in {config.patience} rounds"
            break
        if done >= config.max_rounds:
            result.stopped = f"{config.max_rounds} rounds"
            break
        units = min(len(train), (done + 1) * config.units_per_round)
        if units <= curve.points[-1].units:
            result.stopped = "every training unit searched"
            break
        searched = train[:units]
        say(f"round {done + 1}: searching training units {curve.points[-1].units}..{units}")
        search_programs(
            searched,
            search,
            budget=config.budget,
            seed=config.seed,
            llvm=compilers,
            jobs=config.jobs,
        )
        policy, rows, paid = fit(search, searched, config, init)
        candidate = out / f"round-{done + 1}.onnx"
        policy.to_onnx(candidate)
        ratio, per_project = validation.measure(candidate, plugin)
        better = curve.keep(candidate, ratio)
        record(Round(done + 1, units, rows, paid, ratio, per_project, better))
    return result
