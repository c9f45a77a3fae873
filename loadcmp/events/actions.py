"""What an event does on a stack, read from the stack's data, never from Python.

A part (`configs/parts/<part>.toml`) or a stack file gains a table per action, the stack file's over its
parts' (as its other tables are laid over them):

    [events.reload]
    exec = ["nginx", "-c", "/etc/loadcmp/nginx.conf", "-s", "reload"]   # run in the role's container
    role = "web"                                                        # optional: the front role
    evidence = 'signal process started|reconfiguring'                   # the server's lines about it
    settings = ["nginx", "h2", "tls"]                                   # the tunables' sections it puts in effect

    [events.restart]
    docker = "restart"                                                  # Docker restarts the role's container

Besides a stack's own actions every stack has the generic `pause ROLE DURATION` (Docker's pause, then
unpause) and `restart ROLE` (Docker's restart of that role's container), and `set KEY=VALUE`: the configs
rendered again with the tunable changed, copied in (`events.change`), then the first of its actions whose
`settings` name KEY's section done.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError
from ..lab.stackfile import STACK_FILE, parts_dir
from ..lab.stacks import Stack
from ..units import Setting
from .plan import PAUSE, Asked, timing_problems

KEYS = {"exec", "docker", "role", "evidence", "settings"}
DOCKER = ("restart",)
"""What `docker = ...` may ask of a role's container."""
RESTART = "restart"
SET = "set"


@dataclass(frozen=True)
class Action:
    """One action on one role of a stack: a command exec'd in its container, or Docker's own call."""

    name: str
    role: str
    exec: tuple[str, ...] = ()
    docker: str | None = None  #: "restart" or "pause" (Docker's), None: `exec`
    hold: float = 0.0  #: a pause's duration in seconds
    evidence: str | None = None  #: a regex of the servers' lines about it
    change: tuple[str, Setting] | None = None  #: `set KEY=VALUE`: the tunable changed before the action


def table_problems(where: str, table: object) -> list[str]:
    """What is wrong with one file's `[events]` tables, in words (nothing: well-formed)."""
    if not isinstance(table, dict):
        return [f"{where}: events must be tables ([events.ACTION])"]
    out = []
    for name, t in table.items():
        at = f"{where}: [events.{name!r}]" if " " in name else f"{where}: [events.{name}]"
        if not isinstance(t, dict):
            out.append(f"{at} must be a table with exec or docker")
            continue
        if bad := sorted(set(t) - KEYS):
            out.append(f"{at}: unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(KEYS))})")
        cmd, dock = t.get("exec"), t.get("docker")
        if (cmd is None) == (dock is None):
            out.append(f"{at}: give exec (a command) or docker ({', '.join(DOCKER)}), one of them")
        if cmd is not None and not (isinstance(cmd, list) and cmd and all(isinstance(x, str) and x for x in cmd)):
            out.append(f"{at}: exec must be a command as a list of strings")
        if dock is not None and dock not in DOCKER:
            out.append(f"{at}: docker must be one of {', '.join(DOCKER)}")
        if not isinstance(t.get("role", ""), str):
            out.append(f"{at}: role must be a role's name")
        if not (isinstance(sec := t.get("settings", []), list) and all(isinstance(x, str) for x in sec)):
            out.append(f"{at}: settings must be a list of the tunables' sections it puts in effect")
        try:
            re.compile(t.get("evidence") or "")
        except (re.error, TypeError) as e:
            out.append(f"{at}: evidence is not a regex ({e})")
        if name.split()[0] in (PAUSE, SET):
            out.append(f"{at}: {name.split()[0]} is every stack's own (pause ROLE DURATION, set KEY=VALUE)")
    return out


