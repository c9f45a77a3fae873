"""The catalog of stacks: ours (`configs/stacks/`) and the user's (`--stacks DIR`,
`LOADCMP_STACKS`, `stacks = [...]` in an experiment file), looked up by name or alias, and
the settings in effect for one of them.

A stack is data (`stackfile` reads a folder into a `model.Stack`); nothing here names a
server. Nothing here touches Docker or the network, so all of it is unit-testable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError
from .model import Cause, Image, Role, Stack, StatusPage, Tunable, configs_dir, project_root
from .stackfile import STACK_FILE, load_stack

__all__ = ["Cause", "Image", "Role", "Stack", "StatusPage", "Tunable", "configs_dir", "project_root", "add_stack_dirs",
           "catalog", "get_stack", "resolve_servers", "stack_names", "tunables", "parse_overrides",
           "effective_settings", "status_paths"]

_extra: list[Path] = []
"""Folders of the user's stacks added by --stacks or an experiment file, in order."""


def _stack_folders(d: Path) -> list[Path]:
    """A folder holding stack.toml is a stack; else each sub-folder holding one is."""
    if (d / STACK_FILE).is_file():
        return [d]
    return sorted(p.parent for p in d.glob(f"*/{STACK_FILE}"))


def add_stack_dirs(dirs: list[str] | tuple[str, ...] | list[Path]) -> list[Stack]:
    """Add the user's stack folders (a stack's own folder, or a folder of them); every problem at once.

    The stacks are read and checked now, so that a mistake stops the command before anything starts."""
    errs: list[str] = []
    found: list[Path] = []
    for raw in dirs:
        d = Path(raw).expanduser()
        if not d.is_dir():
            errs.append(f"--stacks {raw}: no such folder")
        elif not _stack_folders(d):
            errs.append(f"--stacks {raw}: no {STACK_FILE} in it or in its sub-folders")
        else:
            found.append(d.resolve())
    if errs:
        raise UsageError(errs[0]) if len(errs) == 1 else ConfigError(f"{len(errs)} bad --stacks", errs)
    added = [*_extra, *(d for d in dict.fromkeys(found) if d not in _extra)]
    cat = _catalog(tuple([configs_dir() / "stacks", *_env_dirs(), *added]))  # a bad stack is refused whole
    _extra[:] = added
    return [s for s in cat.values() if s.home and any(s.home == d or s.home.parent == d for d in found)]


def reset_stack_dirs() -> None:
    """Forget the user's folders (tests; a long-lived process that runs several experiments)."""
    _extra.clear()


def _env_dirs() -> list[Path]:
    raw = os.environ.get("LOADCMP_STACKS", "")
    return [Path(x).expanduser().resolve() for x in raw.split(os.pathsep) if x.strip()]


def catalog() -> dict[str, Stack]:
    """Every stack by name: ours first, then LOADCMP_STACKS', then those added, in order.

    A user's stack may not take the name of another one (rename its folder)."""
    return _catalog(tuple([configs_dir() / "stacks", *_env_dirs(), *_extra]))


@cache
def _catalog(dirs: tuple[Path, ...]) -> dict[str, Stack]:
    out: dict[str, Stack] = {}
    errs: list[str] = []
    builtin = dirs[0]
    for d in dirs:
        if d != builtin and not d.is_dir():
            errs.append(f"LOADCMP_STACKS: {d} is not a folder")
            continue
        found: list[Stack] = []
        for home in _stack_folders(d):
            try:
                found.append(load_stack(home, "built-in" if d == builtin else str(d)))
            except ConfigError as e:
                errs.extend(e.errors)
        for stack in sorted(found, key=lambda s: (s.order, s.name)):
            if stack.name in out and out[stack.name].home == stack.home:
                continue  # the same folder reached twice (LOADCMP_STACKS and --stacks, a folder and its parent)
            taken = next((s.name for s in out.values() if stack.name in s.aliases), None)
            if taken:
                errs.append(f"{stack.home}: {stack.name!r} is another name of the stack {taken!r}; rename the folder")
                continue
            if stack.name in out:
                errs.append(f"{stack.home}: a stack called {stack.name!r} exists already ({out[stack.name].home}); "
                            "rename the folder")
                continue
            out[stack.name] = stack
    if errs:
        raise ConfigError(errs[0] if len(errs) == 1 else f"{len(errs)} problems in stack files", errs)
    return out


