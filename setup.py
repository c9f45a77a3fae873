"""Builds the compiled modules: the fast engine's closed loop (loadcmp/load/_cloop.pyx),
what it records of each request (_ctally.pyx), its https (_ctls.pyx, OpenSSL from C), and the h2
engine (_ch2conn.pyx and _ch2.pyx, libnghttp2 from C), all on one base (_cbase.pyx);
everything else about the package is in pyproject.toml.

The modules are optional: without a C compiler, the Python headers, Cython or Linux's
epoll, the install goes on without it (one line says so) and loadcmp runs the
pure-Python loop (loadcmp/load/rawclient.py) instead. Without OpenSSL's headers
(Debian's libssl-dev) only _ctls is left out (one line says so): https runs the pure-Python loop.
Without nghttp2's (libnghttp2-dev), or OpenSSL's, the h2 engine is left out: h2 runs the `h2` package.

It also puts what loadcmp reads from the project root (configs/ and the Dockerfiles, kept at
the top of the repository) into the wheel, as loadcmp/_data; MANIFEST.in puts them in the sdist.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

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
        except Exception as e:  # noqa: BLE001 - no compiler at all, and the like
            note(f"{type(e).__name__}: {e}")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001 - a compile error, missing Python.h, ...
            note(f"{type(e).__name__}: {e}")


PROJECT_DATA = ("configs", "Dockerfile.apache", "Dockerfile.nginx")
"""What loadcmp.lab.stacks.project_root() must hold: stacks, pages, experiments, the Dockerfiles."""


class BuildPyWithData(build_py):
    """build_py that also copies PROJECT_DATA into loadcmp/_data, byte for byte and with its modes:
    the image tag hashes the Dockerfile, the pages and entrypoint.sh (its executable bit too), so an
    installed loadcmp finds the images a checkout built. An editable install reads the checkout."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib, "loadcmp", "_data")
        shutil.rmtree(dest, ignore_errors=True)  # nothing left over from an earlier build
        dest.mkdir(parents=True)
        for name in PROJECT_DATA:  # a missing one fails the build: a wheel without it would not run
            if Path(name).is_dir():
                shutil.copytree(name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))
            else:
                shutil.copy2(name, dest / name)


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
    base = [here + f for f in ("_cbase.pxd", "_csys.pxd", "_cnet.h")] + tally
    cloop = [here + f for f in ("_cloop.pxd", "_chttp.h")] + base
    tls = [here + f for f in ("_cssl.pxd", "_ctls.h")]
    exts = [
        Extension("loadcmp.load._ctally", [here + "_ctally.pyx"], include_dirs=[here], depends=tally,
                  extra_compile_args=["-O2"]),
        Extension("loadcmp.load._cbase", [here + "_cbase.pyx"], include_dirs=[here], depends=base,
                  extra_compile_args=["-O2"]),
        Extension("loadcmp.load._cloop", [here + "_cloop.pyx"], include_dirs=[here], depends=cloop,
                  extra_compile_args=["-O2"]),
    ]
    if openssl_headers():
        exts.append(Extension("loadcmp.load._ctls", [here + "_ctls.pyx"], include_dirs=[here], depends=cloop + tls,
                              libraries=["ssl", "crypto"], extra_compile_args=["-O2"]))
    else:
        print("loadcmp: OpenSSL's headers (libssl-dev) were not found: https runs the pure-Python loop",
              file=sys.stderr)
    if openssl_headers() and headers_of("nghttp2/nghttp2.h"):
        h2 = [here + f for f in ("_ch2.h", "_ch2conn.pxd")] + tls + base
        for name in ("_ch2conn", "_ch2"):
            exts.append(Extension(f"loadcmp.load.{name}", [here + name + ".pyx"], include_dirs=[here], depends=h2,
                                  libraries=["nghttp2", "ssl", "crypto"], extra_compile_args=["-O2"]))
    else:
        print("loadcmp: nghttp2's or OpenSSL's headers (libnghttp2-dev, libssl-dev) were not found: h2 runs the "
              "pure-Python `h2` package",
              file=sys.stderr)
    for ext in exts:
        ext.depends.append(here + "_cbuilt.pxi")
        ext.define_macros.append(("LOADCMP_BUILT_FROM", f'"{built_from(here, [*ext.sources, *ext.depends])}"'))
    return list(cythonize(exts, build_dir="build/cython", quiet=True))


def built_from(folder: str, files: list[str]) -> str:
    """What a compiled module is built from, as `BUILT_FROM` (`_cbuilt.pxi`) holds it: each source's path in the
    module's folder and the start of its SHA-256, which `loadcmp.load.compiled.current` checks before running it."""
    import hashlib

    return " ".join(f"{Path(f).relative_to(folder)}:{hashlib.sha256(Path(f).read_bytes()).hexdigest()[:16]}"
                    for f in sorted(set(files)))


def openssl_headers() -> bool:
    """Are OpenSSL's development headers where the compiler looks (or under $OPENSSL_DIR/include)?"""
    import os

    return headers_of("openssl/ssl.h", os.environ.get("OPENSSL_DIR", "") + "/include")


def headers_of(header: str, *more: str) -> bool:
    """Is `header` in an include folder the compiler looks in (or in `more`)?"""
    dirs = [*more, sysconfig.get_config_var("INCLUDEDIR") or "", "/usr/include", "/usr/local/include"]
    return any(Path(d, header).is_file() for d in dirs if d)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithData})
