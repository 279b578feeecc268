"""Code size split by COMDAT group (mlbridge.llvm.outcomes.code_bytes) and
the code of objects linked into one program (linked_code): an inline C++
function compiled into two objects is counted once, as the linker keeps it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mlbridge.llvm.outcomes import CodeBytes, code_bytes, linked_code, text_size

needs_clang = pytest.mark.skipif(
    not (shutil.which("clang++-19") and shutil.which("llvm-readelf-19")),
    reason="needs clang++-19 and llvm-readelf-19",
)

HEADER = """
#include <vector>
inline int shared(std::vector<int> &v, int x) {
  v.push_back(x * 3);
  v.push_back(x ^ 5);
  return int(v.size()) + v[0];
}
"""


def _object(tmp_path: Path, name: str, body: str, *flags: str) -> str:
    source = tmp_path / f"{name}.cc"
    source.write_text(HEADER + body)
    obj = tmp_path / f"{name}.o"
    subprocess.run(
        ["clang++-19", "-Oz", "-fno-inline", *flags, "-c", str(source), "-o", str(obj)],
        check=True,
    )
    return str(obj)


@needs_clang
@pytest.mark.parametrize("flags", [(), ("-ffunction-sections",)])
def test_an_inline_function_in_two_objects_is_linked_once(tmp_path, flags):
    a = _object(tmp_path, "a", "int a(std::vector<int> &v) { return shared(v, 1); }\n", *flags)
    b = _object(tmp_path, "b", "int b(std::vector<int> &v) { return shared(v, 2) + 1; }\n", *flags)
    code_a, code_b = code_bytes(a), code_bytes(b)
    assert code_a.total == text_size(a) and code_b.total == text_size(b)
    mangled = "_Z6sharedRSt6vectorIiSaIiEEi"
    assert code_a.comdat[mangled] == code_b.comdat[mangled] > 0
    assert code_a.own > 0 and code_b.own > 0  # a() and b(), in no group
    together = linked_code([code_a, code_b])
    assert together == code_a.total + code_b.total - sum(
        size for name, size in code_b.comdat.items() if name in code_a.comdat
    )
    assert together < code_a.total + code_b.total


def test_linked_code_keeps_the_largest_copy_of_a_group():
    objects = [CodeBytes(10, {"f": 5, "g": 7}), CodeBytes(20, {"f": 9}), CodeBytes(1, {})]
    assert linked_code(objects) == 10 + 20 + 1 + 9 + 7
    assert linked_code([]) == 0


@needs_clang
def test_a_c_object_has_no_group(tmp_path):
    source = tmp_path / "c.c"
    source.write_text("static int g(int x) { return x * 7; }\nint f(int x) { return g(x) + 1; }\n")
    obj = tmp_path / "c.o"
    subprocess.run(["clang-19", "-Oz", "-c", str(source), "-o", str(obj)], check=True)
    code = code_bytes(str(obj))
    assert code.comdat == {} and code.own == text_size(str(obj)) > 0


@needs_clang
def test_compile_program_reports_each_objects_code(tmp_path):
    from mlbridge.corpus.program import Program
    from mlbridge.problems.inlining.toolchain import compile_program, object_path

    sources = []
    for name, body in (
        ("a", "int a(std::vector<int> &v) { return shared(v, 1); }\n"),
        ("b", "int b(std::vector<int> &v) { return shared(v, 2); }\n"),
    ):
        source = tmp_path / f"{name}.cc"
        source.write_text(HEADER + body)
        sources.append(source)
    program = Program("two", tuple(sources), ("-fno-inline",), "train")
    out = tmp_path / "out"
    result = compile_program(program, out, jobs=1)
    assert len(result.code) == 2
    for source, code in zip(sources, result.code):
        assert code == code_bytes(str(object_path(out, source)))
    assert result.text_bytes == sum(c.total for c in result.code)
    assert linked_code(list(result.code)) < result.text_bytes  # shared() once
    # Reports (the loop's results.json) keep the figures, not every object's groups.
    figures = result.figures()
    assert "code" not in figures and figures["text_bytes"] == result.text_bytes
