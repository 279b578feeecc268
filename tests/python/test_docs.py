"""The documentation runs: every shell, C, C++ and Python block of README.md
and docs/*.md is a test case (id ``FILE:LINE`` of its opening fence), so a
documented command cannot rot. See docs/docs-tests.md.

What runs (by the fence's language):

- ``sh``, ``bash``, ``shell``: the block, as a script of ``bash -euo
  pipefail``; ``console``: its ``$ `` lines (the rest is output, not checked);
- ``c``, ``cpp``/``c++``: a complete program, compiled against the installed
  CMake package, linked and run; with ``compile`` (below), a fragment, linked
  but not run;
- ``python``: the block, by the venv's Python.

Other blocks (``cmake``, ``text``, untagged: diagrams, grammars, wire
formats) are not run.

Every block runs in its own empty directory outside the checkout, with a
timeout (BLOCK_TIMEOUT), in the environment of a user who installed both
halves: the venv's ``bin`` first on ``PATH`` (``mlbridge``, ``mlbridge-aot``)
and the CMake package of ``build/`` installed into a temporary prefix
(``cmake --install``), found through ``MLBRIDGE_PREFIX`` (``mlbridge
config``), ``PKG_CONFIG_PATH`` and ``CMAKE_PREFIX_PATH``; no other
``MLBRIDGE_*`` variable. A shell block must leave no process running (a
server it starts in the background must end: ``--max-requests``,
``--sessions``, ``kill``, ``wait``); what is still running 10 s after the
script ends is killed and fails the block. A block also fails when its
output has a line the plugin prints when it falls back to LLVM's advice
(``mlbridge inline advisor: ...``: the documented runner did not work) or an
``mlbridge`` warning (FORBIDDEN). Output is shown on failure.

Directives: HTML comments on the lines right before a block's fence (several
may be stacked; a directive anywhere else is an error)::

    <!-- docs-test: skip: REASON -->     not run: setup itself, minutes of work,
                                          placeholders; the reason is mandatory
    <!-- docs-test: setup: NAME... -->   inputs the block reads, made in its
                                          directory first: a file of
                                          tests/docs_fixtures/, or one of GENERATED
    <!-- docs-test: compile -->          a C/C++ fragment: its #include and
                                          `using namespace` lines at file scope,
                                          the rest the body of a void function;
                                          compiled and linked, not run

Define what a block uses in the docs themselves (``P=$(mlbridge config
--plugin)``, the policy file a command serves): a block must work when a
reader pastes it into a shell that has the inputs it names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "docs_fixtures"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV_BIN = (
    ROOT / ".venv" / "bin" if (ROOT / ".venv" / "bin").is_dir() else Path(sys.executable).parent
)
PYTHON = VENV_BIN / "python" if (VENV_BIN / "python").exists() else Path(sys.executable)

#: Seconds a block (or a program it builds) may run.
BLOCK_TIMEOUT = 120
#: Seconds a background process of a shell block may outlive the script.
GRACE = 10
#: Output lines that fail a block that otherwise succeeded: the plugin fell
#: back to LLVM's advice (the documented runner did not work) or an mlbridge
#: command warned (e.g. a compilation that asked nothing).
FORBIDDEN = re.compile(
    r"^(mlbridge inline advisor: .*|mlbridge[\w-]*( \w+)?: warning: .*)$", re.MULTILINE
)

LANGUAGES = {
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
    "console": "console",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "cxx": "cpp",
    "python": "python",
    "py": "python",
}
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<text>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")


@dataclass
class Block:
    """A fenced block of a document."""

    doc: Path
    line: int  # of the opening fence, 1-based
    lang: str  # the fence's language tag, lower case ("" when untagged)
    code: str
    directives: List[Tuple[int, str]] = field(default_factory=list)  # (line, text)

    @property
    def where(self) -> str:
        return self.where_of(self.line)

    def where_of(self, line: int) -> str:
        return f"{self.doc.relative_to(ROOT)}:{line}"

    @property
    def kind(self) -> Optional[str]:
        return LANGUAGES.get(self.lang)


def parse_doc(doc: Path) -> Tuple[List[Block], List[str]]:
    """The fenced blocks of ``doc`` with their directives, and the problems
    found (a directive not right before a fence)."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: List[Block] = []
    problems: List[str] = []
    pending: List[Tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = DIRECTIVE.match(line)
        opening = FENCE.match(line)
        if directive:
            pending.append((i + 1, directive.group("text")))
        elif opening:
            indent, fence = len(opening.group("indent")), opening.group("fence")
            body: List[str] = []
            j = i + 1
            while j < len(lines):
                stripped = lines[j].strip()
                if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                    break
                body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
                j += 1
            blocks.append(
                Block(doc, i + 1, opening.group("info").lower(), "\n".join(body) + "\n", pending)
            )
            pending = []
            i = j
        else:
            if "<!-- docs-test" in line:
                problems.append(
                    f"{doc.relative_to(ROOT)}:{i + 1}: a docs-test directive "
                    f"must be a whole line <!-- docs-test: ... -->"
                )
            for at, text in pending:
                problems.append(
                    f"{doc.relative_to(ROOT)}:{at}: directive '{text}' is not "
                    f"on the lines right before a fence"
                )
            pending = []
        i += 1
    for at, text in pending:
        problems.append(f"{doc.relative_to(ROOT)}:{at}: directive '{text}' is followed by no fence")
    return blocks, problems


def all_blocks() -> Tuple[List[Block], List[str]]:
    blocks: List[Block] = []
    problems: List[str] = []
    for doc in DOCS:
        found, wrong = parse_doc(doc)
        blocks += found
        problems += wrong
    return blocks, problems


BLOCKS, STRAY = all_blocks()


# --- directives ---------------------------------------------------------------


@dataclass
class Plan:
    """What the directives of a block say."""

    skip: Optional[str] = None
    setup: List[str] = field(default_factory=list)
    fragment: bool = False


def plan_of(block: Block) -> Plan:
    """The block's directives, checked; pytest.fail on an invalid one."""
    plan = Plan()
    for line, text in block.directives:
        name, _, arg = text.partition(":")
        name, arg = name.strip(), arg.strip()
        if name == "skip":
            if not arg:
                pytest.fail(
                    f"{block.where_of(line)}: 'skip' needs a reason: "
                    f"<!-- docs-test: skip: REASON -->"
                )
            plan.skip = arg
        elif name == "setup":
            if not arg:
                pytest.fail(f"{block.where_of(line)}: 'setup' needs input names")
            plan.setup += arg.split()
        elif name == "compile" and not arg:
            if block.kind not in ("c", "cpp"):
                pytest.fail(
                    f"{block.where_of(line)}: 'compile' is for c and cpp blocks, not '{block.lang}'"
                )
            plan.fragment = True
        else:
            pytest.fail(
                f"{block.where_of(line)}: unknown directive '{text}' "
                f"(skip: REASON, setup: NAME..., compile)"
            )
    return plan


# --- the environment: both halves installed -------------------------------------


def _build_dir() -> Path:
    return Path(os.environ.get("MLBRIDGE_BUILD_DIR") or ROOT / "build")


@pytest.fixture(scope="session")
def prefix(tmp_path_factory) -> Path:
    """The CMake package of the build tree, installed into a temporary prefix."""
    build = _build_dir()
    if not (build / "cmake_install.cmake").is_file():
        pytest.fail(f"no CMake build tree at {build} (scripts/setup makes build/)")
    where = tmp_path_factory.mktemp("prefix")
    done = subprocess.run(
        ["cmake", "--install", str(build), "--prefix", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"cmake --install {build} failed:\n{done.stdout}{done.stderr}")
    return where


@pytest.fixture(scope="session")
def block_env(prefix: Path) -> Dict[str, str]:
    """The environment of every block: a user who installed both halves."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLBRIDGE_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', os.defpath)}"
    env["MLBRIDGE_PREFIX"] = str(prefix)
    pkg = [str(prefix / "lib" / "pkgconfig")] + [
        p for p in env.get("PKG_CONFIG_PATH", "").split(os.pathsep) if p
    ]
    env["PKG_CONFIG_PATH"] = os.pathsep.join(pkg)
    env["CMAKE_PREFIX_PATH"] = os.pathsep.join(
        [str(prefix)] + [p for p in env.get("CMAKE_PREFIX_PATH", "").split(os.pathsep) if p]
    )
    env.pop("PYTHONPATH", None)
    return env


# --- inputs (setup: NAME) -------------------------------------------------------


@dataclass
class Inputs:
    """What the setup of a block adds besides files: sources and include
    directories for a C/C++ block, context managers around the run."""

    sources: List[Path] = field(default_factory=list)
    include_dirs: List[Path] = field(default_factory=list)
    around: List[Callable[[], contextlib.AbstractContextManager]] = field(default_factory=list)


def _run(
    command: List[str],
    cwd: Path,
    env: Optional[Dict[str, str]] = None,
    timeout: float = BLOCK_TIMEOUT,
) -> None:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )


def _inline_rule_model(path: Path) -> None:
    """An inlining policy as ONNX (the one of tests/llvm's LLVM rule, on
    another feature): inline iff callee_users <= 1, i.e. argmax of
    [c - 1.5, 1.5 - c]. Input ``callee_users`` (MLGO's inliner feature, int64
    [1]), output ``inlining_decision`` (int64 [1])."""
    import numpy as np

    from onnx import TensorProto, helper, numpy_helper, save

    nodes = [
        helper.make_node("Cast", ["callee_users"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["c", "threshold"], ["shifted"]),
        helper.make_node("Neg", ["shifted"], ["negated"]),
        helper.make_node("Concat", ["shifted", "negated"], ["pair"], axis=0),
        helper.make_node("Reshape", ["pair", "row"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["inlining_decision"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "inline_policy",
        [helper.make_tensor_value_info("callee_users", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.INT64, [1])],
        [
            numpy_helper.from_array(np.float32(1.5), "threshold"),
            numpy_helper.from_array(np.asarray([1, 2], np.int64), "row"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(path))


def _dense_model(path: Path, inputs: int, outputs: int, batch) -> None:
    """x [batch, inputs] -> Relu(x W + b) [batch, outputs], random weights;
    ``batch`` may be a name (a dynamic axis, as PyTorch exports it)."""
    import numpy as np

    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["pre"]),
            helper.make_node("Relu", ["pre"], ["y"]),
        ],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, inputs])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, outputs])],
        [
            numpy_helper.from_array(rng.standard_normal((inputs, outputs), np.float32), "w"),
            numpy_helper.from_array(rng.standard_normal(outputs, np.float32), "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(path))


class Generated:
    """The inputs the test makes (GENERATED), once per session."""

    def __init__(self, cache: Path, env: Dict[str, str]):
        self.cache, self.env = cache, env
        self.made: Dict[str, Path] = {}

    def file(self, name: str) -> Path:
        """The generated file ``name`` (made on first use)."""
        if name not in self.made:
            target = self.cache / name / name  # a directory each
            target.parent.mkdir(parents=True)
            GENERATED[name][1](self, target)
            self.made[name] = target
        return self.made[name]

    # Makers: (self, target path).
    def in_ll(self, target: Path) -> None:
        raw = target.with_suffix(".raw.ll")
        _run(
            [
                "clang-19",
                "-Oz",
                "-Xclang",
                "-disable-llvm-passes",
                "-S",
                "-emit-llvm",
                str(FIXTURES / "prog.c"),
                "-o",
                str(raw),
            ],
            self.cache,
        )
        _run(
            [
                "opt-19",
                "-passes=function(sroa,early-cse,instcombine,simplifycfg)",
                str(raw),
                "-S",
                "-o",
                str(target),
            ],
            self.cache,
        )

    def policy_onnx(self, target: Path) -> None:
        pytest.importorskip("onnx")
        _inline_rule_model(target)

    def aot_module(self, target: Path) -> None:
        """policy.onnx as a loadable AOT module, as docs/aot.md builds one."""
        work = target.parent
        shutil.copy(self.file("policy.onnx"), work / "policy.onnx")
        _run(
            ["mlbridge-aot", "policy.onnx", "-o", "gen/", "--class", "InlinePolicy"], work, self.env
        )
        _run(
            [
                "c++",
                "-std=c++17",
                "-O3",
                "-ffp-contract=fast",
                "-fPIC",
                "-shared",
                "-fvisibility=hidden",
                "-DMLBRIDGE_AOT_ENTRY_POINT",
                "gen/InlinePolicy.cpp",
                "-o",
                str(target),
            ],
            work,
            self.env,
        )

    def torch_export_onnx(self, target: Path) -> None:
        pytest.importorskip("onnx")
        _dense_model(target, 64, 8, "batch")

    def big_onnx(self, target: Path) -> None:
        pytest.importorskip("onnx")
        _dense_model(target, 256, 256, 1)  # 256 KiB of weights: a weights file

    def inliner_policy_h(self, target: Path) -> None:
        """policy.onnx compiled by mlbridge-aot as docs/aot.md's class."""
        work = target.parent
        shutil.copy(self.file("policy.onnx"), work / "policy.onnx")
        _run(
            [
                "mlbridge-aot",
                "policy.onnx",
                "-o",
                str(work),
                "--class",
                "InlinerPolicy",
                "--namespace",
                "my::models",
            ],
            work,
            self.env,
        )


#: Inputs the test makes: name -> (what it is, maker).
GENERATED: Dict[str, Tuple[str, Callable[[Generated, Path], None]]] = {
    "in.ll": (
        (
            "LLVM IR of prog.c: clang-19 -Oz without LLVM's passes, then SROA "
            "(values in registers, no call inlined)"
        ),
        Generated.in_ll,
    ),
    "policy.onnx": ("an inlining policy: callee_users -> inlining_decision", Generated.policy_onnx),
    "policy.so": ("policy.onnx as a loadable AOT module", Generated.aot_module),
    "inline_policy.so": ("policy.onnx as a loadable AOT module", Generated.aot_module),
    "torch_export.onnx": (
        "a dense layer with a dynamic batch axis: x [batch, 64]",
        Generated.torch_export_onnx,
    ),
    "big.onnx": ("a dense layer with 256 KiB of weights", Generated.big_onnx),
    "InlinerPolicy.h": (
        (
            "policy.onnx compiled by mlbridge-aot --class InlinerPolicy "
            "--namespace my::models (the header, with its source linked in)"
        ),
        Generated.inliner_policy_h,
    ),
}


@pytest.fixture(scope="session")
def generated(tmp_path_factory, block_env) -> Generated:
    return Generated(tmp_path_factory.mktemp("generated"), block_env)


def provide(names: List[str], work: Path, generated: Generated) -> Inputs:
    """Makes the inputs ``names`` in ``work``."""
    inputs = Inputs()
    for name in names:
        key, _, arg = name.partition("=")
        if key == "pipe-compiler" and arg:
            inputs.around.append(lambda base=arg: pipe_compiler(base))
        elif name in GENERATED:
            made = generated.file(name)
            shutil.copy(made, work / name)
            if name == "InlinerPolicy.h":
                inputs.include_dirs.append(made.parent)
                inputs.sources.append(made.parent / "InlinerPolicy.cpp")
        elif (FIXTURES / name).is_file():
            shutil.copy(FIXTURES / name, work / name)
        else:
            pytest.fail(
                f"setup: unknown input '{name}' (files of {FIXTURES.relative_to(ROOT)}: "
                f"{', '.join(sorted(p.name for p in FIXTURES.iterdir()))}; generated: "
                f"{', '.join(GENERATED)}; pipe-compiler=BASE)"
            )
    return inputs


# --- pipe-compiler=BASE: a compiler on a fixed channel path ---------------------

#: The README's compiler: these features, one int64 advice, in LLVM's protocol.
PIPE_FEATURES = [
    {"name": "callee_users", "type": "int64_t", "port": 0, "shape": [1]},
    {"name": "weights", "type": "float", "port": 0, "shape": [1, 2]},
]
PIPE_ADVICE = {"name": "inlining_decision", "type": "int64_t", "port": 0, "shape": [1]}
PIPE_OBSERVATIONS = 3


@contextlib.contextmanager
def pipe_compiler(base: str) -> Iterator[None]:
    """A compiler (a thread speaking LLVM's mlgo protocol, PIPE_FEATURES) that
    waits for the FIFOs ``BASE.in``/``BASE.out`` a documented host creates,
    asks PIPE_OBSERVATIONS decisions and closes the channel. A fixed path is
    shared by every run on the machine: a lock file serialises the blocks
    using one, and FIFOs left there by an interrupted run are removed."""
    lock_path = Path(tempfile.gettempdir()) / "mlbridge-docs-test.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for end in (base + ".in", base + ".out"):
            with contextlib.suppress(OSError):
                if Path(end).is_fifo():
                    os.unlink(end)
        outcome: Dict[str, object] = {}
        stop = threading.Event()
        thread = threading.Thread(
            target=_compile_over_pipes, args=(base, outcome, stop), daemon=True
        )
        thread.start()
        try:
            yield
            thread.join(GRACE)
            if thread.is_alive():
                outcome.setdefault(
                    "error",
                    "the compiler was still waiting when the "
                    "block ended (did the host open the channel?)",
                )
            if "error" in outcome:
                pytest.fail(f"pipe-compiler={base}: {outcome['error']}", pytrace=False)
        finally:
            stop.set()  # never let the thread open a later run's channel
            thread.join(GRACE)


def _compile_over_pipes(base: str, outcome: Dict[str, object], stop: threading.Event) -> None:
    deadline = time.monotonic() + BLOCK_TIMEOUT
    inp = out = -1
    try:
        while inp < 0 or out < 0:  # LLVM's order: BASE.in for reading, then BASE.out
            if stop.is_set() or time.monotonic() > deadline:
                raise TimeoutError(f"no host opened {base}.in/.out")
            try:
                if inp < 0 and Path(base + ".in").is_fifo() and Path(base + ".out").is_fifo():
                    inp = os.open(base + ".in", os.O_RDONLY | os.O_NONBLOCK)
                if inp >= 0:
                    out = os.open(base + ".out", os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader on BASE.out yet
                pass
            if inp < 0 or out < 0:
                time.sleep(0.05)
        os.set_blocking(out, True)
        header = {"features": PIPE_FEATURES, "advice": PIPE_ADVICE}
        os.write(
            out,
            json.dumps(header, separators=(",", ":")).encode() + b"\n" + b'{"context":"docs"}\n',
        )
        replies = []
        for i in range(PIPE_OBSERVATIONS):
            os.write(
                out,
                b'{"observation":%d}\n' % i
                + struct.pack("<q", i)
                + struct.pack("<2f", 0.5, -1.0)
                + b"\n",
            )
            reply = b""
            while len(reply) < 8:
                ready, _, _ = select.select([inp], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(inp, 8 - len(reply)) if ready else b""
                if not chunk:
                    raise EOFError(f"the host sent {len(reply)} of 8 reply bytes")
                reply += chunk
            replies.append(struct.unpack("<q", reply)[0])
        outcome["replies"] = replies
    except Exception as err:  # noqa: BLE001 - reported by the block
        outcome["error"] = f"{type(err).__name__}: {err}"
    finally:
        for fd in (out, inp):
            if fd >= 0:
                os.close(fd)


# --- running blocks -------------------------------------------------------------


def _group(pgid: int) -> List[str]:
    """The live (not zombie) processes of process group ``pgid``: 'PID ARGS'."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            state, _ppid, group = stat[stat.rindex(")") + 2 :].split()[:3]
            if int(group) != pgid or state == "Z":
                continue
            args = (
                (proc / "cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
                .strip()
            )
        except (OSError, ValueError):
            continue
        found.append(f"{proc.name} {args}")
    return found


def run_process(command: List[str], work: Path, env: Dict[str, str], log: Path, what: str) -> None:
    """Runs ``command`` in its own process group with BLOCK_TIMEOUT; fails the
    test (with the output) on a non-zero exit, a timeout, or processes of the
    group still running GRACE seconds after it ended."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        problem = None
        try:
            code = proc.wait(BLOCK_TIMEOUT)
            if code != 0:
                problem = f"{what} exited with status {code}"
        except subprocess.TimeoutExpired:
            problem = f"{what} did not end within {BLOCK_TIMEOUT} s"
        left: List[str] = []
        end = time.monotonic() + (GRACE if problem is None else 0)
        while True:
            left = _group(proc.pid)
            if not left or time.monotonic() >= end:
                break
            time.sleep(0.1)
        if left:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            problem = problem or (
                f"{what} left processes running (a server must end: "
                f"--sessions, --max-requests, kill, wait):\n  " + "\n  ".join(left)
            )
    output = log.read_text(errors="replace")
    forbidden = FORBIDDEN.search(output)
    if forbidden and not problem:
        problem = f"{what} printed: {forbidden.group(0)}"
    if problem:
        pytest.fail(f"{problem}\n--- output ---\n{output[-20000:]}", pytrace=False)


def console_commands(code: str) -> str:
    """The commands of a console transcript: its '$ ' lines (with their
    backslash continuations)."""
    commands: List[str] = []
    continued = False
    for line in code.splitlines():
        if continued:
            commands.append(line)
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continued = line.endswith("\\")
    return "\n".join(commands) + "\n"


def fragment_source(block: Block) -> str:
    """A C/C++ fragment as a translation unit: #include and `using namespace`
    lines at file scope, the rest the body of a function; #line directives
    point compiler messages at the document."""
    doc = str(block.doc.relative_to(ROOT))
    head: List[str] = []
    body: List[str] = []
    for offset, line in enumerate(block.code.splitlines(), start=block.line + 1):
        if line.startswith("#include") or re.match(r"\s*using namespace [\w:]+;\s*$", line):
            head += [f'#line {offset} "{doc}"', line]
            body.append("")
        else:
            body.append(line)
    return (
        "\n".join(head) + "\n\nvoid mlbridge_docs_fragment(void);\n"
        f'void mlbridge_docs_fragment(void) {{\n#line {block.line + 1} "{doc}"\n'
        + "\n".join(body)
        + "\n}\n\nint main(void) { return 0; }\n"
    )


def _pkg_config(args: List[str], env: Dict[str, str]) -> List[str]:
    done = subprocess.run(
        ["pkg-config", *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"pkg-config {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.split()


def build_command(
    block: Block, source: Path, exe: Path, prefix: Path, env: Dict[str, str], inputs: Inputs
) -> List[str]:
    """The compiler command of a C/C++ block against the installed package:
    pkg-config's mlbridge / mlbridge-c, plus the component libraries the
    block's #includes call for."""
    text = block.code
    lib = prefix / "lib"
    flags = [f"-I{d}" for d in inputs.include_dirs]
    if block.kind == "c":
        return [
            "cc",
            "-std=c99",
            "-Werror=implicit-function-declaration",
            *flags,
            str(source),
            *map(str, inputs.sources),
            "-o",
            str(exe),
            *_pkg_config(["--cflags", "--libs", "mlbridge-c"], env),
            f"-Wl,-rpath,{lib}",
        ]
    libs: List[str] = []
    system: List[str] = []
    if re.search(r"mlbridge/(Grpc\w*|UserProtoRunner)\.h", text):
        libs.append("-lmlbridge_grpc")
        system += _pkg_config(["--libs", "grpc++", "protobuf"], env)
    if re.search(r"mlbridge/Onnx\w*\.h", text):
        libs += [
            "-lmlbridge_onnx",
            f"-L{lib / 'mlbridge'}",
            "-l:libonnxruntime.so.1",
            f"-Wl,-rpath,{lib / 'mlbridge'}",
        ]
    if re.search(r"mlbridge/Torch\w*\.h", text):
        # Debian's libtorch-dev, where Torch's CMake package finds it.
        libs += ["-lmlbridge_torch", "-ltorch", "-ltorch_cpu", "-lc10"]
    return [
        "c++",
        "-std=c++17",
        *flags,
        str(source),
        *map(str, inputs.sources),
        "-o",
        str(exe),
        *_pkg_config(["--cflags", "mlbridge"], env),
        f"-L{lib}",
        *libs,
        *_pkg_config(["--libs", "mlbridge"], env),
        *system,
    ]


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind], ids=lambda b: b.where)
@pytest.mark.slow
def test_block(block: Block, tmp_path: Path, request) -> None:
    plan = plan_of(block)
    if plan.skip:
        pytest.skip(plan.skip)
    prefix: Path = request.getfixturevalue("prefix")
    env: Dict[str, str] = request.getfixturevalue("block_env")
    work = tmp_path / "work"
    work.mkdir()
    inputs = provide(plan.setup, work, request.getfixturevalue("generated"))
    log = tmp_path / "output.txt"
    with contextlib.ExitStack() as stack:
        for make in inputs.around:
            stack.enter_context(make())
        if block.kind in ("shell", "console"):
            script = tmp_path / "block.sh"
            script.write_text(
                console_commands(block.code) if block.kind == "console" else block.code
            )
            run_process(
                ["bash", "-euo", "pipefail", str(script)],
                work,
                env,
                log,
                f"the block ({block.where})",
            )
        elif block.kind == "python":
            script = tmp_path / "block.py"
            script.write_text(block.code)
            run_process([str(PYTHON), str(script)], work, env, log, f"the block ({block.where})")
        else:
            source = tmp_path / ("block.c" if block.kind == "c" else "block.cpp")
            source.write_text(
                fragment_source(block)
                if plan.fragment
                else f'#line {block.line + 1} "{block.doc.relative_to(ROOT)}"\n' + block.code
            )
            exe = tmp_path / "block"
            command = build_command(block, source, exe, prefix, env, inputs)
            run_process(command, work, env, log, f"building the block ({block.where})")
            if not plan.fragment:
                run_process([str(exe)], work, env, log, f"the program ({block.where})")


def test_directives_are_attached() -> None:
    """Every docs-test directive is a whole comment line right before a fence."""
    assert not STRAY, "\n".join(STRAY)


def test_directives_only_on_blocks_that_run() -> None:
    """A directive on a block that never runs (cmake, untagged) is a mistake."""
    wrong = [
        f"{b.where}: directives on a '{b.lang or 'untagged'}' block, which is not run"
        for b in BLOCKS
        if b.directives and not b.kind
    ]
    assert not wrong, "\n".join(wrong)


def test_docs_have_blocks_that_run() -> None:
    """The collection itself works (a broken parser would pass every doc)."""
    kinds = {b.kind for b in BLOCKS}
    assert {"shell", "cpp", "c"} <= kinds, kinds
