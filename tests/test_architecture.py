"""The shape the code keeps (ARCHITECTURE.md): no import cycle between loadcmp's modules nor
between its sub-packages, no module too long to read in one sitting, a small shared kernel
at the top, and packages that say what they hold and import nothing heavy when imported."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "loadcmp"
MAX_LINES = 420


def _modules() -> dict[str, Path]:
    out = {}
    for f in PKG.rglob("*.py"):
        parts = list(f.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every loadcmp module `name` imports, at the top or inside a function."""
    is_pkg = path.name == "__init__.py"
    here = name if is_pkg else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                if sub in known:
                    found.add(sub)
                elif mod in known:
                    found.add(mod)
    found.discard(name)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in `graph` (module -> the modules it imports), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle():
    mods = _modules()
    cycle = find_cycle({m: _imports(m, p, set(mods)) for m, p in mods.items()})
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_is_too_long():
    files = {**_modules(),
             **{str(f.relative_to(PKG.parent)): f for ext in ("*.pyx", "*.pxd", "*.h") for f in PKG.rglob(ext)}}
    long = {m: n for m, p in files.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these (over {MAX_LINES} lines): {long}"


MAX_TOP_LEVEL = 8
"""Modules at the top of loadcmp/: the shared kernel (errors, units, records, studies) and the entry points."""
HEAVY = ("pandas", "docker", "matplotlib", "numpy", "uvloop", "httptools", "aiohttp", "distributed")


def _packages() -> list[str]:
    return sorted(".".join(p.parent.relative_to(PKG.parent).parts) for p in PKG.rglob("__init__.py"))


def _package_of(module: str) -> str:
    """`loadcmp.lab.stacks` -> `loadcmp.lab`; a top-level module is its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_the_top_level_is_the_kernel():
    top = sorted(f.name for f in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"{len(top)} modules at the top of loadcmp/ (at most {MAX_TOP_LEVEL}): {top}"


def test_every_package_says_what_it_holds():
    packages = _packages()
    assert len(packages) >= 9, packages
    silent = [p for p in packages if not ast.get_docstring(ast.parse((PKG.parent / p.replace(".", "/") /
                                                                       "__init__.py").read_text()))]
    assert not silent, f"no docstring in the __init__.py of {silent}"


def test_no_import_cycle_between_packages():
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        for n in _imports(m, p, set(mods)):
            if _package_of(n) != _package_of(m):
                graph.setdefault(_package_of(m), set()).add(_package_of(n))
    assert graph, "no imports between packages found: the test reads nothing"
    cycle = find_cycle(graph)
    assert cycle is None, "the packages import each other: " + " -> ".join(cycle or [])


def test_importing_a_package_loads_nothing_heavy():
    """A package's __init__ is its table of contents; the heavy libraries load only where used."""
    packages = [p for p in _packages() if p != "loadcmp"]
    assert "loadcmp.lab" in packages and "loadcmp.report" in packages
    loaded = _loaded("; ".join(f"import {p}" for p in packages), HEAVY)
    assert loaded == [], f"importing {packages} loaded {loaded}"


def _loaded(code: str, names: tuple[str, ...]) -> list[str]:
    """Which of `names` a fresh interpreter has imported after running `code`."""
    import subprocess
    import sys

    probe = f"import sys; {code}; print(','.join(m for m in {names!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    return [m for m in out.split(",") if m]


def test_the_cli_starts_without_the_heavy_libraries():
    """`--help` or a bad flag answers at once: no pandas, docker, plotting or engine until a command needs them."""
    heavy = ("pandas", "docker", "matplotlib", "numpy", "uvloop", "httptools", "aiohttp")
    assert _loaded("import loadcmp.cli", heavy) == []


def test_a_load_worker_does_not_carry_pandas():
    """Every worker process would pay for it in memory and start-up time."""
    assert _loaded("import loadcmp.load.workers, loadcmp.load.summary", ("pandas", "docker", "matplotlib")) == []
