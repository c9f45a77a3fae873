"""Docker's calls of an event, each held to a time limit, and a container left frozen thawed through its cgroup.

docker-py waits up to its client's timeout (minutes) for the engine's answer, and the engine can hang on a
container: a `docker unpause` of a cgroup v1 container whose freezer did not finish freezing never returns, and
every later call on that container hangs with it until the cgroup is thawed. So each call an event makes runs in
a thread of its own and is given up after its limit (`LabError`, said in one line: the event failed, the run goes
on). When a pause's unpause is given up, the container's freezer is thawed here through its cgroup file (on this
machine's engine; another machine's files cannot be reached from here), so nothing stays frozen past its trial.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import LabError

T = TypeVar("T")

CALL_S = 20.0
"""How long one Docker call of an event (an exec's start, a pause, a config copy) may take before it is given up."""
PAUSE_S = 5.0
"""How long Docker's pause or unpause may take (it takes well under a second when nothing holds it)."""
EXEC_S = 60.0
"""How long a command exec'd by an event may run (a reload that waits for its children)."""
CG = Path("/sys/fs/cgroup")
FROZEN = ("FROZEN", "FREEZING")


def call(what: str, fn: Callable[[], T], limit: float | None = None) -> T:
    """`fn()`'s result, or LabError when it did not return within `limit` seconds (it is left to end in its own
    thread: a call the engine never answers cannot be cancelled from here). Its own error is raised as it was.
    `limit`: CALL_S when not given."""
    limit = CALL_S if limit is None else limit
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread as it was
            box["error"] = e

    t = threading.Thread(target=run, name=f"loadcmp-event-{what}", daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        raise LabError(f"{what} did not return within {limit:g} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]  # a BaseException, kept from the call
    return box["value"]  # type: ignore[return-value]  # fn's T


def freezer_files(cid: str) -> list[Path]:
    """A container's freezer files on this machine, where they are: cgroup v1's `freezer.state` (cgroupfs or
    systemd's driver), cgroup v2's `cgroup.freeze`."""
    places = [CG / "freezer" / "docker" / cid / "freezer.state",
              CG / "freezer" / "system.slice" / f"docker-{cid}.scope" / "freezer.state",
              CG / "docker" / cid / "cgroup.freeze", CG / "system.slice" / f"docker-{cid}.scope" / "cgroup.freeze"]
    return [p for p in places if p.exists()]


def thaw(cid: str) -> str:
    """Thaw a container through its cgroup where it is frozen or freezing (the engine left it so); in words, what
    was found and done."""
    files = freezer_files(cid)
    if not files:
        return "its freezer cgroup was not found here"
    was = [f.read_text().strip() for f in files]
    if not any(x in FROZEN or x == "1" for x in was):
        return "it was not left frozen"
    for f in files:
        f.write_text("THAWED" if f.name == "freezer.state" else "0")
    now = [f.read_text().strip() for f in files]
    if any(x in FROZEN or x == "1" for x in now):
        return f"its cgroup could not be thawed ({', '.join(now)})"
    return f"it was left {', '.join(was).lower()}: loadcmp thawed its cgroup"
