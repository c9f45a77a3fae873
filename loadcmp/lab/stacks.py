"""The catalog of stacks: ours (`configs/stacks/`) and the user's (`--stacks DIR`,
`LOADCMP_STACKS`, `stacks = [...]` in an experiment file), looked up by name or alias, and
the settings in effect for one of them.

A `Catalog` is a value: `catalog(dirs)` makes the one a spec or a command sees (ours, then
LOADCMP_STACKS', then its own folders), so two specs in one process never see each other's
stacks. A stack is data (`stackfile` reads a folder into a `model.Stack`); nothing here names
a server. Nothing here touches Docker or the network, so all of it is unit-testable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import ConfigError, Problems, UsageError
from ..units import Setting
from .model import Cause, Image, Role, Stack, StatusPage, Tunable, configs_dir, project_root
from .stackfile import STACK_FILE, load_stack

__all__ = ["Catalog", "Cause", "Image", "Role", "Stack", "StatusPage", "Tunable", "configs_dir", "project_root",
           "catalog", "get_stack", "tunables", "all_causes", "parse_overrides", "effective_settings", "status_paths"]


@dataclass(frozen=True, eq=False)
class Catalog:
    """The stacks one spec or one command sees, by name: ours first, then LOADCMP_STACKS', then its own
    folders (`dirs`), in order. Made by `catalog`; held by the spec, never by the process."""

    by_name: Mapping[str, Stack]
    dirs: tuple[Path, ...] = ()
    """The user's folders it was made with (--stacks, `stacks = [...]`), absolute."""

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Iterator[Stack]:
        return iter(self.by_name.values())

    def names(self) -> list[str]:
        return list(self.by_name)

    def aliases(self) -> dict[str, str]:
        """alias -> stack name, from the stacks' `aliases`."""
        return {a: s.name for s in self for a in s.aliases if a not in self.by_name}

    def get(self, name: str) -> Stack:
        """A stack by name or alias; a one-line error lists the valid ones."""
        key = self.aliases().get(name, name)
        if key not in self.by_name:
            valid = ", ".join(self.names() + list(self.aliases()))
            raise UsageError(f"unknown server {name!r}; valid: {valid} (or add your own with --stacks DIR)")
        return self.by_name[key]

    def resolve(self, names: Iterable[str]) -> list[Stack]:
        """Expand 'all', resolve aliases, drop repeats (keeping order)."""
        out: list[Stack] = []
        for n in names:
            for part in (x.strip() for x in n.split(",")):
                for s in (list(self) if part == "all" else [self.get(part)] if part else []):
                    if s not in out:
                        out.append(s)
        return out

    def own(self) -> list[Stack]:
        """The stacks read from its own folders (a stack's folder, or a folder of them)."""
        return [s for s in self if s.home and any(s.home == d or s.home.parent == d for d in self.dirs)]

    def smoke_servers(self) -> list[str]:
        """The stacks `loadcmp smoke` runs when none are named: those whose stack.toml says `smoke = true`."""
        return [s.name for s in self if s.smoke]

    def tunables(self) -> dict[str, Tunable]:
        """Every tunable of every stack (the first stack that defines a key gives its entry)."""
        out: dict[str, Tunable] = {}
        for s in self:
            for k, t in s.tunables.items():
                out.setdefault(k, t)
        return out

    def causes(self) -> tuple[Cause, ...]:
        """Every log cause of every stack, each key once."""
        out: dict[str, Cause] = {}
        for s in self:
            for c in s.causes:
                out.setdefault(c.key, c)
        return tuple(out.values())

    def parse_overrides(self, items: list[str] | tuple[str, ...] | Mapping[str, object],
                        extra: Mapping[str, Tunable] | None = None) -> dict[str, Setting]:
        """`--set k=v` items (or a TOML table) typed by these stacks' tunables; all errors at once. `extra`:
        tunables that are no stack's (the apps' roles', `apps.tunables`)."""
        return _parse_overrides(self, items, extra or {})

    def _parse_any(self, key: str, raw: object, extra: Mapping[str, Tunable]) -> tuple[Setting | None, str | None]:
        """A value as the first stack with this key that takes it (a user's stack may type a key otherwise);
        `Stack.effective` parses it again by each chosen stack's own tunable."""
        first: str | None = None
        if key in extra:
            try:
                return extra[key].parse(raw), None
            except ConfigError as e:
                return None, str(e)
        for s in self:
            if key in s.tunables:
                try:
                    return s.tunables[key].parse(raw), None
                except ConfigError as e:
                    first = first or str(e)
        return None, first


def _stack_folders(d: Path) -> list[Path]:
    """A folder holding stack.toml is a stack; else each sub-folder holding one is."""
    if (d / STACK_FILE).is_file():
        return [d]
    return sorted(p.parent for p in d.glob(f"*/{STACK_FILE}"))


