"""The events of one trial fired beside its load, timed on the load's clock, and quoted from the servers' logs.

`Firer.start` waits in a thread of its own for each event's time (CLOCK_MONOTONIC, the load client's `t0`
clock) and runs each in a thread (Docker's calls block: a restart takes seconds, and the next event stays on
time). `Firer.finish`, after the load, waits for those still running and reads the servers' lines of each
event's time (`lab.Deployment.log_lines`) for its evidence: what its command printed, then the lines its
action's `evidence` pattern matches. An event that fails is said in one line (`EventDoc.said`); the load goes on.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import ConfigError, LabError
from ..facts import EventDoc
from ..lab.dockerapi import engine_errors, id_of, output_of
from . import bounded, change
from .actions import Action, resolve
from .plan import Asked, parse

if TYPE_CHECKING:
    from ..lab.containers import Deployment
    from ..lab.stacks import Stack

clock = time.monotonic
BACK_S = 30.0
"""How long a restarted container may take to be running again before the event failed."""
LOG_AFTER_S = 2.0
"""Seconds after an event's end whose log lines may still be about it (a graceful restart's children)."""
EARLY_S = 0.1
"""A line stamped this much before an event's start may still be its own (Docker's clock against the load's)."""
QUOTES = 4
"""The most lines quoted per event."""
LATE_S = 0.1
"""An event fired more than this after its time says how late it was (`EventDoc.late`) among the trial's warnings."""

Planned = tuple[float, Asked, Action]
Told = Callable[[EventDoc, bool], None]
"""Told of each event as it is fired (True: still running, its end not known) and as it ends (the live page)."""


def plan(texts: tuple[str, ...], stack: Stack, window: float) -> list[Planned]:
    """Each firing of a run's events on this stack, in time order (the spec was validated: no error here)."""
    out = []
    for text in texts:
        asked = parse(text)
        action = resolve(stack, asked)
        out += [(at, asked, action) for at in asked.times(window)]
    return sorted(out, key=lambda x: x[0])


def run_action(dep: Deployment, a: Action, cut: threading.Event) -> tuple[bool, str | None, str]:
    """Do one action now: (ok, why not in one line, what its command printed). A pause holds until its duration
    passed or `cut` is set (the load ended: a paused container never outlives its trial). Each Docker call is
    held to a limit (`bounded`): one the engine never answers fails the event, and the run goes on."""
    c = dep.container_of(a.role)
    try:
        with engine_errors(dep.host.name):
            if a.change is not None:  # `set KEY=VALUE`: the configs first, then the action that reads them
                key, value = a.change
                bounded.call("copying the configs in", lambda: change.apply(dep, key, value))
            if a.docker is None:
                res = bounded.call(f"{a.exec[0]} in the {a.role} container", lambda: c.exec_run(list(a.exec)),
                                   bounded.EXEC_S)
                out = output_of(res).decode("utf-8", "replace")
                if res.exit_code != 0:
                    last = next((x for x in reversed(out.splitlines()) if x.strip()), "")
                    return False, f"{' '.join(a.exec)} exited {res.exit_code}" + (f": {last}" if last else ""), out
                return True, None, out
            if a.docker == "pause":
                return _pause(dep, a, cut)
            bounded.call(f"docker restart of the {a.role} container", lambda: c.restart(timeout=10),
                         bounded.CALL_S + 10)
            return _back(dep, a)
    except (LabError, ConfigError) as e:
        return False, str(e), ""


def _pause(dep: Deployment, a: Action, cut: threading.Event) -> tuple[bool, str | None, str]:
    """Docker's pause of the role's container, held, then its unpause. A pause or an unpause that failed or that the
    engine did not answer in time fails the event, and the container is thawed through its cgroup where it was left
    frozen (`bounded.thaw`: a `docker exec` caught starting in it as it froze holds the engine's unpause), then
    waited for until Docker sees it running again."""
    c = dep.container_of(a.role)
    for call, hold in ((c.pause, a.hold), (c.unpause, 0.0)):
        try:
            with engine_errors(dep.host.name):
                bounded.call(f"docker {call.__name__} of the {a.role} container", call, bounded.PAUSE_S)
        except LabError as e:
            thawed = bounded.thaw(id_of(c))
            back, why, _ = _back(dep, a, bounded.PAUSE_S * 2)
            if not back and c.attrs.get("State", {}).get("Status") == "paused":  # thawed, but Docker's state not
                back, why, _ = _unpaused(dep, a)
            if call == c.pause:
                _unpause_late(dep, a)
            return False, f"{e}; {thawed}" + ("" if back else f"; {why}"), ""
        cut.wait(hold)
    return _back(dep, a)


