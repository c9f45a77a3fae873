"""The shape the code keeps (ARCHITECTURE.md): no import cycle between loadcmp's modules nor
between its sub-packages, every import along the layers ARCHITECTURE.md draws, no module too long
to read in one sitting nor a function too long or too wide, a small shared kernel at the top, and
packages that say what they hold (every module listed) and import nothing heavy when imported."""

from __future__ import annotations

import ast
import re
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
    for node in ast.walk(_parsed(path)):
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
    found |= _loaded_by_name(_parsed(path), known)
    found.discard(name)
    return found


def _loaded_by_name(tree: ast.Module, known: set[str]) -> set[str]:
    """The loadcmp modules a module loads by name (`importlib.import_module("loadcmp.load.h1._ctls")`, either branch
    of a conditional name): an import like any other for the layers and the cycles."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            found |= {c.value for arg in node.args for c in ast.walk(arg)
                      if isinstance(c, ast.Constant) and c.value in known}
    return found


def _edges(name: str, path: Path, known: set[str]) -> set[str]:
    """Every loadcmp module `name` needs: its Python imports (and loads by name), and of a Cython module its
    cimports, its .pxd's included."""
    found = _imports(name, path, known) if path.suffix != ".pxd" else set()
    if path.suffix in (".pyx", ".pxd"):
        found |= _cimports(name, path, known)
        if path.suffix == ".pyx" and path.with_suffix(".pxd").exists():
            found |= _cimports(name, path.with_suffix(".pxd"), known)
    return found


def _every_module() -> dict[str, Path]:
    """The Python modules and the Cython ones, by dotted name."""
    return {**_modules(), **_compiled()}


CIMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+cimport\b|cimport[ \t]+([\w.]+))", re.M)
"""A Cython `from X cimport ...` (X maybe relative) or `cimport X` line."""


def _cimports(name: str, path: Path, known: set[str]) -> set[str]:
    """The loadcmp modules a Cython file (.pyx, .pxd) cimports: `from ._csys cimport *`, `from loadcmp.load.core._ctally
    cimport CTally`, `cimport loadcmp.load.core._ctally`. Relative names resolve against the file's package, as Cython's
    do; a .pxd without its .pyx (declarations only) is a module of its own here."""
    here = name.rsplit(".", 1)[0].split(".")
    found: set[str] = set()
    for dots, mod, plain in CIMPORT.findall(path.read_text()):
        if dots:
            base = here[: len(here) - len(dots) + 1]
            full = ".".join(base + ([mod] if mod else []))
        else:
            full = mod or plain
        if full in known:
            found.add(full)
    found.discard(name)
    return found


def _compiled() -> dict[str, Path]:
    """The Cython modules by name: each .pyx, and each .pxd that has no .pyx (declarations only)."""
    out = {}
    for f in sorted([*PKG.rglob("*.pyx"), *PKG.rglob("*.pxd")]):
        name = ".".join(f.relative_to(PKG.parent).with_suffix("").parts)
        if f.suffix == ".pyx" or not f.with_suffix(".pyx").exists():
            out[name] = f
    return out


def _parsed(path: Path) -> ast.Module:
    """A module's syntax tree; of a Cython module (`.pyx`, which ast cannot read), its Python imports alone."""
    if path.suffix != ".pyx":
        return ast.parse(path.read_text())
    heads = re.findall(r"^[ \t]*(from[ \t]+[\w.]+[ \t]+import[ \t]+\(?[\w, \t]*|import[ \t]+[\w., \t]+)",
                       path.read_text(), re.M)
    return ast.parse("\n".join(h.replace("(", "").rstrip(", \t") for h in heads))


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


def test_the_compiled_edges_are_read():
    """cimports (relative and absolute, of a .pyx and of its .pxd) and loads by name count as imports."""
    mods = _every_module()
    known = set(mods)
    cimported = {n for m, p in mods.items() if p.suffix in (".pyx", ".pxd") for n in _cimports(m, p, known)}
    assert cimported, "no cimport between loadcmp's compiled modules was read"
    tree = ast.parse("import importlib\nm = importlib.import_module('a.b' if x else 'a.c')\n")
    assert _loaded_by_name(tree, {"a.b", "a.c", "a.d"}) == {"a.b", "a.c"}


