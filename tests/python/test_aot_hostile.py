"""mlbridge-aot against hostile names: whatever a model calls its graph,
inputs, outputs, initializers and nodes (newlines, comment delimiters, a
backslash ending a line, quotes, trigraphs, control characters, non-ASCII
text, 10 kB names), the generated code compiles without a warning, computes
what numpy computes, and runs nothing the model smuggled in."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path
from typing import List

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from test_aot import (  # noqa: E402
    BUILD_FLAGS,
    F,
    _compile_cxx,
    compilers,
    make_model,
    run_cli,
    run_generated,
    save,
)

from mlbridge.aot import AotError, compile_model  # noqa: E402
from mlbridge.aot.cxx import comment, string_literal, unique_identifier  # noqa: E402
from onnx import helper  # noqa: E402

#: Code that prints at start-up (or when run) if it ever escapes its comment
#: or string literal: at class or namespace scope, and in a function.
STATIC = 'static inline int mlbridge_pwned = __builtin_printf("PWNED\\n");'
STATEMENT = '__builtin_printf("PWNED\\n");'

#: name -> what it attacks.
INPUT_A = f"a\n{STATIC}\n//"  # newline in ///
INPUT_B = f'b"); {STATEMENT} ("' + "\\"  # quotes, trailing \
INIT_W = f"w */ {STATIC} /* \\\n{STATIC}\n/*"  # */, /*, line splice
NODE_ADD = f"add ??/\n{STATEMENT}\n// \x00\x01\x1b[2J\x7f"  # trigraph, NUL, controls
TENSOR_T = f"t\u2028{STATEMENT}\u2029é\U0001f600\r{STATEMENT}"  # U+2028, UTF-8, CR
NODE_MUL = "m" + "\\\n" + STATEMENT
OUTPUT_Y = f"y */\n{STATIC}\n\"'??=??(??<"
OUTPUT_LONG = "ü" * 5000 + "\n" + STATIC  # 10 kB of UTF-8
GRAPH = f"g */ {STATIC} /*\n{STATIC}\n"
NAMES = [INPUT_A, INPUT_B, INIT_W, NODE_ADD, TENSOR_T, NODE_MUL, OUTPUT_Y, OUTPUT_LONG, GRAPH]


def hostile_model() -> onnx.ModelProto:
    """y = Relu((a + w) * b) and t = a + w, every name hostile."""
    w = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    nodes = [
        helper.make_node("Add", [INPUT_A, INIT_W], [TENSOR_T], name=NODE_ADD),
        helper.make_node("Mul", [TENSOR_T, INPUT_B], ["u"], name=NODE_MUL),
        helper.make_node("Relu", ["u"], [OUTPUT_Y], name=STATEMENT),
        helper.make_node("Identity", [TENSOR_T], [OUTPUT_LONG], name=GRAPH),
    ]
    model = make_model(
        nodes,
        [(INPUT_A, F, [2, 3]), (INPUT_B, F, [2, 3])],
        [(OUTPUT_Y, F, [2, 3]), (OUTPUT_LONG, F, [2, 3])],
        {INIT_W: w},
    )
    model.graph.name = GRAPH
    model.graph.doc_string = GRAPH
    model.producer_name = GRAPH
    model.doc_string = GRAPH
    # Metadata the module carries as C strings (no NUL: refused).
    helper.set_model_props(
        model, {f"mlbridge.{n}": n for n in (INPUT_A, INPUT_B, INIT_W, OUTPUT_Y, GRAPH)}
    )
    return model


def expected(a: np.ndarray, b: np.ndarray) -> List[np.ndarray]:
    t = a + np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    return [np.maximum(t * b, 0), t]


@pytest.mark.parametrize("weights", ["inline", "file"])
@pytest.mark.parametrize("compiler", compilers())
def test_hostile_names_compile_and_run(tmp_path: Path, compiler: str, weights: str) -> None:
    generated = compile_model(
        hostile_model(), class_name="Hostile", inline_weights_limit=0 if weights == "file" else None
    )
    assert bool(generated.weights) == (weights == "file")
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    # run_generated: -Werror, every name looked up by its exact bytes, and
    # the program's output is the results' bytes and nothing else.
    # With the loadable module's entry points, whose metadata is compiled too.
    flags = [*BUILD_FLAGS, "-DMLBRIDGE_AOT_ENTRY_POINT"]
    for got, want in zip(
        run_generated(generated, tmp_path, [a, b], compiler, flags), expected(a, b)
    ):
        np.testing.assert_array_equal(got, want)


def test_no_name_reaches_the_code_verbatim() -> None:
    generated = compile_model(hostile_model(), class_name="Hostile", inline_weights_limit=0)
    for text in (generated.header, generated.source):
        assert text.isascii()
        assert 'PWNED\\n");\n' not in text and "\u2028" not in text
        for name in NAMES:
            assert name not in text
        for line in text.splitlines():
            assert not line.endswith("\\") or line.startswith("#"), line
            if "//" in line:
                assert "??" not in line.split("//", 1)[1], line


def test_metadata_with_nul_or_too_long_is_refused() -> None:
    for value in ("a\0b", "x" * 5000):
        model = hostile_model()
        helper.set_model_props(model, {"mlbridge.bad": value})
        with pytest.raises(AotError, match="C strings of at most"):
            compile_model(model)
    model = hostile_model()
    helper.set_model_props(model, {f"mlbridge.{i}": "" for i in range(65)})
    with pytest.raises(AotError, match="at most 64"):
        compile_model(model)


def test_long_names_give_short_identifiers() -> None:
    header = compile_model(hostile_model(), class_name="Hostile").header
    accessors = re.findall(r"\*(result_\w+_data)\(\)", header)
    assert len(accessors) == 2 and all(len(a) < 100 for a in accessors)


def test_colliding_names_give_distinct_accessors(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x.1"], ["y"]), helper.make_node("Neg", ["x_1"], ["z"])]
    model = make_model(nodes, [("x.1", F, [4]), ("x_1", F, [4])], [("y", F, [4]), ("z", F, [4])])
    generated = compile_model(model, class_name="Collide")
    assert "arg_feed_x_1_data()" in generated.header
    assert "arg_feed_x_1_2_data()" in generated.header
    x = np.array([-1, 2, -3, 4], np.float32)
    y, z = run_generated(generated, tmp_path, [x, x], compilers()[0])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    np.testing.assert_array_equal(z, -x)


@pytest.mark.parametrize("where", ["input", "output"])
def test_nul_in_an_input_or_output_name_is_refused(where: str) -> None:
    name = "bad\x00name"
    x, y = (name, "y") if where == "input" else ("x", name)
    model = make_model([helper.make_node("Relu", [x], [y])], [(x, F, [2])], [(y, F, [2])])
    with pytest.raises(AotError) as info:
        compile_model(model)
    assert f"{where} 'bad\\x00name'" in str(info.value) and "NUL" in str(info.value)


def test_hostile_model_file_name(tmp_path: Path) -> None:
    """The model's file name labels both files (a file name has no '/')."""
    path = save(hostile_model(), tmp_path / f"m \\\n{STATIC}\n{STATIC}??=\n.onnx")
    generated = compile_model(path, class_name="Hostile")
    assert path.name not in generated.header and path.name not in generated.source
    _, source = generated.write(tmp_path / "gen")
    for compiler in compilers():
        failure = _compile_cxx(compiler, source)
        assert failure is None, failure


