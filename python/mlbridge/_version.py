"""The version of mlbridge: the one place it is written.

The Python distribution (python/pyproject.toml, ``dynamic = ["version"]``) and
the CMake project (a regex on the line below) both read it: keep the form
``__version__ = "X.Y.Z"``.
"""

__version__ = "0.2.0"
