"""What a trained policy sees of an environment's observation.

Compiler features are counts and costs spanning orders of magnitude: a
policy sees ``sign(x) * log(1 + |x|)`` of the features it keeps, the same
transform in training (:class:`SignedLogFeatures`, a gymnasium wrapper run in
the workers) and in the deployed model (:mod:`mlbridge.train.export` writes
it into the ONNX graph).
"""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np


def signed_log(features: np.ndarray) -> np.ndarray:
    """sign(x) * log(1 + |x|), float32: counts and costs span five orders of
    magnitude, and decisions turn on small differences near zero."""
    x = np.asarray(features).astype(np.float32)
    return (np.sign(x) * np.log(np.abs(x) + np.float32(1))).astype(np.float32)


def kept_features(names: Sequence[str], drop: Sequence[str] = ()) -> List[int]:
    """Indices of ``names`` not in ``drop`` (in order); every name in ``drop``
    must exist, so a renamed feature cannot slip through silently."""
    unknown = sorted(set(drop) - set(names))
    if unknown:
        raise ValueError(f"no such features to drop: {', '.join(unknown)}")
    return [i for i, n in enumerate(names) if n not in set(drop)]


class SignedLogFeatures:
    """A gymnasium observation wrapper (made lazily so that importing this
    module needs no gymnasium): keeps the features of ``env.feature_names``
    not in ``drop`` and maps them through :func:`signed_log`.

    Picklable (a class with plain arguments), so it can travel to pool
    workers: ``make_pool(..., wrapper=SignedLogFeatures(drop=[...]))``.
    """

    def __init__(self, drop: Sequence[str] = ()) -> None:
        self.drop = tuple(drop)

    def __call__(self, env: Any) -> Any:
        import gymnasium

        names = list(env.unwrapped.feature_names)
        index = np.asarray(kept_features(names, self.drop), np.int64)

        class _Wrapped(gymnasium.ObservationWrapper):
            def __init__(self, inner: Any) -> None:
                super().__init__(inner)
                self.feature_names = [names[i] for i in index]
                self.observation_space = gymnasium.spaces.Box(
                    -np.inf, np.inf, (len(index),), np.float32
                )

            def observation(self, observation: Any) -> np.ndarray:
                return signed_log(np.asarray(observation)[index])

        return _Wrapped(env)

    def names(self, all_names: Sequence[str]) -> List[str]:
        """The names kept of ``all_names``."""
        return [all_names[i] for i in kept_features(all_names, self.drop)]
