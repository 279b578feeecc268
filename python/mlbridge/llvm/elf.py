"""The section header table of an ELF object file, read directly.

Object sizes are read from the section headers, never from a tool's text
output: a tool prints a section's name as the module spelled it (a newline
included), so a name could forge rows of that text (docs/security.md). Here
a name is only ever a key; the sizes, types and flags come from fixed-width
fields of the headers.

The reader takes 32- and 64-bit ELF of either byte order, with the extended
section numbering (``e_shnum == 0`` / ``e_shstrndx == SHN_XINDEX``). Every
count, offset and size is checked against the file before it is used; at
most :data:`MAX_SECTIONS` sections and :data:`MAX_TABLE_BYTES` of string
tables and section groups are read, and nothing else of the file; each byte
of a string table is scanned once: whatever the bytes, the result is an
:class:`ElfObject` or an :class:`ElfError`, in time and memory linear in the
file's size.
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Tuple

from mlbridge.errors import MlbridgeError

#: Most sections an object may have (a -ffunction-sections object of a large
#: C++ file has some 10^5).
MAX_SECTIONS = 1 << 20
#: Most bytes of an object's string tables and section groups read, and of
#: names taken from them (section names, COMDAT groups' signatures).
MAX_TABLE_BYTES = 256 << 20

SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_NOBITS = 8
SHT_GROUP = 17
#: ``sh_flags``: the section occupies memory when the program runs.
SHF_ALLOC = 0x2
#: ``sh_flags``: the section holds executable instructions.
SHF_EXECINSTR = 0x4
#: First word of a ``SHT_GROUP`` section: the group is a COMDAT group.
GRP_COMDAT = 0x1
SHN_UNDEF = 0
#: ``e_type`` of relocatable objects, executables and shared objects.
ET_REL = 1
ET_EXEC = 2
ET_DYN = 3
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
STT_SECTION = 3

_MAGIC = b"\x7fELF"
# e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize,
# e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx (after e_ident)
_HEADER = {1: "HHIIIIIHHHHHH", 2: "HHIQQQIHHHHHH"}
# sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info,
# sh_addralign, sh_entsize
_SECTION = {1: "IIIIIIIIII", 2: "IIQQQQIIQQ"}
# (st_name, st_info, st_shndx) of a symbol: 32-bit st_name, st_value,
# st_size, st_info, st_other, st_shndx; 64-bit st_name, st_info, st_other,
# st_shndx, st_value, st_size
_SYMBOL = {1: ("IIIBBH", 0, 3, 5), 2: ("IBBHQQ", 0, 1, 3)}


class ElfError(MlbridgeError):
    """The file is not an ELF object this reader can measure."""


@dataclass(frozen=True)
class Section:
    """One section header (``index`` 1 and up: the null section is left out)."""

    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int


@dataclass(frozen=True)
class ElfObject:
    """An object's sections, the COMDAT group of each grouped section, and
    its type (``e_type``)."""

    sections: Tuple[Section, ...]
    #: Section index -> signature of the COMDAT group holding it.
    comdat_of: Dict[int, str]
    #: ``e_type``: :data:`ET_REL` (an object), :data:`ET_EXEC` or
    #: :data:`ET_DYN` (an executable, PIE or not, or a shared library).
    type: int = 0


class _Reader:
    """Checked reads of an ELF image of ``size`` bytes through ``pread``."""

    def __init__(self, pread: Callable[[int, int], bytes], size: int) -> None:
        self.pread, self.size = pread, size
        # (sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, ...)
        self.headers: List[Tuple[int, ...]] = []
        self.names: List[str] = []
        self.bits, self.order = 2, "<"
        self.type = 0  # e_type
        self.contents_read = 0  # bytes of string tables and groups
        self.names_taken = 0  # bytes of names decoded

    def read(self, offset: int, length: int, what: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ElfError(
                f"{what} ({length} bytes at offset {offset}) lies outside the file "
                f"({self.size} bytes)"
            )
        data = self.pread(offset, length)
        if len(data) != length:
            raise ElfError(f"{what}: the file ended early (it changed while read)")
        return data

    def contents(self, index: int, what: str) -> bytes:
        """The bytes of section ``index``, within :data:`MAX_TABLE_BYTES`
        for all the sections read."""
        header = self.headers[index]
        if header[1] == SHT_NOBITS:
            raise ElfError(f"{what} (section {index}) has no contents")
        self.contents_read += header[5]
        if self.contents_read > MAX_TABLE_BYTES:
            raise ElfError(
                f"{what} (section {index}, {header[5]} bytes): over {MAX_TABLE_BYTES} bytes "
                f"of tables"
            )
        return self.read(header[4], header[5], f"{what} (section {index})")

    def section(self, index: int, kind: int, what: str) -> int:
        """``index``, checked to be a section of type ``kind``."""
        if index == SHN_UNDEF or index >= len(self.headers) or self.headers[index][1] != kind:
            raise ElfError(f"{what}: section {index} is not a section of type {kind}")
        return index

    def strings(self, table: bytes, offsets: Iterable[int], what: str) -> Dict[int, str]:
        """The NUL-terminated string at each of ``offsets`` of a string table.

        Read from the last offset down, each scan stopping where the string
        of the next offset up starts (whose end it then shares): every byte
        of the table is scanned once however the names overlap, and at most
        :data:`MAX_TABLE_BYTES` of names are taken in all."""
        out: Dict[int, str] = {}
        bound, bound_end = len(table), -1
        for offset in sorted(set(offsets), reverse=True):
            if offset >= len(table):
                raise ElfError(f"{what}: name offset {offset} is outside its string table")
            end = table.find(b"\0", offset, bound)
            if end < 0:
                if bound_end < 0:
                    raise ElfError(f"{what}: a name is not terminated in its string table")
                end = bound_end
            self.names_taken += end - offset
            if self.names_taken > MAX_TABLE_BYTES:
                raise ElfError(f"{what}: over {MAX_TABLE_BYTES} bytes of names")
            # A name is only a key: any bytes give a valid str (invalid UTF-8 escaped).
            out[offset] = table[offset:end].decode("utf-8", "backslashreplace")
            bound, bound_end = offset, end
        return out

    def parse(self) -> ElfObject:
        ident = self.read(0, 16, "the ELF identification")
        if ident[:4] != _MAGIC:
            raise ElfError("not an ELF file (bad magic)")
        if ident[4] not in _HEADER:
            raise ElfError(f"unknown ELF class {ident[4]}")
        if ident[5] not in (1, 2):
            raise ElfError(f"unknown ELF data encoding {ident[5]}")
        self.bits, self.order = ident[4], "<" if ident[5] == 1 else ">"
        layout = struct.Struct(self.order + _HEADER[self.bits])
        fields = layout.unpack(self.read(16, layout.size, "the ELF header"))
        self.type = fields[0]
        shoff, shentsize, shnum, shstrndx = fields[5], fields[10], fields[11], fields[12]
        if shoff == 0:
            if shnum != 0:
                raise ElfError(f"{shnum} sections but no section header table")
            return ElfObject((), {}, self.type)
        entry = struct.Struct(self.order + _SECTION[self.bits])
        if shentsize != entry.size:
            raise ElfError(f"section header size {shentsize} (expected {entry.size})")
        null = entry.unpack(self.read(shoff, entry.size, "the section header table"))
        if shnum == 0:  # extended numbering: the count is in the null section
            shnum = null[5]
        if shstrndx == SHN_XINDEX:
            shstrndx = null[6]
        elif shstrndx >= SHN_LORESERVE:
            raise ElfError(f"reserved section name table index {shstrndx:#x}")
        if shnum > MAX_SECTIONS:
            raise ElfError(f"{shnum} sections (limit {MAX_SECTIONS})")
        table = self.read(shoff, shnum * entry.size, "the section header table")
        self.headers = list(entry.iter_unpack(table))
        for index, header in enumerate(self.headers[1:], 1):
            if header[1] != SHT_NOBITS and header[4] + header[5] > self.size:
                raise ElfError(
                    f"section {index} ({header[5]} bytes at offset {header[4]}) "
                    f"extends past the end of the file ({self.size} bytes)"
                )
        if len(self.headers) <= 1:
            return ElfObject((), {}, self.type)
        names = self.strings(
            self.contents(
                self.section(shstrndx, SHT_STRTAB, "the section name table"), "the section names"
            ),
            (h[0] for h in self.headers[1:]),
            "a section's name",
        )
        self.names = [""] + [names[h[0]] for h in self.headers[1:]]
        sections = tuple(
            Section(index, self.names[index], h[1], h[2], h[4], h[5], h[6], h[7])
            for index, h in enumerate(self.headers[1:], 1)
        )
        return ElfObject(sections, self.groups(sections), self.type)

    def groups(self, sections: Tuple[Section, ...]) -> Dict[int, str]:
        """Each section of a COMDAT group -> the group's signature."""
        members_of: Dict[int, List[int]] = {}
        # (string table, name offset) of a symbol's name, or (0, section) of
        # a section symbol's
        signature_of: Dict[int, Tuple[int, int]] = {}
        words_left = 2 * len(self.headers)  # a flag word per group, a section once
        for group in sections:
            if group.type != SHT_GROUP:
                continue
            if group.size // 4 > words_left:
                raise ElfError(f"section group {group.index}: more members than sections")
            words = self.contents(group.index, "a section group")
            if not words or len(words) % 4 != 0:
                raise ElfError(f"section group {group.index} has {len(words)} bytes")
            words_left -= len(words) // 4
            flags, *members = struct.unpack(f"{self.order}{len(words) // 4}I", words)
            if flags & GRP_COMDAT:
                members_of[group.index] = members
                signature_of[group.index] = self.signature(group)
        strings: Dict[int, Dict[int, str]] = {}
        for strtab in sorted({table for table, _ in signature_of.values() if table}):
            offsets = [offset for table, offset in signature_of.values() if table == strtab]
            text = self.contents(strtab, "a symbol string table")
            strings[strtab] = self.strings(text, offsets, "a section group's signature")
        comdat_of: Dict[int, str] = {}
        for index, members in members_of.items():
            table, at = signature_of[index]
            signature = strings[table][at] if table else self.names[at]
            for member in members:
                if member == SHN_UNDEF or member >= len(self.headers) or member == index:
                    raise ElfError(f"section group {index} lists section {member}")
                if member in comdat_of:
                    raise ElfError(f"section {member} is in two section groups")
                comdat_of[member] = signature
        return comdat_of

    def signature(self, group: Section) -> Tuple[int, int]:
        """Where the group's signature is: (string table, offset) of the name
        of symbol ``sh_info`` of the symbol table ``sh_link``, or (0, section)
        for a section symbol (its section's name)."""
        what = f"section group {group.index}"
        symtab = self.headers[self.section(group.link, SHT_SYMTAB, f"{what}'s symbol table")]
        layout, name_at, info_at, shndx_at = _SYMBOL[self.bits]
        symbol = struct.Struct(self.order + layout)
        if group.info >= symtab[5] // symbol.size:
            raise ElfError(f"{what}: symbol {group.info} is outside its symbol table")
        fields = symbol.unpack(
            self.read(symtab[4] + group.info * symbol.size, symbol.size, f"{what}'s symbol")
        )
        if fields[info_at] & 0xF == STT_SECTION:
            shndx = fields[shndx_at]
            if shndx == SHN_UNDEF or shndx >= min(len(self.headers), SHN_LORESERVE):
                raise ElfError(f"{what}: its signature is the section symbol of {shndx}")
            return 0, shndx
        return self.section(symtab[6], SHT_STRTAB, f"{what}'s string table"), fields[name_at]


def parse_elf(data: bytes) -> ElfObject:
    """The sections of the ELF image ``data`` (raises :class:`ElfError`)."""
    view = memoryview(data)
    return _Reader(lambda offset, length: bytes(view[offset : offset + length]), len(data)).parse()


def read_elf(path: "os.PathLike[str] | str") -> ElfObject:
    """The sections of the ELF object file ``path``: a regular file, of
    which only the headers and string tables are read (raises
    :class:`ElfError`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as err:
        raise ElfError(f"cannot open {path}: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ElfError("not a regular file")

        def pread(offset: int, length: int) -> bytes:
            parts: List[bytes] = []
            while length > 0:
                part = os.pread(fd, length, offset)
                if not part:
                    break
                parts.append(part)
                offset, length = offset + len(part), length - len(part)
            return b"".join(parts)

        return _Reader(pread, info.st_size).parse()
    except ElfError as err:
        raise ElfError(f"{path}: {err}") from None
    except OSError as err:
        raise ElfError(f"cannot read {path}: {err.strerror or err}") from None
    finally:
        os.close(fd)
