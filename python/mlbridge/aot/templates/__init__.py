"""The C++ text of generated models, as template files shipped with the package.

Every fixed block of generated code lives in a ``*.in`` file of this
directory; the code generator (:mod:`mlbridge.aot.render`,
:mod:`mlbridge.aot.runfn`, :mod:`mlbridge.aot.weights`) only fills them and
formats the per-tensor rows (table entries, name lookups, constant arrays):

========================  ====================================================
``abi_v1.h.in``           the C ABI block (:data:`AOT_ABI_V1`)
``model.h.in``            the generated header
``model.cpp.in``          the generated source
``accessor.h.in``         one ``arg_feed_<name>_data()``-style accessor
``run.cpp.in``            the run functions: step tables and CPU dispatch
``step.cpp.in``           one step of the run function
``step_table.cpp.in``     the step table and run function of one instruction set
``step_wrapper.cpp.in``   one step compiled for one instruction set
``weights.cpp.in``        the declarations of a weights file's symbols
``weights_check.cpp.in``  the constructor's check of the weights file
``weights_asm.cpp.in``    the ``asm`` block pulling the weights file in
========================  ====================================================

A placeholder is ``@name@`` (lower-case letters, digits, ``_``), a spelling C++
never uses, so the C++ needs no escaping. Filling is strict: every
placeholder needs a value and every value a placeholder. Values are inserted
verbatim, in one pass (a value is never scanned for placeholders). Every
model-provided string reaches these templates through
:func:`mlbridge.aot.cxx.comment`, :func:`~mlbridge.aot.cxx.string_literal` or
:func:`~mlbridge.aot.cxx.unique_identifier` only.

Each file ends with a newline. :func:`fill` keeps it (whole files, blocks
followed by more text); :func:`snippet` drops it (pieces the caller joins or
embeds in a line of its own).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Tuple, Union

#: A placeholder in a template file.
PLACEHOLDER = re.compile(r"@([a-z][a-z0-9_]*)@")

Value = Union[str, int]


class TemplateError(RuntimeError):
    """A template and its values do not match (a bug of mlbridge-aot)."""


@functools.lru_cache(maxsize=None)
def _load(name: str) -> Tuple[str, frozenset]:
    """The text of template ``name`` and the names of its placeholders."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    if not text.endswith("\n"):
        raise TemplateError(f"template {name} does not end with a newline")
    return text, frozenset(PLACEHOLDER.findall(text))


def text(name: str) -> str:
    """The content of template ``name`` as it is (for a template without placeholders)."""
    return fill(name)


def fill(name: str, **values: Value) -> str:
    """Template ``name`` with each ``@key@`` replaced by ``values[key]``."""
    template, names = _load(name)
    missing = sorted(names - values.keys())
    unused = sorted(values.keys() - names)
    if missing or unused:
        raise TemplateError(f"template {name}: no value for {missing}, no placeholder for {unused}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def snippet(name: str, **values: Value) -> str:
    """:func:`fill` without the final newline."""
    return fill(name, **values)[:-1]


#: The C ABI of generated models (version 1). include/mlbridge/AotAbi.h
#: carries the same block (the C++ and C APIs include it);
#: tests/python/test_aot.py checks that the two are identical.
AOT_ABI_V1 = text("abi_v1.h.in")


__all__ = ["AOT_ABI_V1", "PLACEHOLDER", "TemplateError", "fill", "snippet", "text"]
