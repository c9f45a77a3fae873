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
noted: list[str] = []


def note(why: str) -> None:
    """One line, once: a failed compile also fails the copy that follows it."""
    if not noted:
        noted.append(why)
        print(NOTE.format(why), file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install: the module is a speed-up, not a need."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all, and the like
            note(f"{type(e).__name__}: {e}")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # a compile error, missing Python.h, ...
            note(f"{type(e).__name__}: {e}")


def extensions() -> list[Extension]:
    if not sys.platform.startswith("linux"):
        note("it needs Linux's epoll")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        note("Cython is not installed")
        return []
    ext = Extension("loadcmp.load._cloop", ["loadcmp/load/_cloop.pyx"], include_dirs=["loadcmp/load"],
                    depends=["loadcmp/load/_chttp.h", "loadcmp/load/_cnet.h", "loadcmp/load/_csys.pxd",
                             "loadcmp/load/_cloop.pxd"], extra_compile_args=["-O2"])
    return list(cythonize([ext], build_dir="build/cython", quiet=True))


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
