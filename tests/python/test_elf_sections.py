"""Object sizes read from the ELF section headers (mlbridge.llvm.elf, and
mlbridge.llvm.outcomes' section_sizes, text_size, allocated_bytes and
code_bytes on it): the same figures as LLVM's own reader on real objects of
several targets; a section or group name that a tool would print over
several lines (forging rows of its table) is only a key; malformed headers
are ElfError, never another exception."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Dict, Tuple

import pytest

from mlbridge.llvm.elf import MAX_SECTIONS, SHF_ALLOC, ElfError, parse_elf, read_elf
from mlbridge.llvm.outcomes import (
    OutcomeError,
    allocated_bytes,
    code_bytes,
    section_sizes,
    text_size,
)

needs_llvm = pytest.mark.skipif(
    not (shutil.which("clang-19") and shutil.which("llvm-readobj-19")),
    reason="needs clang-19 and llvm-readobj-19",
)

#: A module whose internal function sits in a section named so that
#: ``llvm-size -A`` prints a ``.text`` row of its choosing.
FORGED_SECTION = """
target triple = "x86_64-pc-linux-gnu"

define internal i32 @g(i32 %x) noinline section "x\\0A.text DIGITS 0\\0A" {
  %y = mul i32 %x, 7
  ret i32 %y
}

define i32 @f(i32 %x) {
  %a = call i32 @g(i32 %x)
  %b = add i32 %a, 1
  ret i32 %b
}
"""

#: A COMDAT group whose signature would forge the rows of
#: ``llvm-readelf --section-groups``, and ordinary code beside it.
FORGED_GROUP = """
target triple = "x86_64-pc-linux-gnu"

$"sig\\0A   [ 2]   .text\\0A" = comdat any

define linkonce_odr i32 @"sig\\0A   [ 2]   .text\\0A"(i32 %x) noinline comdat {
  %y = mul i32 %x, 7
  ret i32 %y
}

define i32 @f(i32 %x) {
  %a = call i32 @"sig\\0A   [ 2]   .text\\0A"(i32 %x)
  %b = add i32 %a, 1
  ret i32 %b
}

@data = global [100 x i32] [i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10,
  i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10]
@zeros = global [64 x i32] zeroinitializer
"""

C_SOURCE = """
static int g(int x) { return x * 7; }
__attribute__((noinline)) int h(int y) { return g(y) + 1; }
int data[100] = {1};
int bss[50];
int f(int z) { return h(z) + data[z] + bss[z]; }
"""


def _compile(tmp_path: Path, name: str, text: str, *flags: str) -> Path:
    suffix = ".ll" if "target triple" in text else ".c"
    source = tmp_path / f"{name}{suffix}"
    source.write_text(text)
    obj = tmp_path / f"{name}.o"
    subprocess.run(["clang-19", *flags, "-c", str(source), "-o", str(obj)], check=True)
    return obj


def _readobj(obj: Path) -> Tuple[Dict[str, int], int, int]:
    """(name -> summed size, allocated bytes, code bytes) by llvm-readobj's
    JSON output, LLVM's own reader (names escaped in JSON)."""
    done = subprocess.run(
        ["llvm-readobj-19", "--elf-output-style=JSON", "--section-headers", str(obj)],
        capture_output=True,
        text=True,
        check=True,
    )
    sizes: Dict[str, int] = {}
    allocated = code = 0
    for entry in json.loads(done.stdout)[0]["Sections"]:
        section = entry["Section"]
        name, size = section["Name"]["Name"], section["Size"]
        if section["Index"] == 0:
            continue
        sizes[name] = sizes.get(name, 0) + size
        if any(f["Name"] == "SHF_ALLOC" for f in section["Flags"]["Flags"]):
            allocated += size
        if any(f["Name"] == "SHF_EXECINSTR" for f in section["Flags"]["Flags"]):
            code += size
    return sizes, allocated, code


