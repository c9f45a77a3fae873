"""A stack's folder read into a `Stack`, with every problem of it listed at once.

A stack is `<folder>/stack.toml` plus the templates beside it; the folder's name is the
stack's name. It names the parts it is made of (`configs/parts/<part>.toml`: the tunables,
checks, log causes, status pages and version commands of one program, shared by every
stack that runs it) and may add its own of each; every stack also gets the causes of
`configs/every-stack.toml` (what the kernel says of any server: its listen queue overflowing).
Templates are looked up beside the stack first, then in `configs/templates/`, so a copied
folder works anywhere and a template copied into it overrides the shared one. The whole stack is checked when it is
read, its templates rendered once with the defaults, so that a mistake is found before
any container starts, with its file and line where TOML or Jinja knows it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from .. import protocols
from ..errors import ConfigError, Problems
from . import render, rules
from .certs import KEY_TYPES, STAND_IN
from .model import TLS_PART, Cause, Check, Image, Role, Stack, configs_dir, project_root
from .partfile import IDENT, NAME, Reader, open_toml, read_cause, read_toml

STACK_FILE = "stack.toml"
STACK_KEYS = {"description", "order", "php_api", "parts", "aliases", "smoke", "busy_workers", "busy_limit", "roles",
              "status", "tunables", "checks", "causes", "versions", "listen", "error_log", "protocols",
              "goaway_after", "backlog", "accept_limit", "events"}
PART_KEYS = {"status", "tunables", "checks", "causes", "versions", "listen", "error_log", "events"}
EVERY_STACK = "every-stack.toml"
"""In configs/: the causes every stack gets, read before its parts (their settings name the stack's own
`{backlog}`, `{busy_limit}` and `{accept_limit}`)."""
STACK_NAMES = ("busy_limit", "backlog", "accept_limit")
"""The stack's keys a cause's setting may name as `{busy_limit}`: a stack without one leaves the setting out."""
ROLE_KEYS = {"name", "image", "dockerfile", "command", "files", "vars", "versions", "ready"}
SUMMARY = "{n} problems in stack files"


def templates_dir() -> Path:
    return configs_dir() / "templates"


def parts_dir() -> Path:
    return configs_dir() / "parts"


@cache
def part_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in parts_dir().glob("*.toml")))


def read_role(p: Problems, home: Path, path: Path, text: str, stack: str, r: object, i: int,
              prefix: str = "stack") -> Role | None:
    """One role's table checked (an app's roles too: `prefix` names their images `app-…`)."""
    if not isinstance(r, dict):
        p.at(path, text, "roles", f"roles[{i}]: give each role as a [[roles]] table")
        return None
    name = r.get("name")
    errs = []
    bad = sorted(set(r) - ROLE_KEYS)
    if bad:
        errs.append(f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(ROLE_KEYS))})")
    if not isinstance(name, str) or not NAME.match(name):
        errs.append("name must be a short lower-case name (web, backend, db)")
    image = _role_image(errs, home, r, f"{prefix}-{stack}")
    command = r.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(x, str) and x for x in command):
        errs.append("command must be a non-empty list of strings (the entrypoint's arguments)")
    files = _role_files(errs, home, r.get("files", {}))
    vars_ = r.get("vars", {})
    if not isinstance(vars_, dict) or not all(IDENT.match(k) and isinstance(v, (str, int, bool, float))
                                             for k, v in vars_.items()):
        errs.append("vars must be a table of name = value (numbers, strings, true/false)")
        vars_ = {}
    versions = r.get("versions", {})
    if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
        errs.append("versions must be a table of program = \"command\"")
        versions = {}
    ready = r.get("ready")
    if ready is not None and (not isinstance(ready, str) or not ready.strip()):
        errs.append("ready must be a command that succeeds inside the container once the role serves")
    if errs or image is None or not isinstance(name, str) or not isinstance(command, list):
        label = f"role {name!r}" if isinstance(name, str) else f"roles[{i}]"
        for m in errs:
            p.at(path, text, name if isinstance(name, str) else "roles", f"{label}: {m}")
        return None
    return Role(name, image, tuple(command), tuple(files.items()), dict(vars_), tuple(versions.items()), ready)


def _role_image(errs: list[str], home: Path, r: dict[str, Any], tag: str) -> Image | None:
    """A role's image: a shared one (`image`) or its own Dockerfile beside the file (`dockerfile`, tagged `tag`)."""
    if ("image" in r) == ("dockerfile" in r):
        errs.append("give either image (a shared image: Dockerfile.<image> of the project) or dockerfile "
                    "(a Dockerfile beside stack.toml)")
        return None
    if "image" in r:
        df = project_root() / f"Dockerfile.{r['image']}"
        if not isinstance(r["image"], str) or not NAME.match(r["image"]) or not df.is_file():
            shared = sorted(x.name.split(".", 1)[1] for x in project_root().glob("Dockerfile.*"))
            errs.append(f"image {r['image']!r} is not a shared image (there are: {', '.join(shared)})")
            return None
        return Image(r["image"], df)
    df = home / str(r["dockerfile"])
    if not isinstance(r["dockerfile"], str) or not df.is_file() or home not in df.resolve().parents:
        errs.append(f"dockerfile {r['dockerfile']!r} is not a file inside {home}")
        return None
    suffix = df.name.removeprefix("Dockerfile").strip(".")
    if suffix and not NAME.match(suffix):
        errs.append(f"dockerfile {r['dockerfile']!r}: after 'Dockerfile.' use lower-case letters, digits, "
                    "'-' and '.' (it names the image)")
    return Image(tag + (f"-{suffix}" if suffix else ""), df, home)


