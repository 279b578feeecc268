"""The ``deb-src`` entries that ``apt-get source`` and ``apt-get build-dep``
need, found among the machine's APT sources or made from its ``deb``
entries (``mlbridge corpus build --install-build-deps``, as root).

A Debian machine lists its archives in ``/etc/apt/sources.list`` and
``/etc/apt/sources.list.d/*.list`` (one entry per line: ``deb [options]
URI SUITE COMPONENT...``) and ``*.sources`` (deb822 stanzas with ``Types:
deb``). A fresh Debian 12 machine has only ``deb`` entries; the source
entries are the same archives with the type ``deb-src``. They are written
to files of their own, ``mlbridge-deb-src.list`` and
``mlbridge-deb-src.sources``, so removing those undoes it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from mlbridge.corpus.files import read_capped
from mlbridge.corpus.steps import run_step
from mlbridge.errors import CorpusError

#: Where APT reads its configuration.
APT = Path("/etc/apt")
#: The files :func:`enable_deb_src` writes, in ``sources.list.d``.
ADDED = ("mlbridge-deb-src.list", "mlbridge-deb-src.sources")
UPDATE_TIMEOUT_S = 600.0
#: Largest source list read.
MAX_LIST_BYTES = 1 << 20
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):(.*)$")


def source_files(apt: Path = APT) -> List[Path]:
    """APT's source lists: ``sources.list``, then ``sources.list.d``'s
    ``*.list`` and ``*.sources`` in name order."""
    found = [apt / "sources.list"] if (apt / "sources.list").is_file() else []
    listed = apt / "sources.list.d"
    if listed.is_dir():
        found += sorted(p for p in listed.iterdir() if p.suffix in (".list", ".sources"))
    return [p for p in found if p.is_file()]


def _one_line_entries(text: str) -> List[Tuple[str, str]]:
    """(type, rest) of each entry of a one-line-style list."""
    entries = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split(None, 1)
        if len(words) == 2:
            entries.append((words[0], words[1].strip()))
    return entries


def _stanzas(text: str) -> List[List[str]]:
    """The stanzas of a deb822 file, each as its lines (comments dropped)."""
    stanzas: List[List[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanzas[-1]:
                stanzas.append([])
            continue
        stanzas[-1].append(line)
    return [s for s in stanzas if s]


def _field(stanza: Sequence[str], name: str) -> Optional[str]:
    for line in stanza:
        match = _FIELD.match(line)
        if match and match.group(1).lower() == name.lower():
            return match.group(2).strip()
    return None


def _enabled(stanza: Sequence[str]) -> bool:
    return (_field(stanza, "Enabled") or "yes").lower() != "no"


def _types(stanza: Sequence[str]) -> List[str]:
    return (_field(stanza, "Types") or "").split()


def _read_lists(apt: Path) -> List[Tuple[Path, str]]:
    """Each of :func:`source_files` with its text (at most MAX_LIST_BYTES)."""
    return [
        (path, read_capped(path, MAX_LIST_BYTES).decode("utf-8", "replace"))
        for path in source_files(apt)
    ]


def _any_deb_src(lists: Sequence[Tuple[Path, str]]) -> bool:
    for path, text in lists:
        if path.suffix == ".list":
            if any(kind == "deb-src" for kind, _ in _one_line_entries(text)):
                return True
        elif any("deb-src" in _types(s) and _enabled(s) for s in _stanzas(text)):
            return True
    return False


def has_deb_src(apt: Path = APT) -> bool:
    """Whether an enabled ``deb-src`` entry is among APT's sources."""
    return _any_deb_src(_read_lists(apt))


def deb_src_lines(text: str) -> List[str]:
    """A ``deb-src`` line for each ``deb`` entry of a one-line-style list."""
    return [f"deb-src {rest}" for kind, rest in _one_line_entries(text) if kind == "deb"]


def deb_src_stanzas(text: str) -> List[str]:
    """A ``deb-src`` stanza for each enabled deb822 stanza of type ``deb``:
    the same archive, suites, components and key."""
    made = []
    for stanza in _stanzas(text):
        if "deb" in _types(stanza) and _enabled(stanza):
            lines = []
            for line in stanza:
                match = _FIELD.match(line)
                lines.append(
                    "Types: deb-src" if match and match.group(1).lower() == "types" else line
                )
            made.append("\n".join(lines) + "\n")
    return made


def enable_deb_src(
    log: Path, apt: Path = APT, update: Sequence[str] = ("apt-get", "update")
) -> List[Path]:
    """Unless APT already has a ``deb-src`` entry, writes one for each of
    its ``deb`` entries (:data:`ADDED`) and runs ``update``; the files
    written (none when there was one already). CorpusError when APT has no
    ``deb`` entry to make one from, or when the update fails (the files
    written are then removed)."""
    lists = _read_lists(apt)
    if _any_deb_src(lists):
        return []
    lines: List[str] = []
    stanzas: List[str] = []
    for path, text in lists:
        if path.name in ADDED:
            continue
        if path.suffix == ".list":
            lines += deb_src_lines(text)
        else:
            stanzas += deb_src_stanzas(text)
    if not lines and not stanzas:
        raise CorpusError(f"{apt}: no deb entry to make a deb-src entry from (docs/corpus.md)")
    written = []
    header = (
        "# Written by mlbridge corpus build --install-build-deps: the deb entries as deb-src.\n"
    )
    for name, body in zip(ADDED, ("\n".join(lines), "\n".join(stanzas))):
        if body:
            path = apt / "sources.list.d" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header + body + ("" if body.endswith("\n") else "\n"), "utf-8")
            written.append(path)
    try:
        run_step(
            update, log.parent, log, "updating APT's package lists for deb-src", UPDATE_TIMEOUT_S
        )
    except CorpusError:
        for path in written:  # else the next run would find them and not update
            path.unlink()
        raise
    return written
