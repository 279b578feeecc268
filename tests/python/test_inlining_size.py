"""The rounds of ``mlbridge train inlining --method search``
(mlbridge.problems.inlining.size_training) without a compiler: search, fit and the
validation measure replaced by scripted stand-ins, so that the curve, the
choice of the best round, early stopping and resuming are checked exactly.
The same rounds on clang-19 with the plugin: tests/llvm/test_inlining_size.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
import pytest

from mlbridge.corpus import load_corpus
from mlbridge.corpus.program import HELD_OUT, TRAIN, VALIDATION, Program
from mlbridge.corpus.split import set_aside_validation
from mlbridge.errors import MlbridgeError
from mlbridge.problems.inlining import DEFAULT_FEATURE
from mlbridge.problems.inlining import size_training as inlining_size
from mlbridge.problems.inlining.imitation import Policy
from mlbridge.problems.inlining.size_training import (
    CURVE,
    POLICY,
    SizeTraining,
    schedule,
    train_size_policy,
    validation_sample,
)


def programs() -> List[Program]:
    made = []
    for project, units, split in (
        ("a", 5, TRAIN),
        ("b", 2, TRAIN),
        ("c", 3, TRAIN),
        ("v", 4, VALIDATION),
        ("w", 1, VALIDATION),
        ("t", 3, HELD_OUT),
    ):
        made += [
            Program(f"{project}/{i}.c", (Path(f"{project}{i}.c"),), (), split) for i in range(units)
        ]
    return made


def residual(bias: float) -> Policy:
    names = ["cost_estimate", DEFAULT_FEATURE]
    layer = (np.zeros((2, 2), np.float32), np.asarray([0, bias], np.float32))
    return Policy(names, np.zeros(2, np.float32), np.ones(2, np.float32), [layer], True)


class Script:
    """Stand-ins for the search, the fit and the validation measure; the
    validation ratio of round k is ``ratios[k - 1]``."""

    def __init__(self, monkeypatch, ratios: Sequence[float]) -> None:
        self.ratios = list(ratios)
        self.searched: List[List[str]] = []
        self.fits: List[object] = []
        self.measured: List[str] = []
        self.round = 0
        script = self

        def search_programs(chosen, out, budget, seed, llvm=None, jobs=1):
            script.searched.append([p.name for p in chosen])

        def fit(search, searched, config, init=None):
            script.round += 1
            script.fits.append(init)
            return residual(float(script.round)), 10 * len(searched), len(searched)

        class FakeValidation:
            def __init__(self, chosen, out, jobs, plugin_env=None, llvm=None):
                self.programs = chosen

            def measure(self, model: Path, plugin: Path):
                bias = float(Policy.from_onnx(model).layers[-1][1][1])
                script.measured.append(model.name)
                ratio = self_ratio(bias)
                return ratio, {"v": ratio, "w": 1.0}

        def self_ratio(bias: float) -> float:
            if bias < 0:  # the policy fine-tuning starts from
                return 0.999
            return script.ratios[int(bias) - 1]

        monkeypatch.setattr(inlining_size, "search_programs", search_programs)
        monkeypatch.setattr(inlining_size, "fit", fit)
        monkeypatch.setattr(inlining_size, "ValidationSet", FakeValidation)


def curve(out: Path) -> List[Dict[str, object]]:
    return [json.loads(line) for line in (out / CURVE).read_text().splitlines()]


def test_rounds_keep_the_best_policy_and_stop_when_validation_stops_improving(
    monkeypatch, tmp_path
):
    script = Script(monkeypatch, [0.999, 0.997, 0.998, 0.9985, 0.99])
    config = SizeTraining(units_per_round=3, max_rounds=10, patience=2)
    result = train_size_policy(programs(), tmp_path, Path("plugin.so"), config)
    # Round 0 is LLVM (1.0), then rounds 1-4; 3 and 4 do not beat round 2.
    assert [r.round for r in result.curve] == [0, 1, 2, 3, 4]
    assert [r.validation_ratio for r in result.curve] == [1.0, 0.999, 0.997, 0.998, 0.9985]
    assert [r.best for r in result.curve] == [True, True, True, False, False]
    assert result.best_round == 2 and result.best_ratio == 0.997
    assert result.stopped == "no better validation ratio in 2 rounds"
    assert Policy.from_onnx(tmp_path / POLICY).layers[-1][1][1] == 2.0
    assert [r["units"] for r in curve(tmp_path)] == [0, 3, 6, 9, 10]
    # Each round searches a growing prefix of one order, projects interleaved.
    assert {n.split("/")[0] for n in script.searched[0]} == {"a", "b", "c"}
    assert all(s[: len(p)] == p for p, s in zip(script.searched, script.searched[1:]))
    assert not list(tmp_path.glob("round-*.onnx"))


def test_no_policy_is_written_when_no_round_beats_llvm(monkeypatch, tmp_path):
    Script(monkeypatch, [1.001, 1.0, 1.002])
    result = train_size_policy(
        programs(), tmp_path, Path("p.so"), SizeTraining(units_per_round=4, patience=3)
    )
    assert result.best_round == 0 and result.best_ratio == 1.0
    assert not (tmp_path / POLICY).exists()
    assert result.stopped == "no better validation ratio in 3 rounds"


def test_a_run_resumes_after_its_last_round_and_stops_when_units_run_out(monkeypatch, tmp_path):
    Script(monkeypatch, [0.999, 0.998])
    first = train_size_policy(
        programs(), tmp_path, Path("p.so"), SizeTraining(units_per_round=4, max_rounds=2)
    )
    assert first.stopped == "2 rounds" and len(first.curve) == 3
    script = Script(monkeypatch, [0, 0, 0.997, 0.996])
    script.round = 2
    again = train_size_policy(
        programs(), tmp_path, Path("p.so"), SizeTraining(units_per_round=4, max_rounds=10)
    )
    # Ten training units: round 3 takes the last two, then nothing is left.
    assert [r.round for r in again.curve] == [0, 1, 2, 3]
    assert again.stopped == "every training unit searched"
    assert again.best_round == 3 and len(curve(tmp_path)) == 4


def test_fine_tuning_measures_the_starting_policy_first_and_keeps_it_unless_beaten(
    monkeypatch, tmp_path
):
    script = Script(monkeypatch, [1.0, 0.9995])
    start = residual(-1.0)
    result = train_size_policy(
        programs(),
        tmp_path,
        Path("p.so"),
        SizeTraining(units_per_round=5, max_rounds=2),
        init=start,
    )
    assert result.curve[0].validation_ratio == 0.999 and result.curve[0].best
    assert result.best_round == 0 and all(f is start for f in script.fits)
    assert Policy.from_onnx(tmp_path / POLICY).layers[-1][1][1] == -1.0
    with pytest.raises(MlbridgeError, match="residual"):
        plain = residual(0.0)
        plain.flips = False
        train_size_policy(programs(), tmp_path / "x", Path("p.so"), init=plain)


def test_the_command_validates_a_corpus_of_one_project_on_a_share_of_its_own_files(
    monkeypatch, tmp_path, capsys
):
    from mlbridge import cli
    from mlbridge.cli_errors import ENVIRONMENT
    from mlbridge.corpus.defaults import bundled_programs

    sources = [tmp_path / "src" / f"f{i}.c" for i in range(30)]
    for source in sources:
        source.parent.mkdir(exist_ok=True)
        source.write_text("int f(void) { return 0; }\n")
    database = [
        {"directory": str(tmp_path), "file": str(f), "arguments": ["cc", "-c", str(f)]}
        for f in sources
    ]
    (tmp_path / "compile_commands.json").write_text(json.dumps(database))
    given: List[Program] = []

    def train(programs, out, plugin, config, init=None, progress=None, llvm=None):
        given.extend(programs)
        return inlining_size.SizeResult(best_round=0)

    monkeypatch.setattr(inlining_size, "train_size_policy", train)
    args = ["train", "inlining", "--method", "search", "--full", "--tool", "p.so"]
    code = cli.main([*args, "--corpus", str(tmp_path), "--out", str(tmp_path / "run")])
    assert code == ENVIRONMENT  # the stand-in kept no policy
    demo = {p.name for p in bundled_programs()}
    mine = [p for p in given if p.name not in demo]
    assert {p.split for p in given if p.name in demo} == {TRAIN}  # never validated on
    aside = [p.name for p in mine if p.split == VALIDATION]
    assert aside and {p.split for p in mine} == {TRAIN, VALIDATION, HELD_OUT}
    plain = [p for p in load_corpus(tmp_path) if p.split == TRAIN]
    assert aside == [p.name for p in set_aside_validation(plain) if p.split == VALIDATION]
    assert f"{len(aside)} of its training files are set aside" in capsys.readouterr().out


def test_a_corpus_without_validation_or_training_units_is_refused(tmp_path):
    only_train = [p for p in programs() if p.split == TRAIN]
    with pytest.raises(MlbridgeError, match="validation"):
        train_size_policy(only_train, tmp_path, Path("p.so"))
    only_validation = [p for p in programs() if p.split == VALIDATION]
    with pytest.raises(MlbridgeError, match="training"):
        train_size_policy(only_validation, tmp_path, Path("p.so"))
    with pytest.raises(ValueError):
        SizeTraining(patience=0)


def test_schedule_interleaves_projects_and_the_validation_sample_is_fixed():
    train = [p for p in programs() if p.split == TRAIN]
    order = schedule(train, seed=0)
    assert sorted(p.name for p in order) == sorted(p.name for p in train)
    assert {p.name.split("/")[0] for p in order[:3]} == {"a", "b", "c"}
    assert [p.name for p in schedule(train, 0)] == [p.name for p in order]
    validation = [p for p in programs() if p.split == VALIDATION]
    sample = validation_sample(validation, 2, seed=0)
    assert len(sample) == 3 and {p.name for p in sample} >= {"w/0.c"}
    assert [p.name for p in validation_sample(validation, 2, 0)] == [p.name for p in sample]


def test_a_policy_reads_back_from_its_onnx_and_other_models_are_refused(tmp_path):
    pytest.importorskip("onnx")
    policy = residual(0.5)
    policy.to_onnx(tmp_path / "p.onnx")
    back = Policy.from_onnx(tmp_path / "p.onnx")
    assert back.names == policy.names and back.flips
    assert np.allclose(back.scale, policy.scale) and np.allclose(back.layers[0][1], [0, 0.5])
    (tmp_path / "junk.onnx").write_bytes(b"\x00not onnx")
    with pytest.raises(MlbridgeError):
        Policy.from_onnx(tmp_path / "junk.onnx")
    with pytest.raises(MlbridgeError, match="larger than 100 bytes"):
        Policy.from_onnx(tmp_path / "p.onnx", max_bytes=100)
    with pytest.raises(MlbridgeError, match="cannot read"):
        Policy.from_onnx(tmp_path / "missing.onnx")


def test_a_hostile_policy_model_is_refused_before_its_data_is_read(tmp_path):
    onnx = pytest.importorskip("onnx")
    residual(0.5).to_onnx(tmp_path / "p.onnx")
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(2, dtype=np.float32).tobytes())
    # External data: the weights would be read from another file.
    model = onnx.load(str(tmp_path / "p.onnx"))
    (mean,) = [t for t in model.graph.initializer if t.name == "mean"]
    mean.ClearField("raw_data")
    mean.ClearField("float_data")
    mean.data_location = onnx.TensorProto.EXTERNAL
    entry = mean.external_data.add()
    entry.key, entry.value = "location", "secret.bin"
    onnx.save(model, str(tmp_path / "external.onnx"))
    with pytest.raises(MlbridgeError, match="external file"):
        Policy.from_onnx(tmp_path / "external.onnx")
    # A tensor declaring far more data than it holds.
    model = onnx.load(str(tmp_path / "p.onnx"))
    (w0,) = [t for t in model.graph.initializer if t.name == "w0"]
    w0.dims[:] = [1 << 20, 1 << 10]
    onnx.save(model, str(tmp_path / "liar.onnx"))
    with pytest.raises(MlbridgeError):
        Policy.from_onnx(tmp_path / "liar.onnx")
    # Weights that are not numbers.
    model = onnx.load(str(tmp_path / "p.onnx"))
    (b0,) = [t for t in model.graph.initializer if t.name == "b0"]
    b0.CopyFrom(onnx.helper.make_tensor("b0", onnx.TensorProto.STRING, [2], [b"a", b"b"]))
    onnx.save(model, str(tmp_path / "strings.onnx"))
    with pytest.raises(MlbridgeError, match="not a policy"):
        Policy.from_onnx(tmp_path / "strings.onnx")


def test_the_margin_is_checked_and_only_for_search(tmp_path, capsys):
    from mlbridge import cli
    from mlbridge.cli_errors import USAGE

    common = ["train", "inlining", "--corpus", str(tmp_path), "--out", str(tmp_path / "run")]
    assert cli.main([*common, "--margin", "2"]) == USAGE
    assert "--margin: for --method search" in capsys.readouterr().err
    tool = ["--method", "search", "--tool", str(tmp_path / "plugin.so")]
    assert cli.main([*common, *tool, "--margin", "-1"]) == USAGE
    assert "--margin: margin must be non-negative" in capsys.readouterr().err


def test_search_refuses_the_options_only_ppo_reads(tmp_path, capsys):
    """An option PPO alone reads is refused under ``--method search``, not
    ignored; the parser's default of each is what the check compares to."""
    from mlbridge import cli
    from mlbridge.cli.train_command import PPO_ONLY
    from mlbridge.cli_errors import USAGE

    common = ["train", "inlining", "--corpus", str(tmp_path), "--out", str(tmp_path / "run")]
    search = [*common, "--method", "search", "--tool", str(tmp_path / "plugin.so")]
    for given in (
        ["--plugin-features"],
        ["--defer-in-training"],
        ["--timesteps", "100"],
        ["--learning-rate", "1e-4"],
        ["--plugin-features", "--n-steps", "64"],
    ):
        assert cli.main([*search, *given]) == USAGE
        err = capsys.readouterr().err
        assert "not read by --method search" in err
        assert all(flag in err for flag in given if flag.startswith("--"))
    parser = cli._parser()
    args = parser.parse_args(["train", "inlining"])
    assert {k: getattr(args, k) for k in PPO_ONLY} == PPO_ONLY


