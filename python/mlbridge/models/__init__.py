"""The trained models mlbridge ships (docs/models.md).

Each is an ONNX model in the Python package, the same model AOT-compiled
into a loadable module of the CMake package (for the plugins' ``aot``
runner), and a model card in the docs saying what it was trained on, how,
and what it was measured to do on projects it never saw.
``mlbridge config --model NAME`` prints the ONNX file, ``--aot`` the module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Mapping, Optional

from mlbridge.errors import MlbridgeError


@dataclass(frozen=True)
class ShippedModel:
    """One shipped model: ``name.onnx`` beside this file."""

    name: str
    #: The problem it decides (mlbridge.problems).
    problem: str
    #: The key of its AOT module in the CMake package's manifest.
    aot_key: str
    #: Its model card.
    card: str

    @property
    def onnx(self) -> Path:
        """The ONNX model in the installed package."""
        return Path(__file__).resolve().parent / f"{self.name}.onnx"


#: The shipped models, by name (the registry itself).
SHIPPED: Dict[str, ShippedModel] = {
    model.name: model
    for model in (
        ShippedModel(
            "inlining-size",
            problem="inlining",
            aot_key="model_inlining_size",
            card="docs/models.md",
        ),
        ShippedModel(
            "pipeline-size",
            problem="phase-ordering",
            aot_key="model_pipeline_size",
            card="docs/models.md",
        ),
    )
}


def shipped(name: str) -> ShippedModel:
    """The shipped model ``name``; MlbridgeError naming those there are."""
    model = SHIPPED.get(name)
    if model is None:
        raise MlbridgeError(f"no shipped model {name!r} (there are: {', '.join(sorted(SHIPPED))})")
    return model


def model_path(name: str, aot: bool = False, environ: Optional[Mapping[str, str]] = None) -> Path:
    """The ONNX file of the shipped model ``name``, or with ``aot`` its
    AOT-compiled module in the CMake package (:mod:`mlbridge.native`);
    MlbridgeError when it is not installed."""
    model = shipped(name)
    if aot:
        from mlbridge.native import find_native

        return find_native(environ).require(model.aot_key)
    if not model.onnx.is_file():
        raise MlbridgeError(f"the shipped model {name} is missing from the package: {model.onnx}")
    return model.onnx


def model_file(spec: str) -> Path:
    """The ONNX file ``spec`` names: a shipped model's (:func:`model_path`)
    when it is a shipped model's name, else the path ``spec`` itself."""
    return model_path(spec) if spec in SHIPPED else Path(spec)