def catalog(dirs: Iterable[str | Path] = ()) -> Catalog:
    """The stacks seen with these folders of the user's (a stack's own folder, or a folder of them) beside
    ours and LOADCMP_STACKS'; every problem at once. The stacks are read and checked now (once per
    process for the same folders), so that a mistake stops the command before anything starts."""
    p = Problems()
    found: list[Path] = []
    for raw in dirs:
        d = Path(raw).expanduser()
        if not d.is_dir():
            p.add(f"--stacks {raw}: no such folder")
        elif not _stack_folders(d):
            p.add(f"--stacks {raw}: no {STACK_FILE} in it or in its sub-folders")
        else:
            found.append(d.resolve())
    p.raise_if_any(summary="{n} bad --stacks")
    own = tuple(dict.fromkeys(found))
    return Catalog(_catalog((configs_dir() / "stacks", *_env_dirs(), *own)), own)


def _env_dirs() -> list[Path]:
    raw = os.environ.get("LOADCMP_STACKS", "")
    return [Path(x).expanduser().resolve() for x in raw.split(os.pathsep) if x.strip()]


@cache
def _catalog(dirs: tuple[Path, ...]) -> dict[str, Stack]:
    """Every stack of these folders by name (the first is ours); a user's stack may not take the name of
    another one (rename its folder)."""
    out: dict[str, Stack] = {}
    p = Problems()
    builtin = dirs[0]
    for d in dirs:
        if d != builtin and not d.is_dir():
            p.add(f"LOADCMP_STACKS: {d} is not a folder")
            continue
        found: list[Stack] = []
        for home in _stack_folders(d):
            try:
                found.append(load_stack(home, "built-in" if d == builtin else str(d)))
            except ConfigError as e:
                p.take(e)
        for stack in sorted(found, key=lambda s: (s.order, s.name)):
            if stack.name in out and out[stack.name].home == stack.home:
                continue  # the same folder reached twice (LOADCMP_STACKS and --stacks, a folder and its parent)
            taken = next((s.name for s in out.values() if stack.name in s.aliases), None)
            if taken:
                p.add(f"{stack.home}: {stack.name!r} is another name of the stack {taken!r}; rename the folder")
                continue
            if stack.name in out:
                p.add(f"{stack.home}: a stack called {stack.name!r} exists already ({out[stack.name].home}); "
                      "rename the folder")
                continue
            out[stack.name] = stack
    p.raise_if_any(summary="{n} problems in stack files")
    return out


# --- without a spec: ours and LOADCMP_STACKS' --------------------------------------


def get_stack(name: str) -> Stack:
    """One of our stacks or LOADCMP_STACKS' by name or alias (a spec's own: `RunSpec.catalog().get`)."""
    return catalog().get(name)


def tunables() -> dict[str, Tunable]:
    """Every tunable of our stacks and LOADCMP_STACKS'."""
    return catalog().tunables()


def all_causes() -> tuple[Cause, ...]:
    """Every log cause of our stacks and LOADCMP_STACKS', each key once."""
    return catalog().causes()


def parse_overrides(items: list[str] | tuple[str, ...] | Mapping[str, object],
                    extra: Mapping[str, Tunable] | None = None) -> dict[str, Setting]:
    """`Catalog.parse_overrides` on our stacks and LOADCMP_STACKS' (an app's `set`)."""
    return catalog().parse_overrides(items, extra)


def _flat(table: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """TOML reads an unquoted nginx.worker_connections = 2000 as a nested table: the same setting."""
    for k, v in table.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def _parse_overrides(cat: Catalog, items: list[str] | tuple[str, ...] | Mapping[str, object],
                     extra: Mapping[str, Tunable]) -> dict[str, Setting]:
    known = {**cat.tunables(), **extra}
    pairs: list[tuple[str, object]] = []
    p = Problems()
    if isinstance(items, dict):
        pairs = list(_flat(items))
    else:
        for item in items:
            if "=" not in item:
                p.add(f"--set {item!r}: expected KEY=VALUE, e.g. prefork.MaxRequestWorkers=500")
                continue
            k, text = item.split("=", 1)
            pairs.append((k.strip(), text))
    out: dict[str, Setting] = {}
    lower = {k.lower(): k for k in known}
    for k, v in pairs:
        key = known.get(k) and k or lower.get(k.lower())
        if key is None:
            near = [x for x in known if x.split(".")[-1].lower() == k.split(".")[-1].lower()]
            hint = f" (did you mean {', '.join(near)}?)" if near else "; see `loadcmp servers --tunables`"
            p.add(f"unknown setting {k!r}{hint}")
            continue
        out_v, err = cat._parse_any(key, v, extra)
        if err is not None:
            p.add(err)
        elif out_v is not None:  # always, when no error: a key in `known` is some stack's or in `extra`
            out[key] = out_v
    p.raise_if_any(summary=f"{len(p)} bad settings: " + "; ".join(p.messages))
    return out


def effective_settings(stack: Stack, overrides: Mapping[str, object]) -> dict[str, Setting]:
    """The values in effect for a stack (`Stack.effective`)."""
    return stack.effective(overrides)


def status_paths(stack: Stack) -> dict[str, str]:
    """Status pages reachable through the front port: kind -> path."""
    return {page.kind: page.path for page in stack.status}
