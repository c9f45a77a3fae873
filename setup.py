"""Builds the one compiled module, the fast engine's closed loop without keep-alive
(loadcmp/load/_cloop.pyx); everything else about the package is in pyproject.toml.

The module is optional: without a C compiler, the Python headers, Cython or Linux's
epoll, the install goes on without it (one line says so) and loadcmp runs the
pure-Python loop (loadcmp/load/rawclient.py) instead.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NOTE = "loadcmp: the compiled fast path was not built ({}); the pure-Python loop will run instead"


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install: the module is a speed-up, not a need."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all, and the like
            print(NOTE.format(f"{type(e).__name__}: {e}"), file=sys.stderr)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # a compile error, missing Python.h, ...
            print(NOTE.format(f"{type(e).__name__}: {e}"), file=sys.stderr)


def extensions() -> list[Extension]:
    if not sys.platform.startswith("linux"):
        print(NOTE.format("it needs Linux's epoll"), file=sys.stderr)
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print(NOTE.format("Cython is not installed"), file=sys.stderr)
        return []
    ext = Extension("loadcmp.load._cloop", ["loadcmp/load/_cloop.pyx"], include_dirs=["loadcmp/load"],
                    depends=["loadcmp/load/_chttp.h"], extra_compile_args=["-O2"])
    return list(cythonize([ext], build_dir="build/cython", quiet=True))


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
