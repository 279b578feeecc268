"""atheris target: a plugin's description (mlbridge.plugin_description.
parse_description, on the input's bytes).

Nothing but CodecError may escape; a description read has its keys and
types, no option twice, integer options with bounds, and writes back as JSON
that reads back to the same description. Seeds:
tests/fuzz/corpus/fuzz_py_plugin_description (the golden lines of
tests/golden/plugin_description.json).
"""

from __future__ import annotations

import json

import atheris
import fuzz_support  # first: imports mlbridge instrumented

with atheris.instrument_imports(include=["mlbridge"]):
    from mlbridge.errors import CodecError
    from mlbridge.plugin_description import KINDS, parse_description


def test_one_input(data: bytes) -> None:
    """Read ``data`` as a description."""
    try:
        description = parse_description(data, "input")
    except CodecError:
        return
    keys = [option.key for option in description.options]
    if len(set(keys)) != len(keys) or not description.tool:
        raise AssertionError(f"options {keys}, tool {description.tool!r}")
    for option in description.options:
        bounded = option.minimum is not None and option.maximum is not None
        if option.kind not in KINDS or bounded != (option.kind == "integer"):
            raise AssertionError(f"option {option}")
    again = parse_description(json.dumps(description.to_json()).encode(), "again")
    if again != description:
        raise AssertionError("the description does not read back")


if __name__ == "__main__":
    fuzz_support.main(test_one_input)
