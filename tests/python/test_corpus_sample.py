"""A fixed sample of a large corpus (``max_programs`` of the environments,
``--max-programs`` of ``mlbridge train`` and ``mlbridge evaluate``): its
projects interleaved, the same sample every time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlbridge.corpus.program import TRAIN, Program
from mlbridge.corpus.split import interleave_projects
from mlbridge.gym.corpus_modules import corpus_modules


def _programs():
    return [
        Program(f"{project}/{i}.c", (Path(f"{project}{i}.c"),), (), TRAIN)
        for project, count in (("a", 5), ("b", 1), ("c", 3))
        for i in range(count)
    ]


def test_every_prefix_covers_as_many_projects_as_it_can():
    order = interleave_projects(_programs(), seed=0)
    assert sorted(p.name for p in order) == sorted(p.name for p in _programs())
    assert [p.project for p in order[:3]] == ["a", "b", "c"]
    assert [p.project for p in order[3:5]] == ["a", "c"]
    assert [p.name for p in interleave_projects(_programs(), 0)] == [p.name for p in order]
    assert [p.name for p in interleave_projects(_programs(), 1)] != [p.name for p in order]


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")
def test_corpus_modules_take_the_first_of_the_interleaved_programs(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        (corpus / f"{name}.c").write_text(f"int {name}(int x) {{ return x + 1; }}\n")
    every = corpus_modules(corpus, "all", True, tmp_path / "cache")
    two = corpus_modules(corpus, "all", True, tmp_path / "cache", max_programs=2)
    assert len(two) == 2 and {m.name for m in two} <= {m.name for m in every}
    again = corpus_modules(corpus, "all", True, tmp_path / "cache", max_programs=2)
    assert [m.name for m in again] == [m.name for m in two]
    with pytest.raises(ValueError, match="max_programs"):
        corpus_modules(corpus, "all", True, tmp_path / "cache", max_programs=0)


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")
def test_a_source_that_does_not_compile_is_left_out_with_why(tmp_path, caplog):
    from mlbridge.gym.modules import ModuleError, prepare_modules

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.c").write_text("int good(int x) { return x + 1; }\n")
    (corpus / "bad.c").write_text("int bad(int x) { return undeclared(x); }\n")
    modules = corpus_modules(corpus, "all", True, tmp_path / "cache")
    assert "good.c" in {m.name for m in modules} and "bad.c" not in {m.name for m in modules}
    assert "1 of" in caplog.text and "undeclared" in caplog.text
    programs = [Program("bad.c", (corpus / "bad.c",), (), TRAIN)]
    with pytest.raises(ModuleError, match="undeclared"):
        prepare_modules(programs, tmp_path / "cache")
    failed: dict = {}
    assert prepare_modules(programs, tmp_path / "cache", failed=failed) == []
    assert "undeclared" in failed["bad.c"]


def test_processes_sharing_a_cache_make_each_module_once(tmp_path):
    """Two preparations of the same programs at once (as rollout workers
    start) run the compiler once per module: the second waits on the
    module's lock and finds it made."""
    from concurrent.futures import ThreadPoolExecutor

    from mlbridge.gym.modules import prepare_modules

    log = tmp_path / "compiled.log"
    clang = tmp_path / "fake-clang"
    # The fake compiler logs its source, takes a moment, writes the output.
    clang.write_text(
        '#!/bin/sh\nfor a; do case "$a" in *.c) src="$a";; esac; out="$a"; done\n'
        f'echo "$src" >> {log}\nsleep 0.2\necho module > "$out"\n'
    )
    clang.chmod(0o755)
    sources = []
    for i in range(6):
        source = tmp_path / f"u{i}.c"
        source.write_text(f"int u{i};\n")
        sources.append(Program(f"u{i}.c", (source,), (), TRAIN))
    cache = tmp_path / "cache"

    def prepare(_: int):
        return prepare_modules(sources, cache, clang=str(clang), jobs=3)

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(prepare, range(2))
    assert [m.bitcode for m in first] == [m.bitcode for m in second]
    assert all(m.bitcode.read_text() == "module\n" for m in first)
    assert sorted(log.read_text().split()) == sorted(str(p.sources[0]) for p in sources)


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")
def test_files_set_aside_for_validation_are_no_training_modules(tmp_path):
    """``validation_aside``: a directory corpus (train and held-out only)
    gets validation files, the same as the command validates on, and the
    training split leaves them out."""
    from mlbridge.corpus.defaults import load_corpus
    from mlbridge.corpus.program import VALIDATION

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(12):
        (corpus / f"f{i}.c").write_text(f"int f{i}(int x) {{ return x + {i}; }}\n")
    programs = load_corpus(corpus, True, validation_aside=True)
    aside = {p.name for p in programs if p.split == VALIDATION}
    training = {p.name for p in programs if p.split == TRAIN}
    assert aside and not any(p.split == VALIDATION for p in load_corpus(corpus, True))
    modules = corpus_modules(corpus, "train", True, tmp_path / "cache", validation_aside=True)
    assert {m.program for m in modules} == training
    everything = corpus_modules(corpus, "train", True, tmp_path / "cache")
    assert {m.program for m in everything} == training | aside