def aliases() -> dict[str, str]:
    """alias -> stack name, from the stacks' `aliases`."""
    return {a: s.name for s in catalog().values() for a in s.aliases if a not in catalog()}


def stack_names() -> list[str]:
    return list(catalog())


def get_stack(name: str) -> Stack:
    """Look a stack up by name or alias; a one-line error lists the valid ones."""
    cat = catalog()
    key = aliases().get(name, name)
    if key not in cat:
        valid = ", ".join(list(cat) + list(aliases()))
        raise UsageError(f"unknown server {name!r}; valid: {valid} (or add your own with --stacks DIR)")
    return cat[key]


def resolve_servers(names: list[str] | tuple[str, ...]) -> list[Stack]:
    """Expand 'all', resolve aliases, drop repeats (keeping order)."""
    out: list[Stack] = []
    for n in names:
        for part in n.split(","):
            part = part.strip()
            if not part:
                continue
            chosen = list(catalog().values()) if part == "all" else [get_stack(part)]
            for s in chosen:
                if s not in out:
                    out.append(s)
    return out


def smoke_servers() -> list[str]:
    """The stacks `loadcmp smoke` runs when none are named: those whose stack.toml says `smoke = true`."""
    return [s.name for s in catalog().values() if s.smoke]


# --- tunables -----------------------------------------------------------------


def tunables() -> dict[str, Tunable]:
    """Every tunable of every stack in the catalog (the first stack that defines a key gives its entry)."""
    out: dict[str, Tunable] = {}
    for s in catalog().values():
        for k, t in s.tunables.items():
            out.setdefault(k, t)
    return out


def all_causes() -> tuple[Cause, ...]:
    """Every log cause of every stack, each key once."""
    out: dict[str, Cause] = {}
    for s in catalog().values():
        for c in s.causes:
            out.setdefault(c.key, c)
    return tuple(out.values())


def _parse_any(key: str, raw: Any, extra: Mapping[str, Tunable]) -> tuple[Any, str | None]:
    """A value as the first stack with this key that takes it (a user's stack may type a key otherwise);
    `Stack.effective` parses it again by each chosen stack's own tunable."""
    first: str | None = None
    if key in extra:
        try:
            return extra[key].parse(raw), None
        except ConfigError as e:
            return None, str(e)
    for s in catalog().values():
        if key in s.tunables:
            try:
                return s.tunables[key].parse(raw), None
            except ConfigError as e:
                first = first or str(e)
    return None, first


def _flat(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """TOML reads an unquoted nginx.worker_connections = 2000 as a nested table: the same setting."""
    for k, v in table.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def parse_overrides(items: list[str] | tuple[str, ...] | dict[str, Any],
                    extra: Mapping[str, Tunable] | None = None) -> dict[str, Any]:
    """`--set k=v` items (or a TOML table) into typed values; all errors at once. `extra`: tunables that
    are no stack's (the apps' roles', `apps.tunables`)."""
    extra = extra or {}
    known = {**tunables(), **extra}
    pairs: list[tuple[str, Any]] = []
    errors: list[str] = []
    if isinstance(items, dict):
        pairs = list(_flat(items))
    else:
        for item in items:
            if "=" not in item:
                errors.append(f"--set {item!r}: expected KEY=VALUE, e.g. prefork.MaxRequestWorkers=500")
                continue
            k, v = item.split("=", 1)
            pairs.append((k.strip(), v))
    out: dict[str, Any] = {}
    lower = {k.lower(): k for k in known}
    for k, v in pairs:
        key = known.get(k) and k or lower.get(k.lower())
        if key is None:
            near = [x for x in known if x.split(".")[-1].lower() == k.split(".")[-1].lower()]
            hint = f" (did you mean {', '.join(near)}?)" if near else "; see `loadcmp servers --tunables`"
            errors.append(f"unknown setting {k!r}{hint}")
            continue
        out_v, err = _parse_any(key, v, extra)
        if err is None:
            out[key] = out_v
        else:
            errors.append(err)
    if errors:
        raise ConfigError(errors[0] if len(errors) == 1 else f"{len(errors)} bad settings: " + "; ".join(errors),
                          errors)
    return out


def effective_settings(stack: Stack, overrides: dict[str, Any]) -> dict[str, Any]:
    """The values in effect for a stack (`Stack.effective`)."""
    return stack.effective(overrides)


def status_paths(stack: Stack) -> dict[str, str]:
    """Status pages reachable through the front port: kind -> path."""
    return {page.kind: page.path for page in stack.status}