def test_weights_directory_with_quote_is_refused(tmp_path: Path) -> None:
    generated = compile_model(hostile_model(), class_name="Hostile", inline_weights_limit=0)
    out = tmp_path / 'we"ights\n'
    with pytest.raises(AotError) as info:
        generated.write(out)
    assert "cannot be referenced from assembly" in str(info.value)
    assert not out.exists()


def test_weights_directory_with_spaces_and_utf8(tmp_path: Path) -> None:
    generated = compile_model(hostile_model(), class_name="Hostile", inline_weights_limit=0)
    a = b = np.ones((2, 3), np.float32)
    outputs = run_generated(generated, tmp_path / "wéights dir ;$(x)", [a, b], compilers()[0])
    for got, want in zip(outputs, expected(a, b)):
        np.testing.assert_array_equal(got, want)


def test_cli_error_shows_no_control_characters(tmp_path: Path) -> None:
    model = make_model(
        [helper.make_node("Sin", ["x"], ["y"], name="s\x1b[2J\ri\n")],
        [("x", F, [4])],
        [("y", F, [4])],
    )
    done = run_cli(str(save(model, tmp_path / "sin.onnx")), "-o", str(tmp_path / "gen"))
    assert done.returncode == 1
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    assert done.stderr.count("\n") == 1 and "s\\u001b[2J\\u000di\\u000a" in done.stderr


# -- the three doors, on random text -------------------------------------------

#: Characters that mean something to a C++ lexer, and a few that look like them.
NASTY = list("*/?\\\"'\n\r\t\x00\x0b\x0c#=(<!>)-") + ["\u2028", "\u2029", "é", "\ufeff"]


def _random_texts(count: int, length: int = 12) -> List[str]:
    rng = random.Random(11)
    alphabet = NASTY + list("ab ")
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, length))) for _ in range(count)
    ]


def test_comment_is_inert_anywhere() -> None:
    for text in _random_texts(3000) + ["*", "/", "?", "\\", "a" * 1000]:
        rendered = comment(text)
        assert rendered.isascii() and rendered.isprintable()
        for bad in ("*/", "/*", "??"):
            assert bad not in rendered, (text, rendered)
        assert not rendered.endswith(("\\", "*", "/", "?"))
        assert not rendered.startswith(("*", "/", "?"))
        assert len(rendered) < 200


def test_string_literal_round_trips_through_the_compiler(tmp_path: Path) -> None:
    texts = _random_texts(200) + [OUTPUT_LONG, NODE_ADD]
    rows = ",\n".join(f"  {{{string_literal(t)}, {len(t.encode())}}}" for t in texts)
    source = tmp_path / "literals.cpp"
    source.write_text(
        "#include <cstdio>\nstruct Row { const char *Text; unsigned long Size; };\n"
        f"const Row Rows[] = {{\n{rows}}};\nint main() {{\n"
        "  for (const Row &R : Rows)\n"
        "    std::fwrite(R.Text, 1, R.Size, stdout);\n}\n"
    )
    for compiler in compilers():
        failure = _compile_cxx(
            compiler,
            source,
            ["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror"],
            tmp_path / f"literals.{compiler}",
        )
        assert failure is None, failure
        done = subprocess.run([str(tmp_path / f"literals.{compiler}")], capture_output=True)
        assert done.stdout == b"".join(t.encode() for t in texts)


def test_unique_identifier() -> None:
    taken: set = set()
    idents = [unique_identifier(t, taken) for t in _random_texts(500) + ["class", "1x", ""]]
    assert len(set(idents)) == len(idents)
    for ident in idents:
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*", ident), ident
        assert len(ident) <= 80