def test_no_import_cycle():
    mods = _every_module()
    cycle = find_cycle({m: _edges(m, p, set(mods)) for m, p in mods.items()})
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_is_too_long():
    files = {**_modules(),
             **{str(f.relative_to(PKG.parent)): f for ext in ("*.pyx", "*.pxd", "*.h") for f in PKG.rglob(ext)}}
    long = {m: n for m, p in files.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these (over {MAX_LINES} lines): {long}"


MAX_TOP_LEVEL = 8
"""Modules at the top of loadcmp/: the shared kernel (errors, units, records, studies) and the entry points."""
HEAVY = ("pandas", "docker", "matplotlib", "numpy", "uvloop", "httptools", "aiohttp", "distributed", "duckdb", "scipy",
         "otava")


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
    mods = _every_module()
    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        for n in _edges(m, p, set(mods)):
            if _package_of(n) != _package_of(m):
                graph.setdefault(_package_of(m), set()).add(_package_of(n))
    assert graph, "no imports between packages found: the test reads nothing"
    cycle = find_cycle(graph)
    assert cycle is None, "the packages import each other: " + " -> ".join(cycle or [])


def test_no_import_cycle_between_rooms():
    """Inside a package, its sub-packages (load's rooms: h1, tls, h2, h3, core, record, run) and its own modules
    import one way too."""
    mods = _every_module()
    known = set(mods)

    def room(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:3]) if len(parts) > 3 else module

    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        for n in _edges(m, p, known):
            if room(n) != room(m) and _package_of(n) == _package_of(m):
                graph.setdefault(room(m), set()).add(room(n))
    assert any(len(r.split(".")) == 3 and r.startswith("loadcmp.load.") and r in graph for r in graph), graph
    cycle = find_cycle(graph)
    assert cycle is None, "rooms import each other: " + " -> ".join(cycle or [])


def _load_order() -> dict[str, int]:
    """The order loadcmp/load/__init__.py draws between its rooms and top modules ("run -> engines.py -> h1, h2,
    h3 -> ..."): each name's place, names at one place importing none of each other."""
    doc = ast.get_docstring(ast.parse((PKG / "load" / "__init__.py").read_text())) or ""
    chain = " ".join(doc.split("Imports go one way between the rooms:", 1)[1].split("(", 1)[0].split())
    return {name.strip().removesuffix(".py"): i for i, step in enumerate(chain.split("->"))
            for name in step.split(",") if name.strip() and name.strip() != "the kernel"}


