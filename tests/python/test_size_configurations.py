"""mlbridge.problems.phase_ordering.configurations: units measured under
constant configurations in allocated bytes, the best constant chosen on
validation units only, the per-unit search's choice, ratios per project."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlbridge.llvm.outcomes import object_sizes
from mlbridge.problems.phase_ordering.configurations import (
    OZ,
    Configuration,
    ConfigurationError,
    Unit,
    append_rows,
    best_constant,
    complete_units,
    measure,
    per_unit_best,
    project_ratios,
    read_table,
)

OZ_IDENTITY_C = Path(__file__).resolve().parents[1] / "data" / "oz_identity.c"
CONSTANT_FLAGS_C = Path(__file__).resolve().parents[1] / "data" / "constant_flags.c"


def _sizes(allocated, text):
    return {"allocated": allocated, "text": text}


#: Three units of two projects under three configurations; "b" is best in
#: total on the validation unit v1, "c" on the test units.
TABLE = {
    "v1": {OZ: _sizes(100, 60), "b": _sizes(90, 55), "c": _sizes(120, 50)},
    "t1": {OZ: _sizes(100, 60), "b": _sizes(110, 62), "c": _sizes(80, 40)},
    "t2": {OZ: _sizes(200, 100), "b": _sizes(200, 100), "c": _sizes(150, 80)},
    "broken": {OZ: _sizes(10, 5), "b": "clang failed", "c": _sizes(1, 1)},
}


def _unit(name, project, split):
    return Unit(name, project, split, Path(f"{name}.c"), ())


def test_the_best_constant_is_chosen_on_the_units_given_only():
    assert complete_units(TABLE) == ["v1", "t1", "t2"]
    chosen, totals = best_constant(TABLE, ["v1"])
    assert chosen == "b" and totals == {OZ: 100, "b": 90, "c": 120}
    # on the test units "c" would win: they are not looked at
    assert best_constant(TABLE, ["t1", "t2"])[0] == "c"
    # by .text, "c" wins on v1 too
    assert best_constant(TABLE, ["v1"], metric="text")[0] == "c"
    # a tie goes to -Oz
    tie = {"u": {"a": _sizes(5, 5), OZ: _sizes(5, 5)}}
    assert best_constant(tie, ["u"])[0] == OZ
    with pytest.raises(ConfigurationError):
        best_constant(TABLE, [])


def test_the_search_takes_each_units_smallest_and_ratios_are_per_project():
    units = [_unit("t1", "p", "held-out"), _unit("t2", "q", "held-out")]
    choice = per_unit_best(TABLE, ["t1", "t2"])
    assert choice == {"t1": "c", "t2": "c"}
    ratios = project_ratios(TABLE, units, choice)
    assert ratios["p"]["allocated"] == pytest.approx(0.8)
    assert ratios["q"]["text"] == pytest.approx(0.8)
    assert ratios["total"]["allocated"] == pytest.approx(230 / 300)
    assert ratios["total"]["units"] == 2 and ratios["total"]["oz_allocated"] == 300
    # a unit that a configuration could not compile is left out
    assert "broken" not in complete_units(TABLE)
    assert "r" not in project_ratios(TABLE, [_unit("broken", "r", "held-out")], {"broken": "b"})


def _service_and_unit(source: Path, work: Path):
    """The phase service, and ``source`` as a unit with its module (the
    test is skipped without the service)."""
    from mlbridge.corpus.program import Program
    from mlbridge.gym.modules import prepare_modules
    from mlbridge.native import NativeError, phase_service_path

    try:
        service = str(phase_service_path())
    except NativeError as err:
        pytest.skip(f"no mlbridge-phase-service: {err}")
    (module,) = prepare_modules([Program(source.stem, (source,), (), "train")], work)
    unit = Unit(
        source.stem,
        "demo",
        "validation",
        source,
        (),
        module.bitcode,
        tuple(module.codegen_flags()),
    )
    return service, unit


def test_a_real_unit_under_plain_and_pipeline_configurations(tmp_path):
    """-Oz plainly and default<Oz> through the service are the same object
    (the harness identity), so their sizes are equal; -Os and a pipeline
    configuration compile too; a configuration that fails is recorded as
    the reason, not raised."""
    from mlbridge.llvm.versions import tools

    service, unit = _service_and_unit(OZ_IDENTITY_C, tmp_path / "m")
    configurations = (
        Configuration(OZ),
        Configuration("Os", ("-Os",)),
        Configuration("Oz-service", pipeline="default<Oz>"),
        Configuration("Oz-twice", pipeline="default<Oz>,default<Oz>"),
        Configuration("bad-flag", ("-mllvm", "-no-such-option-here")),
    )
    table = measure([unit], configurations, clang=tools().clang, service=service, jobs=1)
    row = table["oz_identity"]
    assert row[OZ] == row["Oz-service"]
    assert row[OZ]["allocated"] > row[OZ]["text"] > 0
    assert isinstance(row["Os"], dict) and isinstance(row["Oz-twice"], dict)
    assert isinstance(row["bad-flag"], str) and "no-such-option-here" in row["bad-flag"]
    assert complete_units(table) == []
    plain = tmp_path / "plain.o"
    import subprocess

    subprocess.run(
        [tools().clang, "-Oz", "-c", "-w", str(OZ_IDENTITY_C), "-o", str(plain)], check=True
    )
    assert row[OZ] == object_sizes(str(plain))
    with pytest.raises(ConfigurationError):
        measure([unit], configurations[1:], clang=tools().clang, service=service)
    # a table measured before: only what it lacks is measured
    assert measure([unit], configurations, clang=tools().clang, known=table) == {}
    known = {"oz_identity": {c: o for c, o in row.items() if c != "Os"}}
    again = measure([unit], configurations, clang=tools().clang, known=known)
    assert again == {"oz_identity": {"Os": row["Os"]}}


def test_pipelines_that_are_clang_options(tmp_path):
    """docs/phase-ordering.md recommends the best constant as plain clang
    flags: their object has the sizes of the pipeline through the service,
    and each flag acts (the file has code for both knobs). And -Os's code is
    ``optsize,default<Os>`` on -Oz's front end's module."""
    from mlbridge.llvm.versions import tools

    service, unit = _service_and_unit(CONSTANT_FLAGS_C, tmp_path / "m")
    threshold = ("-mllvm", "-inline-threshold=10")
    merge = ("-Xclang", "-fmerge-functions")
    configurations = (
        Configuration(OZ),
        Configuration("pipeline", pipeline="default<Oz;inline-threshold=10>,mergefunc"),
        Configuration("flags", (*threshold, *merge)),
        Configuration("threshold", threshold),
        Configuration("merge", merge),
        Configuration("Os", ("-Os",)),
        Configuration("optsize", pipeline="optsize,default<Os>"),
    )
    row = measure([unit], configurations, clang=tools().clang, service=service, jobs=1)[
        "constant_flags"
    ]
    assert row["flags"] == row["pipeline"]
    # -Os's code from -Oz's front end, after it (a C unit: the same object)
    assert row["optsize"] == row["Os"] != row[OZ]
    sizes = {name: row[name]["allocated"] for name in (OZ, "flags", "threshold", "merge")}
    assert len(set(sizes.values())) == 4, sizes


def test_a_table_file_resumes_row_by_row(tmp_path):
    path = tmp_path / "table.jsonl"
    assert read_table(path) == {}
    append_rows(path, {"v1": TABLE["v1"], "t1": {OZ: TABLE["t1"][OZ]}})
    append_rows(path, {"t1": {"b": TABLE["t1"]["b"]}})  # a configuration added later
    assert read_table(path) == {
        "v1": TABLE["v1"],
        "t1": {OZ: TABLE["t1"][OZ], "b": TABLE["t1"]["b"]},
    }