@needs_llvm
@pytest.mark.parametrize("digits", ["999999999", "9" * 5000])
def test_a_section_name_forges_no_size(tmp_path, digits):
    obj = _compile(tmp_path, "forged", FORGED_SECTION.replace("DIGITS", digits), "-Oz")
    sizes, allocated, code = _readobj(obj)
    forged = f"x\n.text {digits} 0\n"
    assert sizes[forged] > 0  # the function is there, in its oddly named section
    # llvm-size -A printed a ".text 999999999" row (the reward became 1.0);
    # 5000 digits raised ValueError. The name is now only a key, and g's
    # code counts as code whatever its section's name:
    assert text_size(str(obj)) == code == sizes[".text"] + sizes[forged] < 100
    assert section_sizes(str(obj)) == sizes
    assert allocated_bytes(str(obj)) == allocated == code
    assert code_bytes(str(obj)).own == code and code_bytes(str(obj)).comdat == {}


@needs_llvm
def test_a_group_signature_forges_no_group(tmp_path):
    obj = _compile(tmp_path, "group", FORGED_GROUP, "-O1", "-ffunction-sections")
    sizes, allocated, code = _readobj(obj)
    split = code_bytes(str(obj))
    signature = "sig\n   [ 2]   .text\n"
    assert split.comdat == {signature: sizes[f".text.{signature}"]}
    assert split.own == sizes[".text.f"] > 0 and split.total == code == text_size(str(obj))
    assert allocated_bytes(str(obj)) == allocated >= 400 + 256  # .data and .bss counted
    elf = read_elf(obj)
    group = [s for s in elf.sections if s.name == ".group"]
    assert len(group) == 1 and not group[0].flags & SHF_ALLOC


@needs_llvm
@pytest.mark.parametrize(
    "target",
    [
        "x86_64-linux-gnu",
        "i686-linux-gnu",  # ELF32
        "powerpc64-linux-gnu",  # big-endian
        "mips-linux-gnu",  # ELF32, big-endian
        "aarch64-linux-gnu",
    ],
)
def test_every_size_is_llvms_own(tmp_path, target):
    obj = _compile(tmp_path, "t", C_SOURCE, f"--target={target}", "-O2", "-ffunction-sections")
    sizes, allocated, code = _readobj(obj)
    assert section_sizes(str(obj)) == sizes
    assert allocated_bytes(str(obj)) == allocated > code == text_size(str(obj)) > 0
    assert code_bytes(str(obj)).own == code


# -- malformed headers ---------------------------------------------------------


def _object(tmp_path: Path) -> bytes:
    return _compile(tmp_path, "group", FORGED_GROUP, "-O1", "-ffunction-sections").read_bytes()


