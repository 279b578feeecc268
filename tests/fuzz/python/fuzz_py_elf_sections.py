"""atheris target: the ELF section reader that measures objects
(mlbridge.llvm.elf; section_sizes, text_size, allocated_bytes and code_bytes
of mlbridge.llvm.outcomes on it).

The input is an object file: parsed from bytes (``parse_elf``) and read from
a memfd through its path (``read_elf``, with ``pread``), which must agree;
then measured through the path as the environments measure. Nothing but
MlbridgeError may escape; an object that parses gives sizes that add up
(every size a uint64, code and allocated bytes at most all bytes, the
COMDAT split summing to the code). Seeds: tests/fuzz/corpus/fuzz_py_elf_sections
(small objects of clang-19: x86-64, i686, ppc64 and mips big-endian, COMDAT
groups, forged section and group names).
"""

from __future__ import annotations

import os

import atheris
import fuzz_support  # first: imports mlbridge instrumented

with atheris.instrument_imports(include=["mlbridge"]):
    from mlbridge.errors import MlbridgeError
    from mlbridge.llvm.elf import ElfError, parse_elf, read_elf
    from mlbridge.llvm.outcomes import allocated_bytes, code_bytes, section_sizes, text_size

_U64 = 1 << 64


def test_one_input(data: bytes) -> None:
    """Parse ``data`` twice and measure it."""
    try:
        parsed = parse_elf(data)
    except ElfError as err:
        parsed, error = None, str(err)
    fd = os.memfd_create("fuzz-elf", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        path = f"/proc/self/fd/{fd}"
        try:
            read = read_elf(path)
        except ElfError as err:
            if parsed is not None or not str(err).endswith(error):
                raise AssertionError(f"read_elf: {err}; parse_elf: {parsed or error}") from None
            return
        if read != parsed:
            raise AssertionError(f"read_elf gave {read}, parse_elf {parsed or error}")
        try:
            sizes = section_sizes(path)
            code, allocated, split = text_size(path), allocated_bytes(path), code_bytes(path)
        except MlbridgeError as err:
            raise AssertionError(f"an object that parses is not measured: {err}") from None
    finally:
        os.close(fd)
    total = sum(s.size for s in read.sections)
    if any(not 0 <= s.size < _U64 for s in read.sections):
        raise AssertionError("a section size outside uint64")
    if sum(sizes.values()) != sum(s.size for s in read.sections if s.name):
        raise AssertionError("section_sizes lost a section")
    if not (0 <= code <= total and 0 <= allocated <= total and split.total == code):
        raise AssertionError(f"code {code}, allocated {allocated}, split {split}, all {total}")
    if any(index < 1 or index > len(read.sections) for index in read.comdat_of):
        raise AssertionError(f"a group member outside the sections: {read.comdat_of}")


if __name__ == "__main__":
    fuzz_support.main(test_one_input)
