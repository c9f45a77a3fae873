"""Applications as data: `configs/apps/<name>/app.toml` (and the folders `LOADCMP_APPS` names) read
and checked whole, the catalog looked up by name, and an app laid over a stack.

An app brings its code (Debian packages, a folder beside app.toml), a document root and front
controller that every stack's templates route to (`app` in the templates), a set-up run once when
each container starts, the settings it needs and its pages. Its images are the stack's images with
one layer more, made here from that data and built by `images` like any other (tags are hashes of
their inputs). It may bring roles of its own (`[roles.NAME]`: a database, with its Dockerfile,
tunables, causes and a status read by a command), which `on_stack` starts before the web roles and
the samplers measure apart. Nothing here names an app or a server, and nothing touches Docker.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problems, UsageError
from ..units import Setting
from . import render
from .model import APP_DIR, App, AppPage, Image, Role, Stack, Tunable, configs_dir
from .partfile import NAME, Reader, open_toml, read_cause
from .stackfile import read_role
from .stacks import parse_overrides, tunables as stack_tunables

APP_FILE = "app.toml"
APP_KEYS = {"description", "packages", "code", "root", "front", "writable", "setup", "ready", "set", "pages",
            "roles", "tunables", "causes", "status", "files", "build", "smoke"}
PAGE_KEYS = {"name", "path", "expect", "doc"}
PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
"""A Debian package name (Debian policy 5.6.1)."""


def _relative(p: Problems, path: Path, text: str, key: str, value: object, what: str) -> str | None:
    """A path inside the app (no `..`, not absolute), or None with the problem said."""
    if not isinstance(value, str) or value.startswith("/") or ".." in Path(value).parts:
        p.at(path, text, key, f"{key} must be {what}: a relative path inside the app, without '..'")
        return None
    return value.strip("/")


def _strings(p: Problems, path: Path, text: str, doc: dict[str, Any], key: str) -> list[str]:
    v = doc.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        p.at(path, text, key, f"{key} must be a list of strings")
        return []
    return list(v)


def _pages(p: Problems, path: Path, text: str, raw: object) -> list[AppPage]:
    if not isinstance(raw, list) or not raw or not all(isinstance(x, dict) for x in raw):
        p.at(path, text, "pages", "no [[pages]]: an app names at least one page (name, path, expect)")
        return []
    out: list[AppPage] = []
    for i, page in enumerate(raw):
        name = page.get("name")
        label = f"page {name!r}" if isinstance(name, str) else f"pages[{i}]"
        spot = name if isinstance(name, str) else "pages"
        bad = sorted(set(page) - PAGE_KEYS)
        errs = [f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(PAGE_KEYS))})"] if bad else []
        if not isinstance(name, str) or not NAME.match(name):
            errs.append("name must be a short lower-case name")
        if not isinstance(page.get("path"), str) or not page["path"].startswith("/"):
            errs.append("path must be a request path starting with /")
        if not isinstance(page.get("expect"), str) or not page["expect"].strip():
            errs.append("expect must be text a good answer contains (the primer checks it)")
        if not isinstance(page.get("doc", ""), str):
            errs.append("doc must be a string")
        for m in errs:
            p.at(path, text, spot, f"{label}: {m}")
        if not errs:
            out.append(AppPage(name, page["path"], page["expect"], page.get("doc", "")))
    for key in ("name", "path"):
        seen = [getattr(x, key) for x in out]
        for dup in sorted({v for v in seen if seen.count(v) > 1}):
            p.at(path, text, dup, f"two pages have the {key} {dup!r}")
    return out


def load_app(home: Path, origin: str = "built-in") -> App:
    """The app in `home` (a folder with app.toml), checked whole; ConfigError lists every problem."""
    home = home.resolve()
    path = home / APP_FILE
    p, doc, text = open_toml(path)
    if not NAME.match(home.name) or home.name.endswith(("-", ".", "_")):
        p.at(path, None, None, f"the folder's name {home.name!r} is the app's name: use lower-case letters, "
             "digits, '-', '_' and '.', not at the end")
    bad = sorted(set(doc) - APP_KEYS)
    if bad:
        p.at(path, text, bad[0], f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(APP_KEYS))})")
    if not isinstance(doc.get("description"), str) or not doc["description"].strip():
        p.at(path, text, "description", "description is missing (a string)")
    packages, code, root, front = _code(p, home, path, text, doc)
    writable = [w for w in _strings(p, path, text, doc, "writable")
                if _relative(p, path, text, "writable", w, "a folder of the app") is not None]
    setup = _strings(p, path, text, doc, "setup")
    ready = doc.get("ready")
    if not isinstance(ready, str) or not ready.startswith("/"):
        p.at(path, text, "ready", "ready must be a path that answers 200 without the app (a static file, /robots.txt)")
        ready = "/"
    build = _strings(p, path, text, doc, "build")
    roles, reader = _roles(p, home, path, text, doc)
    files = _files(p, home, path, text, doc.get("files", {}))
    settings = _settings(p, path, text, doc.get("set", {}), reader)
    pages = _pages(p, path, text, doc.get("pages"))
    smoke = doc.get("smoke", {})
    if not isinstance(smoke, dict) or set(smoke) - {"checks"}:
        p.at(path, text, "smoke", "smoke must be a table with one key, checks (a list of smoke checks)")
        smoke = {}
    checks = _strings(p, path, text, smoke, "checks")
    app = App(name=home.name, description=str(doc.get("description")), home=home, packages=tuple(packages),
              code=code, root=root, front=front or "", writable=tuple(writable), setup=tuple(setup), ready=ready,
              settings=settings, pages=tuple(pages), origin=origin, roles=roles, tunables=dict(reader.tunables),
              causes=tuple(c for f, t, raw in reader.causes if (c := read_cause(p, f, t, raw)) is not None),
              status=tuple(reader.status.values()), files=files, build=tuple(build),
              smoke_checks=tuple(checks))
    _check_roles(p, path, text, app)
    p.raise_if_any(summary=f"{{n}} problems in {path}")
    return app


def _code(p: Problems, home: Path, path: Path, text: str,
          doc: dict[str, Any]) -> tuple[list[str], str | None, str, str | None]:
    """What installs the app (`packages`), its folder (`code`), its document root and front controller."""
    packages = _strings(p, path, text, doc, "packages")
    for pkg in packages:
        if not PACKAGE.match(pkg):
            p.at(path, text, "packages", f"packages: {pkg!r} is not a Debian package name")
    code = _relative(p, path, text, "code", doc["code"], "a folder beside app.toml") if "code" in doc else None
    if code is not None and not (home / code).is_dir():
        p.at(path, text, "code", f"code: {code!r} is not a folder in {home}")
    if code is None and not packages:
        p.at(path, text, "code", "no code and no packages: give the app's folder (code) or what installs it")
    root = _relative(p, path, text, "root", doc.get("root", ""), "the document root") or ""
    front = _relative(p, path, text, "front", doc.get("front"), "the front controller, inside the root")
    if front is not None and code is not None and not (home / code / root / front).is_file():
        p.at(path, text, "front", f"front: {code}/{root}/{front} is not a file".replace("//", "/"))
    return packages, code, root, front


def _settings(p: Problems, path: Path, text: str, raw: object, reader: Reader) -> dict[str, Setting]:
    """`set`: the settings the app needs, typed by the stacks' tunables and its own roles'."""
    if not isinstance(raw, dict):
        p.at(path, text, "set", "set must be a table of tunables (KEY = value)")
        return {}
    if not raw:
        return {}
    try:
        return parse_overrides(raw, reader.tunables)
    except ConfigError as e:
        for m in e.messages:
            p.at(path, text, "set", f"set: {m}")
        return {}


def _roles(p: Problems, home: Path, path: Path, text: str, doc: dict[str, Any]) -> tuple[tuple[Role, ...], Reader]:
    """`[roles.NAME]` (a stack role's keys: dockerfile beside app.toml, command, files, ready) and the
    `[tunables.*]`, `[[causes]]` and `[status.*]` that go with them."""
    reader = Reader(p)
    reader.read(path, {k: doc[k] for k in ("tunables", "causes", "status") if k in doc}, text)
    raw = doc.get("roles", {})
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        p.at(path, text, "roles", "roles must be [roles.NAME] tables (a database: [roles.db])")
        return (), reader
    out = []
    for i, (name, table) in enumerate(raw.items()):
        if "name" in table or "image" in table:
            p.at(path, text, name, f"role {name!r}: its name is its table's; its image comes from its dockerfile "
                  "(beside app.toml)")
            continue
        if "ready" not in table:
            p.at(path, text, name, f"role {name!r}: ready is missing (a command that succeeds inside its "
                  "container once it serves; {port} is its port)")
        role = read_role(p, home, path, text, home.name, {"name": name, **table}, i, prefix="app")
        if role is not None:
            out.append(replace(role, apart=True))
    return tuple(out), reader


def _files(p: Problems, home: Path, path: Path, text: str, raw: object) -> tuple[tuple[str, str], ...]:
    """`[files]`: file under /etc/loadcmp = its template beside app.toml, rendered into the web roles."""
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        p.at(path, text, "files", "files must be a table of \"file under /etc/loadcmp\" = \"template\"")
        return ()
    for dest, tmpl in raw.items():
        if _relative(p, path, text, "files", dest, "a file under /etc/loadcmp") is None:
            continue
        if _relative(p, path, text, "files", tmpl, "a template beside app.toml") is not None and \
                not (home / tmpl).is_file():
            p.at(path, text, "files", f"files: template {tmpl!r} is not a file in {home}")
    return tuple(raw.items())


def _check_roles(p: Problems, path: Path, text: str, app: App) -> None:
    """What the app's roles, tunables, causes and status say of each other, and its templates rendered once."""
    names = {r.name for r in app.roles}
    taken = {k.split(".")[0] for k in stack_tunables()}
    for section in sorted({k.split(".")[0] for k in app.tunables} & taken):
        p.at(path, text, section, f"tunables.{section}: a stack's section; an app's roles take their own")
    for page in app.status:
        if page.role is None or page.role not in names:
            p.at(path, text, page.kind, f"status.{page.kind}: role must be one of the app's roles "
                  f"({', '.join(sorted(names)) or 'it has none'}): its command runs there")
    columns = {col for page in app.status for col, _ in page.fields}
    for c in app.causes:
        if c.setting is not None and c.setting not in app.tunables and c.setting not in stack_tunables():
            p.at(path, text, c.key, f"cause {c.key}: its setting {c.setting!r} is no tunable")
        for col in (c.peak, c.counter):
            if col is not None and col not in columns:
                p.at(path, text, c.key, f"cause {c.key}: {col!r} is not a column of its status")
    if p:
        return
    web = Role("web", Image("web", path), ("web",), app.files)
    probe = Stack(app.name, app.description, (*app.roles, web), "", app.tunables, home=app.home)
    try:
        render.render(probe, {k: t.default for k, t in app.tunables.items()},
                      {r.name: 10000 + i for i, r in enumerate(probe.roles)}, nofile=1024, app=app)
    except ConfigError as e:
        p.extend(e.messages, f"{path}: ")


def tunables(name: str | None = None) -> dict[str, Tunable]:
    """The tunables of the apps' roles (one app's, by name; none for a name no app has): what `--set` takes
    beside the stacks'."""
    apps = catalog()
    chosen = [apps[name]] if name in apps else [] if name else list(apps.values())
    return {k: t for a in chosen for k, t in a.tunables.items()}


def _dirs() -> tuple[Path, ...]:
    """Ours, then the folders of LOADCMP_APPS (each an app's folder or a folder of them)."""
    raw = os.environ.get("LOADCMP_APPS", "")
    return (configs_dir() / "apps", *(Path(x).expanduser().resolve() for x in raw.split(os.pathsep) if x.strip()))


def catalog() -> dict[str, App]:
    """Every app by name; a bad app file stops the command with every problem it has."""
    return _catalog(_dirs())


@cache
def _catalog(dirs: tuple[Path, ...]) -> dict[str, App]:
    out: dict[str, App] = {}
    p = Problems()
    for i, d in enumerate(dirs):
        if i and not d.is_dir():
            p.add(f"LOADCMP_APPS: {d} is not a folder")
            continue
        homes = [d] if (d / APP_FILE).is_file() else sorted(x.parent for x in d.glob(f"*/{APP_FILE}"))
        for home in homes:
            try:
                app = load_app(home, "built-in" if i == 0 else str(d))
            except ConfigError as e:
                p.take(e)
                continue
            if app.name in out and out[app.name].home != app.home:
                p.add(f"{home}: an app called {app.name!r} exists already ({out[app.name].home}); rename the folder")
            out.setdefault(app.name, app)
    p.raise_if_any(summary="{n} problems in app files")
    return out


def get_app(name: str) -> App:
    """An app by name; a one-line UsageError lists the known ones."""
    apps = catalog()
    if name not in apps:
        raise UsageError(f"unknown app {name!r}; known apps: {', '.join(apps) or 'none'} (see `loadcmp apps`)")
    return apps[name]


# --- an app over a stack ---------------------------------------------------------


def start_script(app: App) -> bytes:
    """The entrypoint of an app's images: its set-up, once, as www-data in APP_DIR, then the stack's own
    entrypoint. A step that fails ends the container with one line that names it."""
    lines = ["#!/bin/sh", f"# Made by loadcmp from the app {app.name}'s {APP_FILE}: its set-up, "
             "then the stack's entrypoint.", "set -e", 'export PHP_INI_SCAN_DIR=":/etc/loadcmp/php"', f"cd {APP_DIR}"]
    for step in app.setup:
        said = shlex.quote(f"loadcmp: the set-up of the app {app.name} failed: {step}")
        lines.append(f"runuser -u www-data -- sh -c {shlex.quote(step)} || {{ echo {said} >&2; exit 1; }}")
    lines.append('exec /usr/local/bin/loadcmp-entrypoint "$@"')
    return ("\n".join(lines) + "\n").encode()


def dockerfile(app: App) -> bytes:
    """The layer an app adds to a stack's image: its packages, its code, its writable folders, its set-up."""
    out = ["# Made by loadcmp: the app's layer over a stack's image.", "ARG BASE", "FROM ${BASE}"]
    if app.packages:
        out.append("RUN apt-get update \\\n && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                   f"--no-install-recommends {' '.join(app.packages)} \\\n && rm -rf /var/lib/apt/lists/*")
    if app.code is not None:
        out.append(f"COPY app/ {APP_DIR}/")
    if app.writable:
        out.append(f"RUN mkdir -p {' '.join(f'{APP_DIR}/{w}' for w in app.writable)} "
                   f"&& chown -R www-data:www-data {' '.join(f'{APP_DIR}/{w}' for w in app.writable)}")
    out += [f"RUN {step}" for step in app.build]
    out += ["COPY loadcmp-app-start /usr/local/bin/loadcmp-app-start",
            'ENTRYPOINT ["/usr/local/bin/loadcmp-app-start"]']
    return ("\n".join(out) + "\n").encode()


def _code_files(app: App) -> list[tuple[str, bytes]]:
    if app.code is None:
        return []
    top = app.home / app.code
    return [(f"app/{f.relative_to(top)}", f.read_bytes()) for f in sorted(top.rglob("*")) if f.is_file()]


def image_on(app: App, parent: Image) -> Image:
    """The app's image over one stack image: its build context made from the app's folder."""
    context = (("Dockerfile", dockerfile(app)), ("loadcmp-app-start", start_script(app)), *_code_files(app))
    return Image(f"app-{app.name}-{parent.key}", app.home / APP_FILE, app.home, parent, context)


def on_stack(app: App, stack: Stack) -> Stack:
    """The stack with every role's image carrying the app and its files, the app's own roles started first
    (a database is ready before a web role's set-up needs it), their tunables, causes and status beside."""
    clash = sorted({r.name for r in app.roles} & {r.name for r in stack.roles})
    if clash:
        raise ConfigError(f"app {app.name}: its role {clash[0]!r} has the name of a role of the stack {stack.name}; "
                          "rename it in app.toml")
    web = tuple(replace(r, image=image_on(app, r.image), files=(*r.files, *app.files)) for r in stack.roles)
    return replace(stack, roles=(*app.roles, *web), tunables={**stack.tunables, **app.tunables},
                   causes=(*stack.causes, *app.causes), status=(*stack.status, *app.status))


def applies(app: App | None, page: str) -> App | None:
    """The app when `page` is one of its pages; other pages (the demo pages beside it) run without it."""
    return app if app is not None and app.page_for(page) is not None else None
