"""What every transport shares about policies: the contract and its helpers.

A *policy* is a callable taking the features of one decision, a
``Dict[str, np.ndarray]`` (name -> array shaped per its spec), and returning
the advice:

- for a single output: anything :meth:`TensorSpec.check` accepts (a Python
  or numpy scalar, a list, an array), or a one-entry dict;
- for several outputs: a dict name -> value.

A policy that also wants the *context* (the function being compiled, for
regalloc; ``""`` for LLVM's inliner) declares a ``context`` keyword parameter
(or ``**kwargs``): ``def policy(features, context=""): ...``. A policy object
may define ``begin(session: Session)``, called once per session after the
handshake, e.g. to learn the output specs.

The feature arrays a transport passes are read-only views into a buffer it
reuses for the next decision: copy them (``arr.copy()``) to keep them past the
call.

Every transport serves the same callables: the pipe host
(:mod:`mlbridge.pipe_host`), the gRPC server (:mod:`mlbridge.grpc_server`)
and driver (:mod:`mlbridge.grpc_driver`), and the LLVM advisors
(:mod:`mlbridge.llvm`). This module holds what they share and nothing of any
transport:

- :data:`Policy`, :data:`DecisionFn` and :class:`Session`, the types;
- :func:`takes_context` and :func:`as_decision_fn`, to call any policy as
  ``fn(features, context)``;
- :func:`output_array`, :func:`output_arrays` and :func:`output_bytes`, to
  check an answer against the output specs;
- :func:`scalar_packer`, the fast path for a one-element answer.
"""

from __future__ import annotations

import inspect
import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import numpy as np

from mlbridge.tensor_spec import SpecError, TensorSpec

#: Any callable following the contract of the module documentation.
Policy = Callable[..., Any]
#: A policy normalised to ``fn(features, context)``.
DecisionFn = Callable[[Dict[str, np.ndarray], str], Any]
#: Packs a one-element answer into its raw bytes, or returns None (take the slow path).
ScalarPacker = Callable[[Any], Optional[bytes]]


@dataclass(frozen=True)
class Session:
    """What the compiler declared at the start of a session.

    Passed to a policy's ``begin``. ``mode`` names the protocol that declared
    it (``"mlgo"`` or ``"extended"`` over pipes); ``format`` is the
    serialisation of the extended mode.
    """

    mode: str  #: "mlgo" or "extended"
    features: Sequence[TensorSpec]
    outputs: Sequence[TensorSpec]  #: the advice spec alone in mlgo mode
    format: str = "bitstream"  #: extended mode's serialisation


def takes_context(policy: Policy) -> bool:
    """True when ``policy`` accepts a ``context`` keyword (or ``**kwargs``)."""
    if not callable(policy):
        raise TypeError(f"a policy must be callable, got {type(policy).__name__}")
    try:
        params = list(inspect.signature(policy).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature
        params = []
    return any(
        p.name == "context" and p.kind != p.POSITIONAL_ONLY or p.kind == p.VAR_KEYWORD
        for p in params
    )


def as_decision_fn(policy: Policy) -> DecisionFn:
    """Normalise ``policy`` to ``fn(features, context)`` (see the module doc)."""
    if takes_context(policy):
        return lambda features, context: policy(features, context=context)
    return lambda features, context: policy(features)


def scalar_packer(spec: TensorSpec) -> Optional[ScalarPacker]:
    """A fast path for one-element outputs given as Python/numpy scalars.

    None when ``spec`` is not a one-element ``int64_t``, ``int32_t``,
    ``float`` or ``double`` tensor. The packer returns the little-endian bytes
    of a Python or numpy scalar it can pack, else None: the caller then takes
    the general path (:func:`output_arrays`), which also reports bad answers.
    """
    if spec.element_count != 1:
        return None
    code = {"int64_t": "q", "int32_t": "i", "float": "f", "double": "d"}.get(spec.type_name)
    if code is None:
        return None
    packer = struct.Struct("<" + code)
    is_int = code in "qi"

    def pack(value: Any) -> Optional[bytes]:
        if isinstance(value, np.generic):
            value = value.item()
        if type(value) is int or type(value) is bool:
            if is_int:
                try:
                    return packer.pack(value)
                except (struct.error, OverflowError):
                    return None
            return packer.pack(float(value)) if float(value) == value else None
        if type(value) is float and not is_int:
            try:
                return packer.pack(value)  # rounds to float32 like output_bytes
            except OverflowError:
                return None
        return None

    return pack


def output_array(spec: TensorSpec, value: Any) -> np.ndarray:
    """``value`` as an array of tensor ``spec``, or SpecError.

    Floating-point values are rounded to a floating-point output's precision
    (a Python float 0.1 is a fine ``float`` output); every other conversion
    must keep the values (:meth:`TensorSpec.check`).
    """
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and spec.dtype.kind == "f" and arr.dtype != spec.dtype:
        with np.errstate(over="ignore"):
            rounded = arr.astype(spec.dtype)
        if np.isinf(rounded).any() and not np.isinf(arr).any():
            raise SpecError(f"tensor '{spec.name}': value out of the range of {spec.type_name}")
        arr = rounded
    return spec.check(arr)


def output_arrays(specs: Sequence[TensorSpec], value: Any) -> Dict[str, np.ndarray]:
    """A policy's answer as one array per output spec, or SpecError/TypeError."""
    if not isinstance(value, Mapping):
        if len(specs) != 1:
            raise TypeError(
                f"a policy serving {len(specs)} outputs must return a dict "
                f"name -> value, got {type(value).__name__}"
            )
        value = {specs[0].name: value}
    names = [s.name for s in specs]
    if set(value) != set(names):
        raise SpecError(f"expected outputs {names}, got {sorted(value)}")
    return {s.name: output_array(s, value[s.name]) for s in specs}


def output_bytes(spec: TensorSpec, value: Any) -> bytes:
    """The raw bytes of a single-output answer (see :func:`output_array`)."""
    return output_arrays([spec], value)[spec.name].tobytes()


__all__ = [
    "DecisionFn",
    "Policy",
    "ScalarPacker",
    "Session",
    "as_decision_fn",
    "output_array",
    "output_arrays",
    "output_bytes",
    "scalar_packer",
    "takes_context",
]
