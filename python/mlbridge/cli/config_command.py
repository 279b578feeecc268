"""``mlbridge config``: where the native half is (docs/python-package.md)."""

from __future__ import annotations

import argparse
from typing import Any

from mlbridge.cli_errors import ENVIRONMENT, USAGE, fail
from mlbridge.llvm.versions import add_llvm_argument

#: The command's name and its group in ``mlbridge --help``.
NAME = "config"
GROUP = "setup"


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge config`` to the subcommands ``sub``."""
    from mlbridge.native import CONFIG_FIELDS

    config = sub.add_parser(
        "config",
        help="where the native half is (the CMake package: "
        "plugin, libraries, headers), like llvm-config",
        description="Print where mlbridge's native half is: "
        "$MLBRIDGE_PREFIX, $MLBRIDGE_BUILD_DIR, this Python's prefix, "
        "pkg-config, /usr/local, /usr (docs/python-package.md). "
        "Several options: one answer a line, in their order.",
    )
    for field, what in CONFIG_FIELDS.items():
        config.add_argument(
            f"--{field.replace('_', '-')}",
            dest="fields",
            action="append_const",
            const=field,
            help=f"print {what}",
        )
    config.add_argument("--json", action="store_true", help="print everything as JSON")
    config.add_argument(
        "--describe",
        choices=("plugin", "gcc-plugin", "mlir-plugin"),
        help="print the plugin's description (options, features, answers; "
        "docs/plugin-description.md), as the plugin itself gives it",
    )
    config.add_argument(
        "--model",
        metavar="NAME",
        help="print the ONNX file of a model mlbridge ships (inlining-size, pipeline-size: "
        "docs/models.md)",
    )
    config.add_argument(
        "--aot",
        action="store_true",
        help="with --model: print its AOT-compiled module in the CMake package instead "
        "(for the plugins' aot runner)",
    )
    add_llvm_argument(config, "whose LLVM parts to answer (default: the newest installed)")


def _describe(args: argparse.Namespace) -> int:
    import json

    from mlbridge.errors import MlbridgeError
    from mlbridge.native import NativeError
    from mlbridge.plugin_description import describe_installed

    if args.json or args.fields or args.model:
        fail("--describe prints one description: give it alone (with --llvm)", USAGE)
    try:
        description = describe_installed(args.describe.replace("-", "_"), llvm=args.llvm)
    except NativeError as err:
        fail(str(err), ENVIRONMENT)
    except MlbridgeError as err:
        fail(str(err))
    print(json.dumps(description.to_json(), indent=2))
    return 0


def run(args: argparse.Namespace) -> int:
    from mlbridge.native import NativeError, config_text

    if args.json and args.fields:
        fail("--json prints everything: give it alone", USAGE)
    if args.aot and not args.model:
        fail("--aot is for --model NAME", USAGE)
    if args.describe:
        return _describe(args)
    if args.model:
        from mlbridge.errors import MlbridgeError
        from mlbridge.models import model_path

        if args.json or args.fields:
            fail("--model prints one path: give it alone (with --aot)", USAGE)
        try:
            print(model_path(args.model, aot=args.aot))
        except MlbridgeError as err:
            fail(str(err), ENVIRONMENT)
        return 0
    try:
        print(config_text(args.fields or [], as_json=args.json, llvm=args.llvm))
    except NativeError as err:
        fail(str(err), ENVIRONMENT)
    return 0
