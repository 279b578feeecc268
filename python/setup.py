"""Build hooks of the mlbridge-compiler distribution (metadata: pyproject.toml).

The protobuf and gRPC modules ``mlbridge.v1.*`` are generated from ../proto by
build_proto.py (shared with tools/gen_proto.py) with the grpcio-tools that
[build-system] pins:

- a wheel (``pip install python/``, ``pip wheel python/``, ``python -m build``)
  gets them in its build directory;
- an sdist carries them, so that a wheel built from it needs no ../proto;
- an editable install (``pip install -e python/``) writes them into the source
  tree (python/mlbridge/v1/, gitignored), as tools/gen_proto.py does.

Built from an sdist (no ../proto), the modules it carries are used as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_proto  # noqa: E402


def _generate(out_root: Path) -> None:
    """Generate the modules into ``out_root`` (exits the build on failure)."""
    try:
        build_proto.generate(out_root, log=lambda path: print(f"generated {path}"))
    except build_proto.ProtoError as err:
        sys.exit(f"mlbridge-compiler: cannot generate mlbridge.v1: {err}")


class BuildPy(build_py):
    """build_py, then the generated modules (see the module docstring)."""

    def run(self) -> None:
        super().run()
        if build_proto.have_proto_sources():
            _generate(HERE if self.editable_mode else Path(self.build_lib))
        elif not build_proto.have_generated(HERE):
            sys.exit(
                f"mlbridge-compiler: neither {build_proto.PROTO_ROOT} nor generated "
                "mlbridge/v1 modules: build from a source checkout or an sdist"
            )


class Sdist(sdist):
    """sdist carrying the generated modules."""

    def make_release_tree(self, base_dir: str, files: list) -> None:
        super().make_release_tree(base_dir, files)
        if build_proto.have_proto_sources():
            _generate(Path(base_dir))


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