@cache
def _file_table(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """One file's `[events]` and what is wrong with them (a table with a problem is not used)."""
    try:
        table = tomllib.loads(path.read_text()).get("events", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}, ()  # the stack's reader says what is wrong with the file itself
    bad = tuple(table_problems(str(path), table))
    return (table if not bad else {}), bad


def data_problems(stack: Stack) -> list[str]:
    """What is wrong with the `[events]` of a stack's files, in words."""
    return [x for path in files_of(stack) for x in _file_table(path)[1]]


def files_of(stack: Stack) -> list[Path]:
    """The files whose `[events]` make a stack's: its parts in order, then its own file."""
    out = [parts_dir() / f"{p}.toml" for p in stack.parts]
    return out + ([stack.home / STACK_FILE] if stack.home is not None else [])


def stack_table(stack: Stack) -> dict[str, dict[str, Any]]:
    """A stack's actions as its data gives them (the stack file's over its parts')."""
    out: dict[str, dict[str, Any]] = {}
    for path in files_of(stack):
        out.update(_file_table(path)[0])
    return out


def names(stack: Stack) -> list[str]:
    """The actions a stack has, its own and the generic ones."""
    roles = [r.name for r in stack.roles]
    return [*stack_table(stack), *(f"{RESTART} {r}" for r in roles), *(f"{PAUSE} {r} DURATION" for r in roles),
            *([f"{SET} KEY=VALUE"] if any(t.get("settings") for t in stack_table(stack).values()) else [])]


def resolve(stack: Stack, asked: Asked) -> Action:
    """The action an event asks of this stack; UsageError in one line when its data has none."""
    roles = [r.name for r in stack.roles]
    own = stack_table(stack).get(asked.action)
    if own is not None:
        role = own.get("role") or stack.front.name
        if role not in roles:
            raise UsageError(f"{stack.name}: [events.{asked.action}] names the role {role!r}, which it does not have")
        return Action(asked.action, role, tuple(own.get("exec", ())), own.get("docker"), 0.0, own.get("evidence"))
    head, rest = asked.words[0], asked.words[1:]
    if head == SET:
        return _set(stack, asked)
    if head in (PAUSE, RESTART) and len(rest) >= 1 and rest[0] in roles and (head == PAUSE or len(rest) == 1):
        return Action(asked.action, rest[0], docker=head, hold=asked.hold)
    if head in (PAUSE, RESTART) and rest:
        raise UsageError(f"--event {asked.text!r}: {stack.name} has no role {rest[0]!r} (it has: {', '.join(roles)})")
    raise UsageError(f"--event {asked.text!r}: {stack.name} has no command for {asked.action!r} in its data "
                     f"(it has: {', '.join(names(stack))})")


def _set(stack: Stack, asked: Asked) -> Action:
    """`set KEY=VALUE`: KEY one of the stack's tunables, VALUE one it takes, and an action of its data that puts
    KEY's section in effect (its `settings`); UsageError in one line otherwise."""
    item = " ".join(asked.words[1:])
    key, eq, raw = item.partition("=")
    key = key.strip()
    if len(asked.words) != 2 or not eq or not key:
        raise UsageError(f"--event {asked.text!r}: 'set KEY=VALUE', e.g. '5s set nginx.keepalive_timeout=10'")
    if key not in stack.tunables:
        raise UsageError(f"--event {asked.text!r}: {stack.name} has no setting {key!r} (`loadcmp servers` lists "
                         "each stack's)")
    try:
        value = stack.tunables[key].parse(raw)
    except ConfigError as e:
        raise UsageError(f"--event {asked.text!r}: {e}") from None
    section = key.split(".", 1)[0]
    found = next(((n, t) for n, t in stack_table(stack).items() if section in (t.get("settings") or [])), None)
    if found is None:
        raise UsageError(f"--event {asked.text!r}: no action in {stack.name}'s data puts its {section}.* settings "
                         "in effect (an [events] table's settings)")
    done = resolve(stack, Asked(asked.text, tuple(found[0].split()), asked.at, asked.every))
    return Action(f"{SET} {key}={value}", done.role, done.exec, done.docker, 0.0, done.evidence, (key, value))


def spec_problems(texts: Iterable[str], stacks: Mapping[str, Stack], window: float) -> list[str]:
    """Every problem of a run's events at once: each read, inside the window, and each label's stack able to do
    it (label -> its stack)."""
    from .plan import parse

    out = list(dict.fromkeys(x for stack in stacks.values() for x in data_problems(stack)))
    for text in texts:
        try:
            asked = parse(text)
        except UsageError as e:
            out.append(str(e))
            continue
        out += timing_problems(asked, window)
        for label, stack in stacks.items():
            try:
                resolve(stack, asked)
            except UsageError as e:
                out.append(str(e) if label == stack.name else f"{label}: {e}")
    return out
