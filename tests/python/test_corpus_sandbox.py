"""Recipes and corpus builds as an attacker would use them (docs/security.md):
a shipped recipe's name cannot be taken over from the current directory,
archives cannot write outside their tree through chains of links, links
planted in the output directory redirect nothing, and a project's build
steps run unprivileged, in their own directories, without network and
within their limits (mlbridge.corpus.sandbox)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import tarfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from test_corpus_recipe import _archive, _project, _recipe, needs_tools

from mlbridge.corpus.builder import MANIFEST, build_corpus
from mlbridge.corpus.recipe import read_recipe, shipped_recipes
from mlbridge.corpus.sandbox import BuildLimits
from mlbridge.errors import CorpusError

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="checks the switch away from root")

LIB_C = b"int twice(int x) { return 2 * x; }\n"


def _make_project(directory: Path, name: str, rule: str, **variables: str) -> Dict:
    """A make project whose build compiles lib.c, then runs ``rule``."""
    makefile = f"all: lib.o\n\t{rule}\n%.o: %.c\n\t$(CC) -c -o $@ $<\n".encode()
    digest = _archive(directory / f"{name}.tar.gz", {"Makefile": makefile, "lib.c": LIB_C})
    args = [f"{key}={value}" for key, value in variables.items()]
    return _project(name, "make", digest, args=args)


def _build(directory: Path, projects: List[Dict], limits: Optional[BuildLimits] = None):
    recipe = read_recipe(str(_recipe(directory, projects)))
    out = directory / "out"
    return build_corpus(recipe, out, progress=False, limits=limits or BuildLimits()), out


# -- recipes by name ------------------------------------------------------------------


def test_a_file_in_the_current_directory_does_not_replace_a_shipped_recipe(tmp_path, monkeypatch):
    name = next(iter(shipped_recipes()))
    planted = {"format": 1, "name": "evil", "projects": [_project("evil", "make", "0" * 64)]}
    (tmp_path / name).write_text(json.dumps(planted))
    monkeypatch.chdir(tmp_path)
    recipe = read_recipe(name)
    assert recipe.path == shipped_recipes()[name].resolve()
    assert recipe.name != "evil"
    assert read_recipe(f"./{name}").name == "evil"  # the user's own, by its path


def test_a_bare_name_that_is_not_shipped_asks_for_a_path(tmp_path, monkeypatch):
    (tmp_path / "mine").write_text("{}")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CorpusError, match=r"not a shipped recipe.*\./mine"):
        read_recipe("mine")


# -- archives -------------------------------------------------------------------------


def _link_chain_archive(path: Path) -> str:
    """An archive whose links each look inside the tree, but which together
    lead out of it: ``l1 -> .``, then ``l1/l2 -> ..`` (the parent of the
    tree), then a file through both."""
    with tarfile.open(path, "w:gz") as tar:
        for name, target in (("l1", "."), ("l1/l2", "..")):
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
        data = b"written outside\n"
        info = tarfile.TarInfo("l1/l2/escaped.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_chain_of_links_in_an_archive_writes_nothing_outside_its_tree(tmp_path):
    digest = _link_chain_archive(tmp_path / "chain.tar.gz")
    project = _project("chain", "make", digest)
    report, out = _build(tmp_path, [project])
    assert "chain" in report.failed
    assert "cannot unpack" in report.failed["chain"]
    assert not list(tmp_path.rglob("escaped.txt"))


# -- the output directory -------------------------------------------------------------


def test_links_planted_in_the_output_directory_are_not_followed(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    lock_target = tmp_path / "made-by-lock"
    (out / ".lock").symlink_to(lock_target)
    recipe = read_recipe(str(_recipe(tmp_path, [_make_project(tmp_path, "p", "true")])))
    with pytest.raises(CorpusError, match="lock"):
        build_corpus(recipe, out, progress=False)
    assert not lock_target.exists()

    (out / ".lock").unlink()
    for name in (f"{MANIFEST}.tmp", f".{MANIFEST}.tmp"):
        (out / name).symlink_to(victim)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "projects").symlink_to(elsewhere)
    report = build_corpus(recipe, out, progress=False)
    assert "p" in report.failed and "not a directory" in report.failed["p"]
    assert victim.read_text() == "precious\n"
    assert not list(elsewhere.iterdir())
    assert json.loads((out / MANIFEST).read_text())["failed"].keys() == {"p"}


# -- the sandbox ----------------------------------------------------------------------


@needs_tools
@needs_root
def test_build_steps_run_unprivileged_and_the_corpus_is_handed_back(tmp_path):
    report, out = _build(tmp_path, [_make_project(tmp_path, "who", "id -u > uid.txt")])
    assert not report.failed, report.failed
    uid = (out / "projects" / "who" / "src" / "uid.txt").read_text().strip()
    assert uid != "0"
    owners = {p.lstat().st_uid for p in (out / "projects" / "who").rglob("*")}
    assert owners == {os.geteuid()}


@needs_tools
def test_build_steps_see_none_of_the_callers_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLBRIDGE_TEST_SECRET", "s3cret")
    report, out = _build(tmp_path, [_make_project(tmp_path, "env", "env > env.txt")])
    assert not report.failed, report.failed
    seen = (out / "projects" / "env" / "src" / "env.txt").read_text()
    assert "s3cret" not in seen and "CC=clang-19" in seen


@needs_tools
def test_a_build_writing_outside_its_directories_fails_and_writes_nothing(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    rule = "touch /tmp/mlbridge-sandbox-planted && touch ../planted; touch $(OUTSIDE)/planted"
    report, out = _build(tmp_path, [_make_project(tmp_path, "w", rule, OUTSIDE=str(outside))])
    assert "w" in report.failed
    assert "(log:" in report.failed["w"]
    assert not list(outside.iterdir())
    assert not Path("/tmp/mlbridge-sandbox-planted").exists()
    assert not (out / "projects" / "w" / "planted").exists()
    assert "planted" in (out / "projects" / "w" / "build.log").read_text()


def _listener() -> Tuple[socket.socket, List[bool]]:
    """A loopback TCP listener that records whether anyone connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    connected: List[bool] = []

    def accept() -> None:
        while not connected and server.fileno() >= 0:
            try:
                server.accept()[0].close()
                connected.append(True)
            except OSError:
                if server.fileno() < 0:
                    return

    threading.Thread(target=accept, daemon=True).start()
    return server, connected