def test_ppo_is_validated_on_the_corpus_validation_projects_or_on_files_set_aside(
    monkeypatch, tmp_path, capsys
):
    """The command hands PPO the inlining problem's validation measure,
    built on the corpus's validation programs; a corpus that names none has
    a share of its training files set aside, which the environment leaves
    out. A run whose checkpoints never beat -Oz writes no policy."""
    from mlbridge import cli
    from mlbridge.cli_errors import ENVIRONMENT
    from mlbridge.native import NativeError
    from mlbridge.train import ppo

    built: List[Sequence[Program]] = []

    def measure_on(programs, out, jobs, tool, llvm, per_project, seed):
        built.append(programs)
        assert (jobs, tool, per_project, seed) == (2, Path("p.so"), 7, 3)
        return lambda model: (1.0, {})

    given: List[object] = []

    def train(config, validate=None, progress=None):
        given.append((validate, dict(config.env_kwargs)))
        assert config.patience == 4
        if validate is None:
            return {"timesteps": 1, "seconds": 0.0, "policy": str(config.out / "policy.onnx")}
        validation = {"best_ratio": 1.0, "best_steps": 0, "points": 1, "stopped_early": True}
        return {"timesteps": 1, "seconds": 0.0, "policy": None, "validation": validation}

    monkeypatch.setattr(inlining_size, "validation_measure", measure_on)
    monkeypatch.setattr(ppo, "train", train)
    monkeypatch.setattr("mlbridge.corpus.defaults.load_corpus", lambda corpus, quick: programs())
    out = str(tmp_path / "run")
    args = ["train", "inlining", "--tool", "p.so", "--corpus", str(tmp_path), "--out", out]
    flags = ["--validation-units", "7", "--seed", "3", "--patience", "4", "--no-evaluate"]
    assert cli.main([*args, *flags]) == ENVIRONMENT
    assert callable(given[0][0]) and "validation_aside" not in given[0][1]
    assert built[0] == programs()
    err = capsys.readouterr()
    assert "no checkpoint did better than the compiler's own heuristic" in err.err
    assert "best on the validation programs: 1.0000x" in err.out
    without = [p for p in programs() if p.split != VALIDATION]
    monkeypatch.setattr("mlbridge.corpus.defaults.load_corpus", lambda corpus, quick: without)
    assert cli.main([*args, *flags]) == ENVIRONMENT
    assert callable(given[1][0]) and given[1][1]["validation_aside"] is True
    aside = [p.name for p in built[1] if p.split == VALIDATION]
    assert aside and aside == [
        p.name for p in set_aside_validation(without) if p.split == VALIDATION
    ]
    assert f"{len(aside)} of its training files are set aside" in capsys.readouterr().out

    def no_plugin(*_args):
        raise NativeError("no plugin installed")

    monkeypatch.setattr(inlining_size, "validation_measure", no_plugin)
    assert cli.main([*args, *flags]) == 0  # training needs no plugin: no curve
    assert given[2][0] is None and "validation_aside" not in given[2][1]
    out = capsys.readouterr().out
    assert "no validation curve: no plugin installed" in out and "set aside" not in out
