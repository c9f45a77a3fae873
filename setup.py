"""Builds the compiled modules: the fast engine's closed loop (loadcmp/load/h1/_cloop.pyx; its think, _cthink.pyx,
and its clients' other behaviours, _cpaced.pyx),
what it records of each request (_ctally.pyx), its https (_ctls.pyx, OpenSSL from C), and the h2
engine (_ch2link.pyx, _ch2conn.pyx and _ch2.pyx, libnghttp2 from C), all on one base (_cbase.pyx);
everything else about the package is in pyproject.toml.

The modules are optional: without a C compiler, the Python headers, Cython or Linux's
epoll, the install goes on without it (one line says so) and loadcmp runs the
pure-Python loop (loadcmp/load/h1/rawclient.py) instead. Without OpenSSL's headers
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
    tally = at("_ctally.h", "_ctally.pxd")
    trace = at("_ctrace.h", "_ctrace.pxd")
    base = at("_cbase.pxd", "_csys.pxd", "_cnet.h", "_chttp.h") + tally + trace
    cloop = at("_cloop.pxd") + base
    think = at("_cthink.pxd") + cloop
    tls = at("_cssl.pxd", "_ctls.h")
    exts = [compiled("core", "_ctally", tally), compiled("core", "_cbase", base), compiled("h1", "_cloop", cloop),
            compiled("h1", "_cthink", think), compiled("h1", "_cpaced", think)]
    if openssl_headers():
        exts.append(compiled("h1", "_ctls", think + tls, "ssl", "crypto"))
    else:
        print("loadcmp: OpenSSL's headers (libssl-dev) were not found: https runs the pure-Python loop",
              file=sys.stderr)
    if openssl_headers() and headers_of("nghttp2/nghttp2.h"):
        h2 = at("_ch2.h", "_ch2link.pxd", "_ch2conn.pxd") + tls + base
        exts += [compiled("h2", name, h2, "nghttp2", "ssl", "crypto") for name in ("_ch2link", "_ch2conn", "_ch2")]
    else:
        print("loadcmp: nghttp2's or OpenSSL's headers (libnghttp2-dev, libssl-dev) were not found: h2 runs the "
              "pure-Python `h2` package",
              file=sys.stderr)
    rooms = sorted({str(Path(f).parent) for f in at(*SHARED)})
    return list(cythonize(exts, build_dir="build/cython", quiet=True, include_path=rooms))


LOAD = Path("loadcmp/load")
"""The load package: each compiled module sits in its room (h1, h2) or in the compiled core they build on; tls/ holds
the OpenSSL declarations both rooms share."""
SHARED = ("_ctally.h", "_ctally.pxd", "_cbase.pxd", "_csys.pxd", "_cnet.h", "_cloop.pxd", "_chttp.h", "_cssl.pxd",
          "_ctls.h", "_ch2.h", "_ch2link.pxd", "_ch2conn.pxd", "_cbuilt.pxi", "_ctrace.h", "_ctrace.pxd")
"""The headers, declarations and includes the modules share across the rooms (found by name, `at`)."""


def at(*names: str) -> list[str]:
    """Where each shared file is under loadcmp/load (its room), by name."""
    found: dict[str, list[str]] = {}
    for pattern in ("*.h", "*.pxd", "*.pxi"):
        for f in LOAD.rglob(pattern):
            found.setdefault(f.name, []).append(str(f))
    twice = {n: paths for n, paths in found.items() if len(paths) > 1}
    if twice:  # the C include path and Cython's would find either one
        raise SystemExit(f"loadcmp: a header or declaration file's name is in two rooms: {twice}")
    return [found[n][0] for n in names]


def compiled(room: str, name: str, depends: list[str], *libraries: str) -> Extension:
    """One compiled module of a room: every room holding a shared header is on the include path (a loop's
    headers sit in its own room, the core's in core/), and it carries what it was built from (`built_from`)."""
    source = str(LOAD / room / f"{name}.pyx")
    depends = [*depends, *at("_cbuilt.pxi")]
    rooms = sorted({str(Path(f).parent) for f in at(*SHARED)})
    return Extension(f"loadcmp.load.{room}.{name}", [source], include_dirs=rooms, depends=depends,
                     libraries=list(libraries), extra_compile_args=["-O2"],
                     define_macros=[("LOADCMP_BUILT_FROM", f'"{built_from([source, *depends])}"')])


def built_from(files: list[str]) -> str:
    """What a compiled module is built from, as `BUILT_FROM` (`_cbuilt.pxi`) holds it: each source's path under
    loadcmp/load and the start of its SHA-256, which `loadcmp.load.core.compiled.current` checks before running
    it."""
    import hashlib

    return " ".join(f"{Path(f).relative_to(LOAD)}:{hashlib.sha256(Path(f).read_bytes()).hexdigest()[:16]}"
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