@needs_tools
def test_a_build_reaching_the_network_fails(tmp_path):
    server, connected = _listener()
    port = server.getsockname()[1]
    rule = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', $(PORT)), 5)\""
    try:
        report, _ = _build(tmp_path, [_make_project(tmp_path, "net", rule, PORT=str(port))])
    finally:
        server.close()
    assert "net" in report.failed
    assert not connected


@needs_tools
@pytest.mark.slow
def test_a_build_past_its_time_limit_is_stopped(tmp_path):
    limits = BuildLimits(step_timeout_s=2.0)
    report, out = _build(
        tmp_path, [_make_project(tmp_path, "slow", "sleep 4 && touch woke")], limits
    )
    assert "no result after 2 s" in report.failed["slow"]
    time.sleep(4)  # what the step started is gone with it: nothing wakes up
    assert not (out / "projects" / "slow" / "src" / "woke").exists()


@needs_tools
def test_a_build_past_its_memory_limit_fails(tmp_path):
    # 4 GiB asked under a 2 GiB limit: bear's interceptor and its wrappers
    # (gRPC, which reserves much address space) need far less than 2 GiB,
    # while under 512 MiB they could fail before the build's command ran.
    rule = "python3 -c \"b = bytearray(4 << 30); open('ate', 'w').write('yes')\""
    limits = BuildLimits(memory_bytes=2 << 30)
    report, out = _build(tmp_path, [_make_project(tmp_path, "big", rule)], limits)
    assert "big" in report.failed
    assert "MemoryError" in (out / "projects" / "big" / "build.log").read_text()
    assert not (out / "projects" / "big" / "src" / "ate").exists()


def test_an_unknown_or_root_build_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root switches users")
    recipe = read_recipe(str(_recipe(tmp_path, [_make_project(tmp_path, "p", "true")])))
    for user, message in (("no-such-user-mlbridge", "no such user"), ("root", "is root")):
        with pytest.raises(CorpusError, match=message):
            build_corpus(
                recipe, tmp_path / "out", progress=False, limits=BuildLimits(build_user=user)
            )
        assert not (tmp_path / "out").exists()


def test_without_bubblewrap_nothing_is_built(tmp_path, monkeypatch):
    import mlbridge.corpus.sandbox as sandbox

    which = sandbox.shutil.which
    monkeypatch.setattr(
        sandbox.shutil, "which", lambda name: None if name == "bwrap" else which(name)
    )
    recipe = read_recipe(str(_recipe(tmp_path, [_make_project(tmp_path, "p", "true")])))
    with pytest.raises(CorpusError, match="apt-get install bubblewrap"):
        build_corpus(recipe, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
