"""Builds the compiled modules: the fast engine's closed loop (loadcmp/load/_cloop.pyx)
and what it records of each request (_ctally.pyx); everything else about the package is
in pyproject.toml.

The modules are optional: without a C compiler, the Python headers, Cython or Linux's
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
    here = "loadcmp/load/"
    tally = [here + f for f in ("_ctally.h", "_ctally.pxd")]
    exts = [
        Extension("loadcmp.load._ctally", [here + "_ctally.pyx"], include_dirs=[here], depends=tally,
                  extra_compile_args=["-O2"]),
        Extension("loadcmp.load._cloop", [here + "_cloop.pyx"], include_dirs=[here],
                  depends=[here + f for f in ("_chttp.h", "_cnet.h", "_csys.pxd", "_cloop.pxd")] + tally,
                  extra_compile_args=["-O2"]),
    ]
    return list(cythonize(exts, build_dir="build/cython", quiet=True))


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
