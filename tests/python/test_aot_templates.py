"""The template files of mlbridge-aot (:mod:`mlbridge.aot.templates`): strict
filling, values never rescanned, every file documented and used, no
placeholder left in generated code. The generated text itself is pinned by
tests/python/test_aot*.py (compiled and run against ONNX Runtime)."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from mlbridge.aot import templates
from mlbridge.aot.templates import PLACEHOLDER, TemplateError

AOT_DIR = Path(templates.__file__).resolve().parents[1]


def template_files() -> list:
    return sorted(
        p.name
        for p in resources.files("mlbridge.aot.templates").iterdir()
        if p.name.endswith(".in")
    )


def test_filling_is_strict():
    with pytest.raises(TemplateError, match="no value for"):
        templates.fill("weights_asm.cpp.in", file_name="w.bin", size=1)
    with pytest.raises(TemplateError, match="no placeholder for"):
        templates.fill("weights_check.cpp.in", extra="x")


def test_values_are_inserted_verbatim_in_one_pass():
    text = templates.fill("weights_asm.cpp.in", file_name="@size@", size=3, lines="@lines@")
    assert text == "// The constants: @size@ (3 bytes; see kWeightsSha256).\nasm(@lines@);\n"
    assert templates.snippet("weights_check.cpp.in") == templates.fill("weights_check.cpp.in")[:-1]


def test_every_template_is_documented_and_used():
    files = template_files()
    assert "model.h.in" in files and "model.cpp.in" in files
    documented = set(re.findall(r"``([a-z0-9_]+\.(?:h|cpp)\.in)``", templates.__doc__ or ""))
    assert documented == set(files)
    sources = "".join(p.read_text() for p in AOT_DIR.rglob("*.py"))
    for name in files:
        assert f'"{name}"' in sources, f"{name} is never filled"
        text = (AOT_DIR / "templates" / name).read_text()
        assert text.endswith("\n") and not text.endswith("\n\n"), name


def test_generated_code_has_no_placeholder_left():
    onnx = pytest.importorskip("onnx")
    import numpy as np

    from mlbridge.aot import compile_model
    from onnx import TensorProto, helper, numpy_helper

    bias = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "b")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    for limit in (0, None):  # a weights file, inline constants
        generated = compile_model(
            model.SerializeToString(), class_name="AddRelu", inline_weights_limit=limit
        )
        assert bool(generated.weights) == (limit == 0)
        for text in (generated.header, generated.source):
            assert not PLACEHOLDER.search(text)