def _edit(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _section(data: bytes, index: int) -> int:
    """Offset of section header ``index`` of a 64-bit little-endian object."""
    return struct.unpack_from("<Q", data, 0x28)[0] + 64 * index


def _index(data: bytes, name: str) -> int:
    return next(s.index for s in parse_elf(data).sections if s.name == name)


@needs_llvm
def test_malformed_headers_are_elf_errors(tmp_path):
    data = _object(tmp_path)
    group = _index(data, ".group")
    cases = {
        "bad magic": b"\x7fELG" + data[4:],
        "unknown ELF class": data[:4] + b"\x03" + data[5:],
        "data encoding": data[:5] + b"\x07" + data[6:],
        "section header size": _edit(data, 0x3A, "<H", 40),
        "section header table": _edit(data, 0x28, "<Q", len(data) - 10),
        "limit": _edit(_edit(data, 0x3C, "<H", 0), _section(data, 0) + 0x20, "<Q", 1 << 40),
        "the section name table": _edit(data, 0x3E, "<H", 0),
        "reserved": _edit(data, 0x3E, "<H", 0xFF05),
        "extends past the end": _edit(data, _section(data, 1) + 0x20, "<Q", 1 << 62),
        "outside its string table": _edit(data, _section(data, 1), "<I", 1 << 30),
        "lists section 0": _edit(data, parse_elf(data).sections[group - 1].offset + 4, "<I", 0),
        "outside its symbol table": _edit(data, _section(data, group) + 0x2C, "<I", 1 << 20),
        "symbol table": _edit(data, _section(data, group) + 0x28, "<I", group),
    }
    for match, bad in cases.items():
        with pytest.raises(ElfError, match=match):
            parse_elf(bad)
    # every truncation is refused cleanly (the headers are at the end)
    for length in range(0, len(data), 7):
        with pytest.raises(ElfError):
            parse_elf(data[:length])
    # a section in two groups
    table = _section(data, 0)
    end = table + 64 * (len(parse_elf(data).sections) + 1)
    copy = bytearray(data[:end]) + data[_section(data, group) :][:64]
    struct.pack_into("<H", copy, 0x3C, len(parse_elf(data).sections) + 2)
    with pytest.raises(ElfError, match="two section groups"):
        parse_elf(bytes(copy))


def test_the_section_count_is_bounded_before_anything_is_read():
    header = bytearray(64)
    header[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<Q", header, 0x28, 64)  # e_shoff: the table follows
    struct.pack_into("<HHH", header, 0x3A, 64, 0, 0)  # e_shnum 0: extended numbering
    null = struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, MAX_SECTIONS + 1, 0, 0, 0, 0)
    with pytest.raises(ElfError, match=f"limit {MAX_SECTIONS}"):
        parse_elf(bytes(header) + null)
    # no section header table at all: no sections
    assert parse_elf(bytes(header[:0x28]) + bytes(24)).sections == ()


def test_only_regular_files_are_read(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ElfError, match="not a regular file"):
        read_elf(fifo)  # returns at once: opened without blocking
    with pytest.raises(OutcomeError, match="not a regular file"):
        text_size(str(tmp_path))
    with pytest.raises(OutcomeError, match="cannot open"):
        section_sizes(str(tmp_path / "missing.o"))
    (tmp_path / "empty.o").write_bytes(b"")
    with pytest.raises(OutcomeError, match="outside the file"):
        code_bytes(str(tmp_path / "empty.o"))


def _synthetic(names: bytes, name_offsets: range) -> bytes:
    """A 64-bit little-endian object: section 1 the name table ``names``,
    then an empty section named at each of ``name_offsets``."""
    header = bytearray(64)
    header[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<Q", header, 0x28, 64 + len(names))
    struct.pack_into("<HHH", header, 0x3A, 64, 2 + len(name_offsets), 1)
    table = [bytes(64), struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, 64, len(names), 0, 0, 1, 0)]
    table += [struct.pack("<IIQQQQIIQQ", o, 1, 6, 0, 64, 0, 0, 0, 1, 0) for o in name_offsets]
    return bytes(header) + names + b"".join(table)


def test_overlapping_names_are_read_once_and_within_the_budget(monkeypatch):
    import mlbridge.llvm.elf as elf

    # 5000 names, each a suffix of the next: 12.5 million characters of names
    # from a table of 5 KB, its bytes scanned once
    data = _synthetic(b"\0" + b"a" * 5000 + b"\0", range(1, 5001))
    sections = parse_elf(data).sections
    assert [len(s.name) for s in sections[1:]] == list(range(5000, 0, -1))
    monkeypatch.setattr(elf, "MAX_TABLE_BYTES", 1_000_000)
    with pytest.raises(ElfError, match="over 1000000 bytes of names"):
        parse_elf(data)
    with pytest.raises(ElfError, match="over 1000000 bytes of tables"):
        parse_elf(_synthetic(b"\0" + b"a" * 1_000_000 + b"\0", range(1, 2)))
    with pytest.raises(ElfError, match="not terminated"):
        parse_elf(_synthetic(b"\0" + b"a" * 10, range(1, 5)))
