"""Register allocation of one module by stock ``llc-19``, scored.

:func:`allocation_command` stops ``llc`` after the allocation's rewriting,
where LLVM scores an allocation (:mod:`mlbridge.llvm.regalloc_score`), and
writes the allocated code as MIR. :func:`default_allocation` runs it with
the default eviction advisor and ``-print-machine-bfi``: its score is the
baseline, and its block frequencies weight every other allocation of the
same module (the allocator does not change the control flow). The
environment (:mod:`mlbridge.gym.regalloc_eviction`) and the deployment of a
trained policy (:mod:`mlbridge.train.deploy_regalloc_eviction`) share both.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence

from mlbridge import child_process
from mlbridge.errors import MlbridgeError
from mlbridge.llvm.regalloc_score import (
    RegallocScore,
    ScoreError,
    block_frequencies,
    module_score,
    read_text,
)

#: The compiler.
LLC = "llc-19"
#: The pass after which the allocated code is taken (where LLVM scores it).
STOP_AFTER = "virtregrewriter"
#: Options of a module that make llc generate position-independent code.
PIC_FLAGS = frozenset({"-fPIC", "-fpic", "-fPIE", "-fpie"})
#: How much of llc's stderr an error quotes.
STDERR_TAIL = 1500


class AllocationError(MlbridgeError):
    """The default allocation of a module failed or cannot be scored."""


def allocation_command(
    llc: str,
    opt_level: int,
    bitcode: Path,
    module_flags: Sequence[str],
    output: Path,
    *extra: str,
) -> List[str]:
    """``llc`` allocating ``bitcode`` (compiled with ``module_flags``) and
    writing the allocated code as MIR to ``output``."""
    pic = ["-relocation-model=pic"] if PIC_FLAGS & set(module_flags) else []
    return [
        llc,
        f"-O{opt_level}",
        *pic,
        f"-stop-after={STOP_AFTER}",
        *extra,
        str(bitcode),
        "-o",
        str(output),
    ]


@dataclass(frozen=True)
class DefaultAllocation:
    """The default advisor's allocation of a module: its score, the block
    frequencies every allocation of the module is weighted by, and how long
    ``llc`` took."""

    score: RegallocScore
    frequencies: Dict[str, Dict[int, float]]
    seconds: float

    def score_of(self, mir: Path) -> RegallocScore:
        """The score of another allocation of the same module (raises
        :class:`~mlbridge.llvm.regalloc_score.ScoreError`)."""
        return module_score(read_text(mir, "the allocated code"), self.frequencies)


def default_allocation(
    llc: str,
    opt_level: int,
    bitcode: Path,
    module_flags: Sequence[str],
    workdir: Path,
    timeout: float,
) -> DefaultAllocation:
    """Allocates ``bitcode`` with the default advisor in ``workdir`` (its
    files removed after) and scores it."""
    output, log = workdir / "default.mir", workdir / "default.bfi"
    command = allocation_command(
        llc, opt_level, bitcode, module_flags, output, "-print-machine-bfi"
    )
    try:
        start = time.monotonic()
        with open(log, "wb") as stderr:
            done = child_process.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                timeout=timeout,
            )
        seconds = time.monotonic() - start
        if done.returncode != 0:
            tail = read_text(log, "llc's stderr")[-STDERR_TAIL:]
            raise AllocationError(
                f"{llc} with the default advisor failed ({done.returncode}): {tail}"
            )
        frequencies = block_frequencies(read_text(log, "llc's block frequencies"))
        score = module_score(read_text(output, "the allocated code"), frequencies)
    except subprocess.TimeoutExpired:
        raise AllocationError(
            f"{llc} with the default advisor ran longer than {timeout:g} s"
        ) from None
    except ScoreError as err:
        raise AllocationError(f"the default allocation cannot be scored: {err}") from None
    except OSError as err:
        raise AllocationError(f"cannot run {llc}: {err.strerror or err}") from None
    finally:
        output.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
    return DefaultAllocation(score, frequencies, seconds)
