"""Progress display for long runs and the plots of the loop (PNG)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, TextIO


class Progress:
    """One status line per step on a terminal (rewritten in place), plain
    lines otherwise: ``[collect] 12/40 lz4/lz4.c  00:07 elapsed, ~00:16 left``."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

    def step(self, name: str) -> Callable[[int, int, str], None]:
        start = time.monotonic()
        last = [0.0]

        def update(done: int, total: int, what: str) -> None:
            now = time.monotonic()
            if not self.tty and done not in (0, total) and now - last[0] < 5:
                return
            last[0] = now
            elapsed = now - start
            eta = elapsed / done * (total - done) if done else 0.0
            line = f"[{name}] {done}/{total} {what}  {_clock(elapsed)} elapsed" + (
                f", ~{_clock(eta)} left" if done and done < total else ""
            )
            if self.tty:
                self.stream.write("\r\033[K" + line + ("\n" if done == total else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

        return update


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"


def plot_training(curve, search_trace, path: Path) -> None:
    """Imitation loss/agreement per epoch and the search's size ratio per
    iteration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    epochs = range(1, len(curve.loss) + 1)
    ax = axes[0]
    ax.plot(epochs, curve.loss, label="cross-entropy (train)", color="tab:red")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    twin = ax.twinx()
    twin.plot(epochs, curve.train_agreement, label="agreement (train)", color="tab:blue")
    twin.plot(epochs, curve.validation_agreement, label="agreement (validation)", color="tab:green")
    twin.set_ylabel("agreement with LLVM")
    ax.set_title("imitation of LLVM's -Oz inlining")
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="center right")
    ax = axes[1]
    if search_trace is not None and search_trace.ratio:
        its = range(1, len(search_trace.ratio) + 1)
        ax.plot(its, search_trace.ratio, marker="o", label="mean policy (the result)")
        ax.plot(its, search_trace.best_ratio, marker="s", label="best single sample so far")
        ax.axhline(1.0, color="gray", linestyle="--", label="-Oz")
        ax.legend()
    ax.set_xlabel("ES iteration")
    ax.set_ylabel(".text / .text(-Oz), training programs")
    ax.set_title("evolution strategies on size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sizes(programs: Sequence[str], sizes: Dict[str, Dict[str, int]], path: Path) -> None:
    """.text per program for each configuration, relative to -Oz."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    configs = [c for c in sizes if c != "oz"]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(programs)), 4))
    width = 0.8 / max(1, len(configs))
    x = np.arange(len(programs))
    for i, config in enumerate(configs):
        ratios = [sizes[config][p] / sizes["oz"][p] for p in programs]
        ax.bar(x + i * width - 0.4 + width / 2, ratios, width, label=config)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xticks(x)
    ax.set_xticklabels(programs, rotation=20)
    ax.set_ylabel(".text / .text(-Oz)")
    lo = min(min(sizes[c][p] / sizes["oz"][p] for p in programs) for c in configs)
    hi = max(max(sizes[c][p] / sizes["oz"][p] for p in programs) for c in configs)
    pad = max(0.01, (hi - lo) * 0.2)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_title("code size per held-out program")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
