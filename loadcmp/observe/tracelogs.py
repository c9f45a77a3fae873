"""--trace: each role's trace logs read in its container after the window, then emptied for the next trial.

The stacks' templates write them (`loadcmp.trace.serverlogs.LOG_GLOB`) when the override `trace` is on; nginx
buffers its lines a second, so the read waits that out first, and lighttpd is told to flush its own; a role's
own scripts (`serverlogs.DUMPS`: an app's database, from what it keeps in memory) write theirs. Emptying
the files (not removing them: the servers keep them open, appending) leaves a kept server's next trial only its
own lines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import LabError
from ..lab.containers import Deployment
from ..lab.dockerapi import demuxed_of
from ..trace.serverlogs import DUMPS, FLUSH, LOG_GLOB, Parsed, ServerLine, parse, program_of

FLUSH_S = 1.2
"""nginx's `flush=1s` and a margin: its buffered lines are in the file after this."""

MAX_BYTES = 256 << 20
"""The most read of one trace log (about 2.5 million nginx lines)."""

READ = ('{dumps}{flush}for f in {glob}; do [ -f "$f" ] || continue; printf "=== %s\\n" "$f"; tail -c {max} "$f"; '
        ': > "$f"; done')
"""Run in each role's container: the role's own scripts that write a trace log run, the buffering programs told to
flush, then every trace log, headed by its path, then emptied."""

DUMP = 'for s in {dumps}; do [ -f "$s" ] && sh "$s"; done; '.replace("{dumps}", DUMPS)
"""Each of a role's scripts that write its trace log (`serverlogs.DUMPS`), run first."""


def flush_first() -> str:
    """The shell that makes each buffering program whose trace log is there write it out (`serverlogs.FLUSH`)."""
    return "".join(f'[ -f /tmp/loadcmp-trace-{p}.log ] && {cmd} 2>/dev/null && sleep 0.3; '
                   for p, cmd in FLUSH.items())


@dataclass
class TraceLines:
    """A trial's trace lines from every role, and what could not be read."""

    lines: list[ServerLine] = field(default_factory=list)
    unreadable: int = 0
    untraced: int = 0
    warnings: list[str] = field(default_factory=list)


def split_files(text: str) -> dict[str, list[str]]:
    """READ's output as each file's lines, by path."""
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("=== /"):
            cur = out.setdefault(line[4:], [])
        elif cur is not None:
            cur.append(line)
    return out


def read_trace_lines(dep: Deployment, wait: float = FLUSH_S) -> TraceLines:
    """Every role's trace lines (each role's container asked once), parsed; a container that does not answer
    is a warning."""
    import docker

    time.sleep(wait)
    out = TraceLines()
    script = (READ.replace("{dumps}", DUMP).replace("{flush}", flush_first()).replace("{glob}", LOG_GLOB)
              .replace("{max}", str(MAX_BYTES)))
    for role in dep.stack.roles:
        try:
            res = dep.container_of(role.name).exec_run(["sh", "-c", script], demux=True)
        except (docker.errors.APIError, OSError, LabError) as e:
            out.warnings.append(f"--trace: the {role.name} container's trace logs could not be read ({e})")
            continue
        text, _ = demuxed_of(res)
        for path, lines in split_files((text or b"").decode(errors="replace")).items():
            program = program_of(path)
            if program is None:
                continue
            got: Parsed = parse(program, role.name, lines)
            out.lines += got.lines
            out.unreadable += got.unreadable
            out.untraced += got.untraced
            out.warnings += [f"--trace: {role.name}: {n}" for n in got.notes]
    if not out.lines:
        out.warnings.append("--trace: no server wrote a trace line in this trial (is its config the stack's own, "
                            "with the trace log?)")
    return out