LATE_PAUSE_S = 60.0
"""How long a pause given up is watched for: the engine may still carry it out in its own thread after that."""


def _unpause_late(dep: Deployment, a: Action, watch: float = LATE_PAUSE_S) -> None:
    """A pause given up may still be carried out by the engine later: for `watch` seconds a thread looks at the
    container, and one Docker then calls paused is thawed and unpaused again, so that it is not left paused for
    the trials after this one."""
    def run() -> None:
        until = clock() + watch
        while clock() < until:
            time.sleep(0.2)
            c = dep.container_of(a.role)
            try:
                with engine_errors(dep.host.name):
                    bounded.call(f"docker inspect of the {a.role} container", c.reload, bounded.PAUSE_S)
            except LabError:
                continue
            if c.attrs.get("State", {}).get("Status") == "paused":
                bounded.thaw(id_of(c))
                _unpaused(dep, a)
                return

    threading.Thread(target=run, name=f"loadcmp-event-unpause-{a.role}", daemon=True).start()


def _unpaused(dep: Deployment, a: Action) -> tuple[bool, str | None, str]:
    """Docker's unpause asked again of a container thawed by its cgroup that Docker still calls paused."""
    c = dep.container_of(a.role)
    try:
        with engine_errors(dep.host.name):
            bounded.call(f"a second docker unpause of the {a.role} container", c.unpause, bounded.PAUSE_S)
    except LabError as e:
        return False, str(e), ""
    return _back(dep, a, bounded.PAUSE_S)


def _back(dep: Deployment, a: Action, limit: float = BACK_S) -> tuple[bool, str | None, str]:
    """Whether the role's container is running again (within `limit` seconds), as Docker sees it."""
    c, until = dep.container_of(a.role), clock() + limit
    while True:
        try:
            with engine_errors(dep.host.name):
                bounded.call(f"docker inspect of the {a.role} container", c.reload)
        except LabError as e:
            return False, str(e), ""
        status = c.attrs.get("State", {}).get("Status")
        if status == "running":
            return True, None, ""
        if clock() > until:
            return False, f"the {a.role} container was not back within {limit:g} s (Docker says {status})", ""
        time.sleep(0.1)