def _role_files(errs: list[str], home: Path, files: object) -> dict[str, str]:
    """A role's `files`: each file under /etc/loadcmp and the template it is rendered from."""
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        errs.append("files must be a table of \"file under /etc/loadcmp\" = \"template\"")
        return {}
    for dest, tmpl in files.items():
        if dest.startswith("/") or ".." in Path(dest).parts or Path(dest).name in ("", "."):
            errs.append(f"files: {dest!r} must be a relative path of a file inside /etc/loadcmp")
        if tmpl.startswith("/") or ".." in Path(tmpl).parts:
            errs.append(f"files: template {tmpl!r} must be a name beside stack.toml or in {templates_dir()}")
            continue
        if not (home / tmpl).is_file() and not (templates_dir() / tmpl).is_file():
            errs.append(f"files: template {tmpl!r} is neither beside stack.toml nor in {templates_dir()}")
    return files


def load_stack(home: Path, origin: str = "built-in") -> Stack:
    """The stack in `home` (a folder with stack.toml), checked whole; ConfigError lists every problem."""
    home = home.resolve()
    path = home / STACK_FILE
    p, doc, text = open_toml(path)
    _head(p, path, text, doc)
    reader, parts, unread = _parts(p, path, text, doc)
    roles_raw = doc.get("roles")
    if not isinstance(roles_raw, list) or not roles_raw:
        p.at(path, text, "roles", "no [[roles]]: a stack runs at least one container")
        roles_raw = []
    roles = [r for i, raw in enumerate(roles_raw)
             if (r := read_role(p, home, path, text, home.name, raw, i)) is not None]
    seen = [r.name for r in roles]
    for dup in sorted({n for n in seen if seen.count(n) > 1}):
        p.at(path, text, dup, f"two roles are called {dup!r}")
    stack = Stack(
        name=home.name, description=str(doc.get("description", "")), roles=tuple(roles),
        php_api=str(doc.get("php_api", "")), tunables=dict(reader.tunables), parts=tuple(parts),
        aliases=tuple(_strings(p, path, text, doc, "aliases")), smoke=_flag(p, path, text, doc, "smoke"), home=home,
        origin=origin, order=_order(p, path, text, doc), status=tuple(reader.status.values()),
        listen=tuple(reader.listen), error_logs=tuple(reader.error_logs),
        busy_workers=tuple(_strings(p, path, text, doc, "busy_workers")),
        busy_limit=str(doc["busy_limit"]) if isinstance(doc.get("busy_limit"), str) else None,
        protocols=_protocols(p, path, text, doc, parts),
        goaway_after=str(doc["goaway_after"]) if isinstance(doc.get("goaway_after"), str) else None,
        backlog=str(doc["backlog"]) if isinstance(doc.get("backlog"), str) else None,
        accept_limit=str(doc["accept_limit"]) if isinstance(doc.get("accept_limit"), str) else None,
    )
    for key in ("goaway_after", "backlog", "accept_limit"):  # (a part that could not be read is said already)
        if doc.get(key) is not None and getattr(stack, key) not in stack.tunables and not unread:
            p.at(path, text, key, f"{key} {doc[key]!r} is not a tunable of stack {stack.name}")
    checks = [ch for f, t, raw in reader.checks if (ch := _check(p, f, t, raw, stack)) is not None]
    causes = [ca for f, t, raw in reader.causes if (ca := read_cause(p, f, t, raw)) is not None]
    _check_causes(p, path, text, stack, causes, every_role=len(roles) == len(roles_raw))
    _check_busy(p, path, text, stack, doc, unread)
    _check_key_types(p, path, stack)
    stack = replace(stack, checks=tuple(checks), causes=tuple(causes),
                    roles=tuple(_with_versions(r, reader.versions) for r in roles))
    if not p:
        defaults = {k: t.default for k, t in stack.tunables.items()}
        for m in stack.broken_checks(defaults):
            p.at(path, None, None, f"its defaults break its own check: {m}")
        _try_render(p, stack)
    p.raise_if_any(summary=SUMMARY)
    return stack


