"""The models mlbridge ships (mlbridge.models): the registry, the ONNX file
in the package, its AOT module found through the CMake package's manifest,
and ``mlbridge config --model``. The installed packages are tested in
test_wheel_install.py (the model deciding in clang through the plugin)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlbridge import cli
from mlbridge.cli_errors import ENVIRONMENT, USAGE
from mlbridge.errors import MlbridgeError
from mlbridge.models import SHIPPED, model_path, shipped
from mlbridge.native import MANIFEST
from mlbridge.problems import get_problem
from mlbridge.problems.inlining import DECISION

onnx = pytest.importorskip("onnx")


def test_every_shipped_model_is_in_the_package_and_decides_its_problem():
    for name, model in SHIPPED.items():
        path = model_path(name)
        assert path.is_file() and path == model.onnx
        graph = onnx.load(str(path)).graph
        problem = get_problem(model.problem)
        assert [o.name for o in graph.output] == [problem.output]
        assert (Path(__file__).resolve().parents[2] / model.card).is_file()


def test_the_size_model_reads_llvm_features_by_their_names():
    graph = onnx.load(str(model_path("inlining-size"))).graph
    inputs = {i.name for i in graph.input}
    assert {"callee_users", "cost_estimate", "inlining_default"} <= inputs
    # The plugin's flag, after LLVM's features: LLVM's decision stands there.
    assert graph.input[-1].name == "is_callee_linkonce_odr"
    assert "callee_basic_block_count" not in inputs  # overwritten by LLVM 19 in training
    assert [o.name for o in graph.output] == [DECISION]


def test_an_unknown_model_names_the_shipped_ones():
    with pytest.raises(MlbridgeError, match="inlining-size"):
        shipped("nope")


def test_the_aot_module_comes_from_the_manifest(tmp_path):
    module = "lib/mlbridge/mlbridge-model-inlining-size.so"
    (tmp_path / MANIFEST).parent.mkdir(parents=True)
    (tmp_path / MANIFEST).write_text(json.dumps({"version": "1", "model_inlining_size": module}))
    env = {"MLBRIDGE_PREFIX": str(tmp_path)}
    with pytest.raises(MlbridgeError, match="does not exist"):
        model_path("inlining-size", aot=True, environ=env)
    (tmp_path / module).parent.mkdir(parents=True)
    (tmp_path / module).write_bytes(b"")
    assert model_path("inlining-size", aot=True, environ=env) == tmp_path / module
    (tmp_path / MANIFEST).write_text(json.dumps({"version": "1"}))
    with pytest.raises(MlbridgeError, match="no model-inlining-size"):
        model_path("inlining-size", aot=True, environ=env)


def test_config_model_options(capsys, monkeypatch, tmp_path):
    assert cli.main(["config", "--model", "inlining-size"]) == 0
    assert Path(capsys.readouterr().out.strip()) == model_path("inlining-size")
    assert cli.main(["config", "--aot"]) == USAGE
    assert "--aot is for --model" in capsys.readouterr().err
    assert cli.main(["config", "--model", "inlining-size", "--json"]) == USAGE
    assert cli.main(["config", "--model", "nope"]) == ENVIRONMENT
    monkeypatch.setenv("MLBRIDGE_PREFIX", str(tmp_path))
    assert cli.main(["config", "--model", "inlining-size", "--aot"]) == ENVIRONMENT
    assert "MLBRIDGE_PREFIX" in capsys.readouterr().err


def test_the_size_model_defers_to_llvm_by_the_bonus_its_card_gives():
    from mlbridge.train.export import DEFERENCE_KEY

    model = onnx.load(str(model_path("inlining-size")))
    bonus = {p.key: p.value for p in model.metadata_props}[DEFERENCE_KEY]
    card = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    assert float(bonus) == 0.5 and f"bonus validation chose, **{float(bonus):g}**" in card


def test_a_model_file_is_a_shipped_models_or_the_path_given(tmp_path):
    from mlbridge.models import model_file

    assert model_file("inlining-size") == model_path("inlining-size")
    mine = tmp_path / "inlining-size.onnx"
    assert model_file(str(mine)) == mine
    assert model_file("not-shipped") == Path("not-shipped")


def test_where_the_size_model_says_it_answers_llvms_decision_it_does():
    """The model's claim (metadata) lets the plugin skip MLGO's features and
    the model at calls of linkonce_odr callees: it must hold for any input."""
    import numpy as np

    from mlbridge.train.export import DEFERS_TO_KEY, DEFERS_WHEN_KEY

    ort = pytest.importorskip("onnxruntime")
    path = model_path("inlining-size")
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert (meta[DEFERS_WHEN_KEY], meta[DEFERS_TO_KEY]) == (
        "is_callee_linkonce_odr",
        "inlining_default",
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    overruled = 0
    for trial in range(400):
        feed = {
            i.name: rng.integers(0, 10 ** rng.integers(1, 7), size=(1,), dtype=np.int64)
            for i in session.get_inputs()
        }
        feed["inlining_default"] = np.array([trial % 2], np.int64)
        feed["is_callee_linkonce_odr"] = np.array([1], np.int64)
        (answer,) = session.run(None, feed)
        assert answer.tolist() == feed["inlining_default"].tolist()
        feed["is_callee_linkonce_odr"] = np.array([0], np.int64)
        overruled += session.run(None, feed)[0].tolist() != feed["inlining_default"].tolist()
    assert overruled > 0  # elsewhere the policy decides (the flag is what defers)


#: The sections of a model card, in order (docs/models.md).
CARD_SECTIONS = ("Using it", "Training", "Test projects", "Semantic validation", "Known limits")


def test_every_card_has_the_templates_sections_validation_included():
    """No model ships without its card's sections, the check that the
    programs it builds still work among them (``mlbridge validate``, with
    its count of programs)."""
    import re

    root = Path(__file__).resolve().parents[2]
    for name, model in SHIPPED.items():
        text = (root / model.card).read_text()
        start = text.index(f"\n## {name}\n")
        end = text.find("\n## ", start + 1)
        card = text[start : end if end != -1 else len(text)]
        headings = re.findall(r"^### (.+)$", card, re.M)
        found = [h for h in headings if h in CARD_SECTIONS]
        assert found == list(CARD_SECTIONS), (name, headings)
        validation = card[card.index("### Semantic validation") :]
        validation = validation[: validation.index("\n### ", 1)]
        assert "mlbridge validate" in validation, name
        assert re.search(r"\d[\d,]* (csmith )?programs", validation), name