class Firer:
    """Fires one trial's planned events from `t0` (the window's start on `clock`), and keeps what each did."""

    def __init__(self, dep: Deployment, planned: list[Planned], t0: float, wall0: float,
                 run: Callable[[Deployment, Action, threading.Event], tuple[bool, str | None, str]] = run_action,
                 told: Told | None = None) -> None:
        self.dep, self.planned, self.t0, self.wall0, self.run = dep, planned, t0, wall0, run
        self.told = told
        self.done: list[tuple[EventDoc, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._timer = threading.Thread(target=self._schedule, name="loadcmp-events", daemon=True)

    def start(self) -> None:
        if self.planned:
            self._timer.start()

    def _schedule(self) -> None:
        for at, asked, action in self.planned:
            before = cpu_wait()
            if self._stop.wait(max(0.0, self.t0 + at - clock())):
                return  # the load ended first (a stop request): the rest are not fired
            waited = None if before is None else cpu_wait(before)  # this thread's wait for a CPU as it woke
            t = threading.Thread(target=self._fire, args=(at, asked, action, waited), daemon=True)
            self._threads.append(t)
            t.start()

    def _fire(self, at: float, asked: Asked, a: Action, waited: float | None) -> None:
        start = clock() - self.t0
        late = lateness(start - at, waited)
        self._tell(EventDoc(asked=asked.text, action=a.name, role=a.role, at_s=round(at, 3), start_s=round(start, 3),
                            end_s=round(start, 3), ok=True, said=None, evidence=[]), True)
        try:
            ok, said, out = self.run(self.dep, a, self._stop)
        except LabError as e:
            ok, said, out = False, str(e), ""
        except Exception as e:  # noqa: BLE001 - an unforeseen error (Docker's client, a bug) is this event's
            # failure, said in one line; uncaught it would end the thread and the event would vanish from the trial
            first = next((x for x in str(e).splitlines() if x.strip()), "")
            ok, said, out = False, f"{type(e).__name__}" + (f": {first.strip()}" if first else ""), ""
        doc = EventDoc(asked=asked.text, action=a.name, role=a.role, at_s=round(at, 3), start_s=round(start, 3),
                       end_s=round(clock() - self.t0, 3), ok=ok, said=said, evidence=[])
        if late is not None:
            doc["late"] = late
        with self._lock:
            self.done.append((doc, out))
        self._tell(doc, False)

    def _tell(self, doc: EventDoc, running: bool) -> None:
        """The live page told; whatever goes wrong there is its own (`live.feed.never_raises`), never the event's."""
        if self.told is not None:
            self.told(doc.copy(), running)  # a copy: the evidence is added to ours later

    def finish(self) -> list[EventDoc]:
        """After the load: those still running waited for (a pause still held is ended now), each event's evidence
        quoted; in time order."""
        self._stop.set()
        if self._timer.is_alive():
            self._timer.join()
        for t in self._threads:
            t.join(BACK_S + 15)
        with self._lock:
            done = sorted(self.done, key=lambda d: d[0]["start_s"])
        patterns = {a.name: a.evidence for _, _, a in self.planned}
        for i, (doc, out) in enumerate(done):  # a line is one event's: the next one's start ends this one's time
            until = min([doc["end_s"] + LOG_AFTER_S, *(d["start_s"] for d, _ in done[i + 1:i + 2])])
            doc["evidence"] = quote(self.dep, doc, out, patterns.get(doc["action"]), self.wall0, until)
        return [doc for doc, _ in done]


def quote(dep: Deployment, doc: EventDoc, out: str, pattern: str | None, wall0: float, until_s: float
          ) -> list[str]:
    """The lines about one event: its command's output, then the servers' lines its pattern matches from its start
    to `until_s` (seconds into the window)."""
    said = [x.strip() for x in out.splitlines() if x.strip()][:QUOTES]
    if not pattern:
        return said
    since, until = wall0 + doc["start_s"] - EARLY_S, wall0 + max(until_s, doc["start_s"])
    rx = re.compile(pattern)
    try:
        for line in dep.log_lines(since, until):
            at, text = stamp(line)
            if at is not None and since <= at <= until and rx.search(text) and len(said) < QUOTES:
                said.append(text.strip())
    except LabError as e:
        said.append(f"(the servers' logs could not be read: {e})")
    return said


def stamp(line: str) -> tuple[float | None, str]:
    """Docker's RFC 3339 timestamp (`docker logs -t`) split off a line: (epoch seconds or None, the rest)."""
    head, sep, rest = line.partition(" ")
    try:
        return (datetime.fromisoformat(head).timestamp(), rest) if sep else (None, line)
    except ValueError:
        return None, line


def failures(docs: list[EventDoc]) -> list[str]:
    """The events that failed or fired late, one line each (a trial's warnings: the run goes on)."""
    return ([f"event {d['asked']!r} at {d['start_s']:g} s failed: {d['said']}" for d in docs if not d["ok"]]
            + [f"event {d['asked']!r} {d['late']}" for d in docs if "late" in d])


def cpu_wait(since: float | None = 0.0) -> float | None:
    """Seconds this thread has waited for a CPU (the kernel's schedstat run delay), less `since`; None where the
    kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9 - (since or 0.0)
    except (OSError, ValueError, IndexError):
        return None


def lateness(late: float, waited: float | None) -> str | None:
    """`EventDoc.late` for an event fired `late` seconds after its time (None: on time). The firer's threads wait
    for a CPU beside the load (another program on the client's CPU), or for Python's lock while the load holds it:
    the CPU's share is measured, the rest is the lock's or the thread's start."""
    if late <= LATE_S:
        return None
    why = "" if waited is None else f": its timer waited {waited:.2f} s of it for a CPU"
    return f"fired {late:.2f} s after its time{why}"
