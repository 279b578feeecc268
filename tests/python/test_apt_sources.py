"""The deb-src entries ``mlbridge corpus build --install-build-deps`` makes
from APT's deb entries (mlbridge.corpus.apt_sources), on APT directories of
a test's own: deb822 and one-line lists, entries already there, disabled
stanzas, and a machine with nothing to make them from."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from mlbridge.corpus.apt_sources import (
    ADDED,
    deb_src_lines,
    deb_src_stanzas,
    enable_deb_src,
    has_deb_src,
)
from mlbridge.errors import CorpusError

#: A fresh Debian 12 machine's list (this project's machines have it).
DEBIAN_SOURCES = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def apt_dir(root: Path, files: Dict[str, str]) -> Path:
    apt = root / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (apt / name).write_text(text)
    return apt


def test_each_deb_stanza_becomes_the_same_archive_as_deb_src() -> None:
    made = deb_src_stanzas(DEBIAN_SOURCES)
    assert len(made) == 2
    assert made[0] == (
        "Types: deb-src\nURIs: http://deb.debian.org/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    assert "debian-security" in made[1] and made[1].startswith("Types: deb-src\n")
    disabled = "Types: deb\nEnabled: no\nURIs: http://x/\nSuites: s\nComponents: main\n"
    assert deb_src_stanzas(disabled) == []
    both = "types: deb deb-src\nURIs: http://x/\nSuites: s\nComponents: main\n"
    assert deb_src_stanzas(both)[0].startswith("Types: deb-src\n")


def test_each_deb_line_becomes_a_deb_src_line() -> None:
    text = (
        "# a comment\ndeb http://deb.debian.org/debian bookworm main contrib\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://x/ s main # trailing\n"
        "deb-src http://y/ s main\n\n"
    )
    assert deb_src_lines(text) == [
        "deb-src http://deb.debian.org/debian bookworm main contrib",
        "deb-src [arch=amd64 signed-by=/k.gpg] http://x/ s main",
    ]


def test_a_machine_without_deb_src_gets_it_once(tmp_path: Path) -> None:
    apt = apt_dir(
        tmp_path,
        {
            "sources.list.d/debian.sources": DEBIAN_SOURCES,
            "sources.list": "deb http://old/ bookworm main\n",
        },
    )
    assert not has_deb_src(apt)
    log = tmp_path / "deps.log"
    marker = tmp_path / "updated"
    written = enable_deb_src(log, apt, update=("touch", str(marker)))
    assert [p.name for p in written] == list(ADDED)
    assert marker.exists() and "touch" in log.read_text()
    stanzas = (apt / "sources.list.d" / ADDED[1]).read_text()
    assert stanzas.count("Types: deb-src\n") == 2 and "Types: deb\n" not in stanzas
    assert "deb-src http://old/ bookworm main" in (apt / "sources.list.d" / ADDED[0]).read_text()
    assert has_deb_src(apt)
    marker.unlink()
    assert enable_deb_src(log, apt, update=("touch", str(marker))) == []  # idempotent
    assert not marker.exists()


def test_existing_deb_src_is_left_alone_unless_disabled(tmp_path: Path) -> None:
    with_src = apt_dir(tmp_path / "a", {"sources.list": "deb-src http://x/ s main\n"})
    assert has_deb_src(with_src)
    assert enable_deb_src(tmp_path / "a.log", with_src, update=("false",)) == []
    disabled = DEBIAN_SOURCES.replace("Types: deb\n", "Types: deb-src\nEnabled: no\n", 1)
    off = apt_dir(tmp_path / "b", {"sources.list.d/d.sources": disabled})
    assert not has_deb_src(off)


def test_nothing_to_make_it_from_and_a_failed_update_are_errors(tmp_path: Path) -> None:
    empty = apt_dir(tmp_path / "a", {})
    with pytest.raises(CorpusError, match="no deb entry"):
        enable_deb_src(tmp_path / "a.log", empty, update=("true",))
    apt = apt_dir(tmp_path / "b", {"sources.list.d/debian.sources": DEBIAN_SOURCES})
    with pytest.raises(CorpusError, match="updating APT"):
        enable_deb_src(tmp_path / "b.log", apt, update=("false",))
    assert not has_deb_src(apt) and not any((apt / "sources.list.d" / n).exists() for n in ADDED)
