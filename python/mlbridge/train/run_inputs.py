"""What a training run of ``mlbridge train`` reads from its arguments, for
PPO and for a problem's own trainers: its seed, the model it starts from,
and the corpus's programs with a validation share."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, List, Optional, Tuple

from mlbridge.cli_errors import USAGE, fail


def run_seed(args: argparse.Namespace) -> int:
    """The seed of a run, and of the validation sample: ``--seed``, or the
    first of ``--seeds`` (default 0)."""
    if args.seeds:
        return int(args.seeds[0])
    return 0 if args.seed is None else int(args.seed)


def init_model(init: Optional[str], problem: str) -> Optional[Path]:
    """The file of ``--init`` for a run on ``problem``: the ONNX file of a
    model shipped for it, or the path given."""
    from mlbridge.models import SHIPPED, model_file

    if init is None:
        return None
    if init in SHIPPED and SHIPPED[init].problem != problem:
        fail(f"--init {init}: a shipped model of {SHIPPED[init].problem}, not of {problem}", USAGE)
    if init not in SHIPPED and not Path(init).is_file():
        names = ", ".join(n for n, m in SHIPPED.items() if m.problem == problem) or "none"
        fail(f"--init {init}: no such file, nor a shipped model ({names})", USAGE)
    return model_file(init)


def validated_programs(corpus: Path, quick: bool) -> Tuple[List[Any], int]:
    """The programs of ``corpus``, and how many of its training files were
    set aside for validation because it names no validation programs."""
    from mlbridge.corpus.defaults import load_corpus, validation_set_aside
    from mlbridge.corpus.program import VALIDATION

    programs = load_corpus(corpus, quick)
    if any(p.split == VALIDATION for p in programs):
        return programs, 0
    programs = validation_set_aside(programs)
    return programs, sum(p.split == VALIDATION for p in programs)


def say_aside(aside: int) -> None:
    """Says how many training files were set aside for validation, if any."""
    if aside:
        print(
            f"the corpus names no validation programs: {aside} of its training files "
            "are set aside for validation (docs/inlining-size.md)"
        )