def _head(p: Problems, path: Path, text: str, doc: dict[str, Any]) -> None:
    """The folder's name (the stack's), the keys known, and the description and PHP API every stack gives."""
    name = path.parent.name
    if not NAME.match(name) or name.endswith(("-", ".", "_")) or ".." in name or name == "all":
        p.at(path, None, None, f"the folder's name {name!r} is the stack's name: use lower-case letters, digits, "
             "'-', '_' and '.', not at the end, and not 'all' (it means every stack)")
    bad = sorted(set(doc) - STACK_KEYS)
    if bad:
        p.at(path, text, bad[0], f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(STACK_KEYS))})")
    for key in ("description", "php_api"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            p.at(path, text, key, f"{key} is missing (a string)")


def _parts(p: Problems, path: Path, text: str, doc: dict[str, Any]) -> tuple[Reader, list[str], bool]:
    """The parts named, read in order, then the stack's own tables over them; whether a part could not be
    read (its tunables are then missing, which is said once)."""
    parts = doc.get("parts", [])
    reader = Reader(p)
    every = configs_dir() / EVERY_STACK
    if every.is_file() and (got := read_toml(every, p)) is not None:
        if extra := sorted(set(got[0]) - {"causes"}):
            p.at(every, got[1], extra[0], f"unknown key(s) {', '.join(extra)} (it holds causes only)")
        reader.read(every, {"causes": got[0].get("causes", [])}, got[1])
    if not isinstance(parts, list) or not all(isinstance(x, str) for x in parts):
        p.at(path, text, "parts", "parts must be a list of part names")
        parts = []
    unread = False
    for part in parts:
        if part not in part_names():
            p.at(path, text, "parts", f"no part {part!r} (there are: {', '.join(part_names())})")
            unread = True
            continue
        ppath = parts_dir() / f"{part}.toml"
        pgot = read_toml(ppath, p)
        unread = unread or pgot is None
        if pgot is not None:
            pdoc, ptext = pgot
            extra = sorted(set(pdoc) - PART_KEYS)
            if extra:
                p.at(ppath, ptext, extra[0],
                     f"unknown key(s) {', '.join(extra)} (known: {', '.join(sorted(PART_KEYS))})")
            reader.read(ppath, pdoc, ptext)
    reader.read(path, doc, text)
    return reader, parts, unread


def _check_causes(p: Problems, path: Path, text: str, stack: Stack, causes: list[Cause], every_role: bool) -> None:
    """Each cause's setting is a tunable of the stack, its columns are its status pages', its keys differ."""
    for cause in causes:
        s = stack.setting_of(cause)
        if s is None and cause.setting is not None and every_role and not any(
                "{" + k + "}" in cause.setting for k in STACK_NAMES):  # (else a role is wrong, and said so)
            p.at(path, text, cause.key, f"cause {cause.key}: its setting {cause.setting!r} names a var no role has")
        elif s is not None and s not in stack.tunables and s.split(".")[0] in stack.sections:
            p.at(path, text, cause.key, f"cause {cause.key}: its setting {cause.setting!r} is not a tunable of "
                 "this stack")
    columns = {col for page in stack.status for col, _ in page.fields}
    keys = [c.key for c in causes]
    for dup in sorted({k for k in keys if keys.count(k) > 1}):
        p.at(path, text, dup, f"two causes are called {dup!r} (a part's and the stack's?): keys must differ")
    for cause in causes:
        for col, said, probe in ((cause.peak, cause.peak_said, {"limit": 1}), (cause.counter, cause.counter_said,
                                                                               {"times": "once"}),
                                 (cause.total, cause.total_said, {"times": "once", "scope": "here",
                                                                            "slow": ""}),
                                 (cause.held, cause.held_said, {"held": 1, "busy": 1, "limit": 1})):
            if col is None:
                continue
            if col not in columns and col is not cause.total:  # a total is the sampler's own column
                p.at(path, text, cause.key, f"cause {cause.key}: {col!r} is not a column of its status pages")
            try:
                said.format(**probe)
            except (KeyError, IndexError, ValueError) as e:
                p.at(path, text, cause.key, f"cause {cause.key}: {said!r} may name only "
                     f"{{{next(iter(probe))}}} ({type(e).__name__}: {e})")


def _check_busy(p: Problems, path: Path, text: str, stack: Stack, doc: dict[str, Any], unread: bool) -> None:
    """`busy_limit` is a whole-number tunable of the stack and `busy_workers` columns of its status pages."""
    columns = {col for page in stack.status for col, _ in page.fields}
    if "busy_limit" in doc:
        given = doc["busy_limit"]
        limit = stack.tunables.get(str(given)) if isinstance(given, str) else None
        why = ("must be a tunable's name (a string)" if not isinstance(given, str) else
               None if limit is None and unread else "is not a tunable of this stack" if limit is None else
               "must be a whole-number tunable (the most workers busy_workers may count)"
               if not isinstance(limit.default, int) or isinstance(limit.default, bool) else
               "needs busy_workers: the status columns it caps" if not stack.busy_workers else None)
        if why:
            p.at(path, text, "busy_limit", f"busy_limit: {given!r} {why}")
    for col in stack.busy_workers:
        if col not in columns:
            p.at(path, text, "busy_workers", f"busy_workers: {col!r} is not a column of its status pages "
                 f"({', '.join(sorted(columns)) or 'it has none'})")


def _with_versions(role: Role, versions: dict[str, str]) -> Role:
    """The part's and stack's version commands, then the role's own (which win)."""
    return replace(role, versions=tuple({**versions, **dict(role.versions)}.items()))


def _strings(p: Problems, path: Path, text: str, doc: dict[str, Any], key: str) -> list[str]:
    v = doc.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        p.at(path, text, key, f"{key} must be a list of strings")
        return []
    return list(v)


def _protocols(p: Problems, path: Path, text: str, doc: dict[str, Any], parts: list[str]) -> tuple[str, ...]:
    """What the stack speaks: known protocols, h1 among them, those over TLS only where it lists the part tls."""
    if "protocols" not in doc:
        return (protocols.DEFAULT,)
    said = _strings(p, path, text, doc, "protocols")
    for wrong in protocols.stack_problems(said, None if TLS_PART in parts else TLS_PART):
        p.at(path, text, "protocols", wrong)
    return tuple(dict.fromkeys(said)) or (protocols.DEFAULT,)


def _order(p: Problems, path: Path, text: str, doc: dict[str, Any]) -> int:
    v = doc.get("order", 100)
    if isinstance(v, bool) or not isinstance(v, int):
        p.at(path, text, "order", "order must be a whole number (where it is listed; ours are 1-99)")
        return 100
    return v


def _flag(p: Problems, path: Path, text: str, doc: dict[str, Any], key: str) -> bool:
    v = doc.get(key, False)
    if not isinstance(v, bool):
        p.at(path, text, key, f"{key} must be true or false")
        return False
    return v


def _check(p: Problems, path: Path, text: str, c: dict[str, Any], stack: Stack) -> Check | None:
    rule, says = c.get("rule"), c.get("says")
    spot = rule if isinstance(rule, str) and rule else "checks"
    if not isinstance(rule, str) or not isinstance(says, str):
        p.at(path, text, spot, "each [[checks]] needs rule (an expression that must hold) and says (a message)")
        return None
    try:
        tree = rules.parse(rule)
        unknown = sorted(rules.names(tree) - set(stack.tunables))
        for m in re.finditer(r"\{([^{}]+)\}", says):
            unknown += sorted(rules.names(rules.parse(m.group(1))) - set(stack.tunables))
    except rules.RuleError as e:
        p.at(path, text, spot, f"check {rule!r}: {e}")
        return None
    if unknown:
        p.at(path, text, spot, f"check {rule!r} reads {', '.join(dict.fromkeys(unknown))}, not tunables of "
              f"stack {stack.name} (are its parts listed?)")
        return None
    return Check(rule, tree, says)


def _check_key_types(p: Problems, path: Path, stack: Stack) -> None:
    """`tls.key` may offer only key types loadcmp can issue (`certs.KEY_TYPES`): found now, not after the
    images are built."""
    tunable = stack.tunables.get(f"{TLS_PART}.key")
    if tunable is None or tunable.choices is None:
        return
    if beyond := [c for c in tunable.choices if c not in KEY_TYPES]:
        p.at(path, None, None, f"{TLS_PART}.key: loadcmp cannot issue {', '.join(map(repr, beyond))} certificates "
                               f"(it makes {', '.join(KEY_TYPES)})")


def _try_render(p: Problems, stack: Stack) -> None:
    """Render every template once with the defaults: a template that breaks is found now, not in a trial."""
    defaults = {k: t.default for k, t in stack.tunables.items()}
    ports = {r.name: 10000 + i for i, r in enumerate(stack.roles)}
    try:
        render.render(stack, render.https_of(stack, defaults, None)[0], ports, nofile=1024)
        if stack.serves_https:  # its TLS lines too, as --tls renders them
            render.render(stack, defaults, ports, nofile=1024, https=STAND_IN)
    except ConfigError as e:
        p.extend(e.messages, f"{stack.home / STACK_FILE if stack.home else Path(stack.name)}: ")
