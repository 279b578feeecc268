"""The programs of `mlbridge loop` (mlbridge.corpus.defaults): bundled, the fetched
reference corpus, a user's own directory, the stable split, the default
corpus. No compiler needed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Dict, List

import pytest

import mlbridge.corpus as corpus
from mlbridge.corpus import HELD_OUT, TRAIN, hash_split, split
from mlbridge.corpus.defaults import default_corpus, load_corpus
from mlbridge.errors import MlbridgeError
from mlbridge.problems.inlining.loop.run import _programs

BUNDLED = ["demo-expr", "demo-hashtable", "demo-kernels"]


def write(root: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def names(programs: List[corpus.Program]) -> List[str]:
    return [p.name for p in programs]


def test_bundled_programs_are_package_data_and_training_programs() -> None:
    programs = load_corpus(None)
    assert names(programs) == BUNDLED
    assert all(p.split == TRAIN and p.sources[0].is_file() for p in programs)


def test_a_users_directory(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.c": "int a;",
            "b.c": "int b;",
            "notes.txt": "",
            ".hidden.c": "",
            "lib/x.c": "int x;",
            "lib/y.c": "int y;",
            "lib/x.h": "",
            "lib/deeper/z.c": "",
            "headers/only.h": "",
            ".git/h.c": "",
        },
    )
    programs = load_corpus(tmp_path)
    assert names(programs) == BUNDLED + ["a.c", "b.c", "lib"]
    lib = programs[-1]
    assert [s.name for s in lib.sources] == ["x.c", "y.c"]
    assert lib.flags == (f"-I{tmp_path / 'lib'}",)
    assert programs[3].flags == ()
    user = programs[3:]
    assert {p.split for p in user} == {TRAIN, HELD_OUT}
    assert load_corpus(tmp_path) == programs  # stable


def test_the_split_is_stable_and_has_both_sides() -> None:
    assert hash_split([]) == {}
    assert hash_split(["only.c"]) == {"only.c": HELD_OUT}
    for count in range(2, 12):
        names_ = [f"p{i}.c" for i in range(count)]
        splits = hash_split(names_)
        assert set(splits.values()) == {TRAIN, HELD_OUT}, count
        # Adding programs does not move the others (beyond the guarantees).
        if count > 4:
            before = hash_split(names_[:-1])
            moved = [n for n in names_[:-1] if before[n] != splits[n]]
            assert len(moved) <= 1
    many = hash_split([f"program-{i}" for i in range(1000)])
    share = sum(s == HELD_OUT for s in many.values()) / len(many)
    assert abs(share - corpus.HELD_OUT_FRACTION) < 0.05


def test_a_directory_without_c_files_is_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path, {"README": "", "inc/a.h": ""})
    with pytest.raises(MlbridgeError, match=f"no C programs in {tmp_path}"):
        load_corpus(tmp_path)
    with pytest.raises(MlbridgeError, match="not a directory"):
        load_corpus(tmp_path / "missing")


def test_a_name_clash_with_the_bundled_programs_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"demo-expr/e.c": "", "x.c": ""})
    with pytest.raises(MlbridgeError, match="two programs are named demo-expr"):
        load_corpus(tmp_path)


def test_the_fetched_corpus_keeps_its_split(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lz4/lz4libs/lz4.c": "",
            "xxhash/deps/xxhash/xxhash.c": "",
            "zstd/zstd/zstd.c": "",
            "sqlite3.c": "",
        },
    )
    quick = load_corpus(tmp_path, quick=True)
    assert names(split(quick, TRAIN)) == BUNDLED + ["lz4"]
    assert names(split(quick, HELD_OUT)) == ["xxhash"]
    full = load_corpus(tmp_path)
    assert names(split(full, HELD_OUT)) == ["xxhash", "zstd", "sqlite3"]


def test_the_default_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_corpus({}) is None
    (tmp_path / ".cache" / "corpus").mkdir(parents=True)
    assert default_corpus({}) == tmp_path / ".cache" / "corpus"
    assert default_corpus({"MLBRIDGE_CORPUS": "/somewhere"}) == Path("/somewhere")


def test_bundled_programs_only_is_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLBRIDGE_CORPUS", raising=False)
    stream = io.StringIO()
    with pytest.raises(MlbridgeError, match="no held-out program.*--corpus"):
        _programs(None, False, stream)
    assert "the bundled demo programs only" in stream.getvalue()


def test_the_split_is_said(tmp_path: Path) -> None:
    write(tmp_path, {"a.c": "", "b.c": "", "c.c": ""})
    stream = io.StringIO()
    programs = _programs(tmp_path, True, stream)
    line = stream.getvalue()
    assert "always training" in line and all(name in line for name in names(programs))