def test_the_rooms_import_in_the_drawn_order():
    """Inside load, every import between two rooms (or top modules) goes rightward along the drawn order."""
    order = _load_order()
    assert {"run", "engines", "h1", "tls", "core", "record", "driver", "target"} <= set(order), order
    mods = _every_module()
    known = set(mods)

    def unit(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if parts[:2] == ["loadcmp", "load"] and len(parts) > 2 else None

    against = sorted(f"{m} -> {n}" for m, p in mods.items() if unit(m) for n in _edges(m, p, known)
                     if unit(n) and unit(n) != unit(m) and not order[unit(m) or ""] < order[unit(n) or ""])
    assert not against, "against load's drawn order: " + "; ".join(against)


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
    assert _loaded("import loadcmp.load.run.workers, loadcmp.load.record.summary",
                   ("pandas", "docker", "matplotlib")) == []


# The layering ARCHITECTURE.md draws ("The packages and how they import"), as the test reads it.
KERNEL = ("records", "studies", "facts", "protocols", "units", "errors")
"""The shared kernel at the top of loadcmp/, in its own order: each imports only those after it."""
LAYERS: list[tuple[str, ...]] = [("cli",), ("writeups", "live", "sweep"), ("experiment", "catalog", "export"),
                                 ("verdicts", "observe", "events"),
                                 ("report",), ("store", "net"), ("lab",), ("traffic",), ("load",),
                                 ("trace",)]
"""The sub-packages, top to bottom, over the kernel. Each imports only from the levels below its own, never
from a neighbour on its own level (writeups, live and sweep; experiment and catalog; verdicts, observe and events)."""
ONLY: dict[str, tuple[str, ...]] = {"lab": ("load.run.limits",)}
"""Of a package below it, these reach only the modules named (lab: load.run.limits, the one reader of the open-file
limit); the other packages below stay whole."""
ENTRY = {"loadcmp": (), "__main__": ("cli",)}
"""The root (the version: anyone may import it, it imports nothing) and `python -m loadcmp`."""


def _unit(module: str) -> str:
    """Who answers to the layering for `module`: its sub-package, a kernel module, or an entry point."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def allowed(unit: str) -> set[str]:
    """The units (and, where ONLY narrows, the modules as `pkg.module`) that `unit` may import."""
    if unit in ENTRY:
        return {*ENTRY[unit], *(("loadcmp",) if unit != "loadcmp" else ())}
    if unit in KERNEL:
        return {*KERNEL[KERNEL.index(unit) + 1:], "loadcmp"}
    level = next(i for i, names in enumerate(LAYERS) if unit in names)
    narrowed = ONLY.get(unit, ())
    below = {p for names in LAYERS[level + 1:] for p in names if all(m.split(".")[0] != p for m in narrowed)}
    return {*below, *narrowed, *KERNEL, "loadcmp"}


def breaks_layers(importer: str, imported: str) -> bool:
    """Whether `importer` importing `imported` (both dotted module names) goes against the drawn layers."""
    src, dst = _unit(importer), _unit(imported)
    if src == dst:
        return False
    ok = allowed(src)
    return dst not in ok and not any(imported == f"loadcmp.{m}" or imported.startswith(f"loadcmp.{m}.") for m in ok)


def test_the_layer_rule_reads_the_drawing():
    assert breaks_layers("loadcmp.lab.partfile", "loadcmp.load.record.outcomes")  # lab reaches load.run.limits alone
    assert not breaks_layers("loadcmp.lab.render", "loadcmp.load.run.limits")
    assert breaks_layers("loadcmp.load.driver", "loadcmp.lab.stacks")  # upwards
    assert breaks_layers("loadcmp.verdicts.judge", "loadcmp.observe.metrics")  # a neighbour
    assert breaks_layers("loadcmp.writeups.plan", "loadcmp.sweep.runner")
    assert not breaks_layers("loadcmp.report.plots", "loadcmp.load.record.outcomes")  # any level below
    assert breaks_layers("loadcmp.units", "loadcmp.records") and not breaks_layers("loadcmp.records", "loadcmp.units")
    assert breaks_layers("loadcmp.errors", "loadcmp.cli.app") and not breaks_layers("loadcmp.sweep.runner", "loadcmp")
    assert not breaks_layers("loadcmp.lab.stacks", "loadcmp.lab.model")  # inside a package: the cycle test's


def test_every_import_follows_the_drawn_layers():
    """Every import, at the top, inside a function or under TYPE_CHECKING (a type named from a higher layer
    ties the two packages as an import does: mypy follows it, a reader must know the other package), and
    the Python imports of the compiled modules (.pyx)."""
    mods = _every_module()
    known = set(mods)
    units = {_unit(m) for m in mods}
    compiled = {m: p for m, p in mods.items() if p.suffix == ".pyx"}
    assert compiled and all(_edges(m, p, known) for m, p in compiled.items()), "the .pyx imports were not read"
    assert units == {p for names in LAYERS for p in names} | set(KERNEL) | set(ENTRY), \
        f"a module outside the drawing: {sorted(units - {p for names in LAYERS for p in names} - set(KERNEL))}"
    against = sorted(f"{m} -> {n}" for m, p in mods.items() for n in _edges(m, p, known) if breaks_layers(m, n))
    assert not against, "against the layers ARCHITECTURE.md draws: " + "; ".join(against)


def _drawing() -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """ARCHITECTURE.md's drawing of the layers: its levels top to bottom (names at one indent are one level),
    and each name's line."""
    text = (PKG.parent / "ARCHITECTURE.md").read_text()
    block = text.split("The sub-packages import one way", 1)[1].split("```", 2)[1]
    levels: list[tuple[int, tuple[str, ...]]] = []
    lines: dict[str, str] = {}
    for line in block.splitlines():
        m = re.match(r"^([\s├└│→]*)([a-z]+(?:, [a-z]+)*)", line)
        if not m:
            continue
        names = ("kernel",) if m[2] == "the" else tuple(m[2].split(", "))
        lines.update((n, line) for n in names)
        if levels and levels[-1][0] == len(m[1]):
            levels[-1] = (len(m[1]), levels[-1][1] + names)
        else:
            levels.append((len(m[1]), names))
    return [names for _, names in levels], lines


def test_the_layers_are_the_ones_architecture_md_draws():
    drawn, lines = _drawing()
    assert drawn == [*LAYERS, ("kernel",)], f"ARCHITECTURE.md draws {drawn}; this test keeps {LAYERS}"
    assert all(k in lines["kernel"] for k in KERNEL), lines["kernel"]
    for pkg, modules in ONLY.items():
        assert all(m in lines[pkg] for m in modules), f"the drawing's line for {pkg} names {modules}: {lines[pkg]}"


def _noted(line: str, names: tuple[str, ...]) -> dict[str, set[str]]:
    """What a line of the drawing says its packages import: `(imports a, b: why)` of its one package,
    `(p imports a, b; q imports c)` of several; `the kernel alone` is none. Only the packages' names are kept
    (`load.run.limits` is `load`)."""
    note = line.split("(", 1)[1].rsplit(")", 1)[0] if "(" in line else ""
    said: dict[str, set[str]] = {}
    for part in note.split(";"):
        m = re.match(r"\s*(?:([a-z]+) )?imports ([^:]*)", part)
        if m and (m[1] or len(names) == 1):
            said[m[1] or names[0]] = {x.strip().split(".")[0] for x in m[2].split(",")} - {"the kernel alone", ""}
    return said


def _package_imports() -> dict[str, set[str]]:
    """Each sub-package's imports of the other sub-packages (the kernel left out), as the code has them."""
    mods = _every_module()
    out: dict[str, set[str]] = {}
    for m, p in mods.items():
        for n in _edges(m, p, set(mods)):
            if _unit(n) != _unit(m) and _unit(n) not in (*KERNEL, "loadcmp"):
                out.setdefault(_unit(m), set()).add(_unit(n))
    return out


def test_the_drawing_notes_say_the_real_imports():
    """Each package's note beside the drawing names exactly the packages it imports (cli may import any):
    a note that drifts from the code misleads more than no note."""
    drawn, lines = _drawing()
    assert _noted("x  (imports a, b.c: why)", ("x",)) == {"x": {"a", "b"}}
    assert _noted("y, z  (y imports a; z imports b, c)", ("y", "z")) == {"y": {"a"}, "z": {"b", "c"}}
    real = _package_imports()
    said: dict[str, set[str]] = {}
    for names in drawn:
        for name in names:
            head = lines[name].split("(", 1)[0]
            said.update(_noted(lines[name], tuple(n for n in names if re.search(rf"\b{n}\b", head))))
    packages = [p for names in LAYERS for p in names if p != "cli"]
    assert set(said) == set(packages), f"a note for every package but cli: {sorted(set(packages) - set(said))}"
    wrong = [f"{p}: the note says {sorted(said[p])}, the code imports {sorted(real.get(p, set()))}"
             for p in packages if said[p] != real.get(p, set())]
    assert not wrong, "; ".join(wrong)


def _unlisted() -> list[str]:
    """Modules (.py, .pyx) their package's docstring or ARCHITECTURE.md does not name."""
    arch = (PKG.parent / "ARCHITECTURE.md").read_text()
    missing = []
    for init in sorted(PKG.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        package = ".".join(init.parent.relative_to(PKG.parent).parts)
        for f in sorted([*init.parent.glob("*.py"), *init.parent.glob("*.pyx")]):
            rel = f.relative_to(PKG.parent).as_posix()
            if f.name == "__init__.py":
                continue
            if not re.search(rf"(?<![\w./]){re.escape(f.name)}(?!\w)", doc):
                missing.append(f"{rel} (the docstring of {package})")
            if not re.search(rf"(?<![\w./]){re.escape(rel)}(?!\w)", arch):
                missing.append(f"{rel} (ARCHITECTURE.md)")
    return missing


def test_every_module_is_listed():
    """A package's docstring is its table of contents and ARCHITECTURE.md names the file of every concern."""
    missing = _unlisted()
    assert not missing, f"{len(missing)} modules not listed: " + "; ".join(missing)


MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 10


def oversized(source: str, where: str) -> list[str]:
    """Functions in `source` longer than MAX_FUNCTION_LINES (from `def` to the last line; decorators are the
    flags, not the body) or taking more than MAX_PARAMETERS (`self`, `*args` and `**kwargs` included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + \
                (a.kwarg is not None)
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES or params > MAX_PARAMETERS:
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines, {params} parameters)")
    return found


def test_oversized_finds_long_and_wide_functions():
    assert oversized("def f(a, b):\n" + "    x = 1\n" * 59, "m") == []
    assert oversized("def f(a, b):\n" + "    x = 1\n" * 60, "m") == ["m:1 f (61 lines, 2 parameters)"]
    assert oversized("class C:\n    def g(self, a, b, c, d, e, f, g, h, *i, **j): pass\n", "m") == \
        ["m:2 g (1 lines, 11 parameters)"]


def test_no_function_is_too_long_or_too_wide():
    found = [f for path in sorted(PKG.rglob("*.py"))
             for f in oversized(path.read_text(), path.relative_to(PKG.parent).as_posix())]
    assert not found, f"{len(found)} functions over {MAX_FUNCTION_LINES} lines or {MAX_PARAMETERS} parameters: " \
        + "; ".join(found)


CYTHON_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:c?p?def)[ \t]+(?!(?:class|extern|enum|struct|union)\b)"
                        r"[^=(\n]*?(\w+)[ \t]*\(")


def oversized_cython(source: str, where: str) -> list[str]:
    """As `oversized`, for a Cython module (def, cdef and cpdef functions), which ast cannot read: a function runs
    from its `def` to its last line indented deeper; its parameters are the top-level commas of its signature."""
    lines, found = source.splitlines(), []
    for i, line in enumerate(lines):
        if not (m := CYTHON_DEF.match(line)):
            continue
        sig, depth, k = "\n".join(lines[i:i + 10])[m.end():], 1, 0
        while depth and k < len(sig):
            depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(sig[k], 0)
            k += 1
        params = len([p for p in re.sub(r"\([^()]*\)|\[[^\[\]]*\]", "", sig[:k - 1]).split(",") if p.strip()])
        indent, end = len(m.group(1).expandtabs()), i
        for j in range(i + 1, len(lines)):
            if lines[j].strip():
                if len(lines[j].expandtabs()) - len(lines[j].lstrip()) <= indent and lines[j].lstrip()[0] not in ")]":
                    break
                end = j
        if end - i + 1 > MAX_FUNCTION_LINES or params > MAX_PARAMETERS:
            found.append(f"{where}:{i + 1} {m.group(2)} ({end - i + 1} lines, {params} parameters)")
    return found


def test_oversized_cython_finds_long_and_wide_functions():
    body = "    cdef int x = f(1, 2)\n" * 59
    assert oversized_cython("cdef void f(self, Client *c) except *:\n" + body + "\ncdef int y = 1\n", "m") == []
    assert oversized_cython("cdef inline int f(int a):\n" + body + "    return a\n", "m") == \
        ["m:1 f (61 lines, 1 parameters)"]
    assert oversized_cython("cdef class C:\n    cpdef g(self, a, b, c, d, e, f, g, h, i, double[:] j=None):\n"
                            "        pass\n", "m") == ["m:2 g (2 lines, 11 parameters)"]


def test_no_compiled_function_is_too_long_or_too_wide():
    found = [f for path in sorted(PKG.rglob("*.pyx"))
             for f in oversized_cython(path.read_text(), path.relative_to(PKG.parent).as_posix())]
    assert not found, f"{len(found)} functions over {MAX_FUNCTION_LINES} lines or {MAX_PARAMETERS} parameters: " \
        + "; ".join(found)


MIN_RUN = 6
"""Lines (blank lines and comments aside) that, identical and in the same order in two places, are one thing written
twice: the compiled sources build on `_cbase` and `_cssl` instead."""


def repeated_runs(files: dict[str, str]) -> list[str]:
    """Where each run of MIN_RUN or more identical lines (stripped, comments dropped) is found again in `files`, and
    where it was first."""
    first: dict[tuple[str, ...], tuple[str, int]] = {}
    found = []
    for name, text in files.items():
        code = [(s, n) for n, line in enumerate(text.splitlines(), 1)
                if (s := re.sub(r"[ \t]+#[^\"']*$", "", line).strip()) and not s.startswith("#")]
        inside = False  # the window before this one repeated too: one longer run
        for k in range(len(code) - MIN_RUN + 1):
            run = tuple(s for s, _ in code[k:k + MIN_RUN])
            where = first.setdefault(run, (name, code[k][1]))
            again = where[0] != name or code[k][1] - where[1] >= MIN_RUN
            if again and not inside:
                found.append(f"{name}:{code[k][1]} repeats {where[0]}:{where[1]}")
            inside = again
    return found


def test_repeated_runs_finds_a_copy():
    six = "".join(f"x{i} = now()  # {i}\n" for i in range(6))
    assert repeated_runs({"a": six, "b": "y = 1\n" + six.replace("  # ", "\n# ")}) == ["b:2 repeats a:1"]
    assert repeated_runs({"a": six, "b": six.replace("x5", "x9")}) == []
    assert repeated_runs({"a": six + "y = 1\n" + six}) == ["a:8 repeats a:1"]
    assert repeated_runs({"a": six + "x6 = 1\n", "b": six + "x6 = 1\n"}) == ["b:1 repeats a:1"]  # one run of 7


def test_the_compiled_sources_repeat_no_run_of_lines():
    files = {f.relative_to(PKG.parent).as_posix(): f.read_text() for ext in ("*.pyx", "*.pxd") for f in PKG.rglob(ext)}
    found = repeated_runs(files)
    assert not found, f"{len(found)} runs of {MIN_RUN} lines written twice: " + "; ".join(found)
