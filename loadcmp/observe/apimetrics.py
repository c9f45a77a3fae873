"""The server's side measured through the Docker API alone, for stacks on another engine.

When the containers run on another machine (`dockerhost.DockerHost.remote`),
their cgroup files and that machine's socket table cannot be read from here.
The same figures then come from the engine: CPU, memory, threads and the
memory cap's failures from `docker stats` (a stream per container, read in a thread), processes from `docker
top`, OOM kills from the engine's events, and, from inside the front container
(`docker exec`), the TCP states of the server port (the kernel's
/proc/net/tcp, counted by awk there) and the status pages (which answer only on
that host's loopback). `metrics.Sampler` uses these in place of its cgroup and
`ss` readers; the parsers are pure and tested from fixtures.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..lab.containers import Deployment
from ..lab.dockerapi import id_of, name_of, oom_events, stats_of, stream_of
from ..lab.fetch import inside_get
from .metrics import CgroupSample, Sampler, ServerRow, Source, parse_state_counts
from .statuspages import command_status, parse_page

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

TCP_STATE_HEX = {
    "01": "ESTAB", "02": "SYN-SENT", "03": "SYN-RECV", "04": "FIN-WAIT-1", "05": "FIN-WAIT-2", "06": "TIME-WAIT",
    "07": "CLOSE", "08": "CLOSE-WAIT", "09": "LAST-ACK", "0A": "LISTEN", "0B": "CLOSING",
}
"""/proc/net/tcp's `st` column -> the state names `ss` prints."""
COUNT_PORT = ("awk -v p=:{port:04X} '$2 ~ p\"$\" {{c[$4]++}} END {{for (s in c) print s, c[s]}}' "
              "/proc/net/tcp /proc/net/tcp6 2>/dev/null")
"""Counts the sockets whose local port is the server's, by state, inside the container (as
`metrics.tcp_states` does with ss here): only a few lines cross the API."""


EVENTS_MARGIN_S = 0.5
"""OOM events are read up to this long ago (on the engine's clock), so a clock offset measured a little off
never asks for the engine's future; an event of the last half second counts in the next sample."""


def engine_offset(client: DockerClient) -> float:
    """The engine's wall clock minus ours, from its `SystemTime` (0 when it cannot be had): its events
    are stamped on its clock, which on another machine may differ from this one's."""
    try:
        t0 = time.time()
        stamp = str(client.info().get("SystemTime", ""))
        t1 = time.time()
        return parse_rfc3339(stamp) - (t0 + t1) / 2
    except (ValueError, OSError, AttributeError):
        return 0.0


def parse_rfc3339(stamp: str) -> float:
    """'2026-11-23T16:40:08.123456789Z' (nanoseconds, any zone) -> Unix seconds."""
    head, zone = stamp[:19], stamp[19:]
    frac = ""
    if zone.startswith("."):
        digits = len(zone) - len(zone[1:].lstrip("0123456789")) - 1
        frac, zone = zone[1:1 + digits], zone[1 + digits:]
    zone = "+00:00" if zone in ("Z", "z", "") else zone
    return datetime.fromisoformat(head + zone).timestamp() + (float("0." + frac) if frac else 0.0)


def parse_stats(stats: dict[str, Any]) -> CgroupSample:
    """One `docker stats` document (cgroup v1 or v2 underneath) -> a sample like the cgroup readers'.

    No peak: the engine's max_usage covers the container's whole life, so the
    trial's peak is the largest sample; the same for v2, which has none."""
    cpu = stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage")
    mem = stats.get("memory_stats", {})
    st = mem.get("stats", {})
    usage = mem.get("usage")
    inactive = st.get("total_inactive_file", st.get("inactive_file", 0))
    return {
        "cpu_ns": cpu if isinstance(cpu, int) and cpu > 0 else None,  # 0: a container that has stopped
        "mem_bytes": None if usage is None else max(0, usage - inactive),
        "mem_rss_bytes": st.get("total_rss", st.get("anon")),
        "mem_limit_hits": mem.get("failcnt"),
        "threads": stats.get("pids_stats", {}).get("current"),
    }


def parse_proc_states(text: str) -> dict[str, int]:
    """`COUNT_PORT`'s output ('06 4120' per line) -> {'TIME-WAIT': 4120, ...}."""
    named = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            named.append(f"{TCP_STATE_HEX.get(parts[0].upper(), parts[0])} {parts[1]}")
    return parse_state_counts("\n".join(named))


class StatsStream:
    """The engine's stats of one container as they come (about once a second), the last three kept.

    A one-shot `docker stats` still waits for the engine's next reading (up to a
    second), too slow to sample several containers every second; the stream is
    read in a thread of its own instead, which ends when the container goes. One
    per container, shared by every sampler of it (`--reuse-server` keeps them)."""

    def __init__(self, container: Container) -> None:
        self.container = container
        self.docs: list[tuple[float, dict[str, Any]]] = []
        """(when it came, on this machine's monotonic clock; the reading), the last three."""
        self.error: BaseException | None = None
        self.first = threading.Event()
        threading.Thread(target=self._read, name=f"loadcmp-stats-{name_of(container)}", daemon=True).start()

    def _read(self) -> None:
        try:
            for doc in stats_of(self.container):
                self.docs = [*self.docs[-2:], (time.monotonic(), doc)]
                self.first.set()
        except Exception as e:  # noqa: BLE001 - said by the next read
            self.error = e
        finally:
            _streams.pop(id_of(self.container), None)
            self.first.set()

    def sample(self) -> CgroupSample:
        """The latest reading, with its CPU time as it was `LAG_S` ago, between two readings.

        The engine reads once a second on its own beat; a sampler a second apart that
        took the latest CPU time would now and then see one reading twice (no CPU
        used) and then two seconds' worth. Read a second late and interpolated, the
        CPU time grows smoothly; the server's CPU seen this way lags by a second."""
        self.first.wait(FIRST_STATS_S)
        docs = self.docs
        if not docs:
            raise OSError(f"no stats from the engine for {name_of(self.container)}"
                          + (f": {type(self.error).__name__}: {self.error}" if self.error else ""))
        if time.monotonic() - docs[-1][0] > STALE_S:
            raise OSError(f"the engine's stats of {name_of(self.container)} have stopped coming")
        out = parse_stats(docs[-1][1])
        out["cpu_ns"] = cpu_at(time.monotonic() - LAG_S, [(t, parse_stats(d)["cpu_ns"]) for t, d in docs])
        return out


def cpu_at(t: float, points: list[tuple[float, int | None]]) -> int | None:
    """The CPU time at `t`, interpolated between the readings around it (the oldest or
    newest beyond them)."""
    known: list[tuple[float, int]] = []
    for ti, c in points:  # CPU time never goes back: a reading that does is not one
        if c is not None and (not known or c >= known[-1][1]):
            known.append((ti, c))
    if not known:
        return None
    if t <= known[0][0]:
        return known[0][1]
    for (t0, c0), (t1, c1) in zip(known, known[1:], strict=False):
        if t0 <= t <= t1:
            return int(c0 + (c1 - c0) * (t - t0) / (t1 - t0)) if t1 > t0 else c1
    return known[-1][1]


_streams: dict[str, StatsStream] = {}
FIRST_STATS_S = 3.0
"""How long the first reading of a container may take."""
STALE_S = 3.0
"""A reading older than this is not shown as the present: the sample says the source stopped."""
LAG_S = 1.0
"""How late the CPU time is read, so that it lies between two of the engine's readings."""


@dataclass
class ApiStats:
    """One container read through the engine; the same face as `metrics.Cgroup`."""

    container: Container
    since: float = field(default_factory=time.time)
    """Start of the sampling on the engine's clock: OOM events from then on are counted."""
    offset: float = 0.0
    """The engine's clock minus ours (`engine_offset`)."""

    def __post_init__(self) -> None:
        if self.cid not in _streams:
            _streams[self.cid] = StatsStream(self.container)
        self.stream = _streams[self.cid]

    @property
    def cid(self) -> str:
        return id_of(self.container)

    def available(self) -> bool:
        return True

    def reset_peak(self) -> None:
        """The engine keeps no resettable peak: the samples' largest is the trial's."""

    def read(self) -> CgroupSample:
        sample = self.stream.sample()
        try:
            sample["procs"] = len(self.container.top().get("Processes") or [])
        except Exception:  # noqa: BLE001 - a container that has just died has no processes to list;
            sample["procs"] = None  # its last stats and its OOM events still count
        until = time.time() + self.offset - EVENTS_MARGIN_S  # never in the engine's future: the call would wait for it
        sample["oom_kills"] = oom_events(self.container, self.since, max(self.since, until))
        return sample


MARK = "--loadcmp-page--"
END = "--loadcmp-end--"
PAGE_TIMEOUT_S = 1.0
"""A status page not answered by then is missing from that block (a busy Apache serves its status page
only when a worker is free); the pages are fetched in the background, so this does not slow the sampler."""


def inside_script(port: int, pages: dict[str, str], tag: str, timeout: float = PAGE_TIMEOUT_S,
                  tls: bool = False) -> str:
    """A shell loop for the front container, started once per trial with one `docker exec`
    (each exec costs that host tens of ms of CPU, too much once a second): every second
    the status pages are fetched at once in the background, the sockets counted
    meanwhile, then each page printed after a mark line and the block ended by
    `END`. It stops when /tmp/loadcmp-stop-TAG appears, or after a day. With `tls`, the pages over https."""
    fetch = [f"({inside_get(port, path, timeout, tls)}) >/tmp/loadcmp-page-$$-{kind} 2>/dev/null &"
             for kind, path in pages.items()]
    show = [f"echo '{MARK} {kind}'; cat /tmp/loadcmp-page-$$-{kind}; rm -f /tmp/loadcmp-page-$$-{kind}"
            for kind in pages]
    body = " ".join(fetch) + " " + "; ".join([COUNT_PORT.format(port=port), "wait", *show, f"echo '{END}'"])
    # `sleep 1 &` first, and `wait` in the body waits for it too: one block a second, or as fast as the work allows
    return (f"for i in $(seq 86400); do [ -e /tmp/loadcmp-stop-{tag} ] && break; sleep 1 & {body}; done; "
            f"rm -f /tmp/loadcmp-stop-{tag}")


def split_inside(text: bytes) -> tuple[str, dict[str, bytes]]:
    """`inside_script`'s output -> (the socket counts' text, {kind: the page's raw HTTP answer})."""
    chunks = text.split(f"{MARK} ".encode())
    pages: dict[str, bytes] = {}
    for chunk in chunks[1:]:
        kind, _, answer = chunk.partition(b"\n")
        pages[kind.decode().strip()] = answer
    return chunks[0].decode(errors="replace"), pages


def parse_answer(answer: bytes) -> tuple[int, str]:
    """A raw HTTP/1.0 answer -> (status, body); status 0 when there was none."""
    head, _, body = answer.partition(b"\r\n\r\n")
    first = head.split(b"\r\n", 1)[0].split()
    status = int(first[1]) if len(first) > 1 and first[1].isdigit() else 0
    return status, body.decode(errors="replace")


class InsideReader:
    """`inside_script` running in the front container; the latest block kept, read in a thread."""

    def __init__(self, dep: Deployment) -> None:
        self.dep = dep
        self.tag = uuid.uuid4().hex[:8]
        self.latest: tuple[str, dict[str, bytes]] | None = None
        self.when = 0.0
        """When the latest block came (monotonic)."""
        self.first = threading.Event()
        paths = {k: page.path for k, page in dep.status_pages.items() if page.command is None}
        self.stream = stream_of(dep.front.exec_run(["bash", "-c", inside_script(dep.port, paths, self.tag,
                                                                                tls=dep.plan.tls is not None)],
                                                   stream=True))
        threading.Thread(target=self._read, name="loadcmp-inside", daemon=True).start()

    def _read(self) -> None:
        buf = b""
        try:
            for chunk in self.stream:
                buf += chunk
                while (i := buf.find(END.encode())) >= 0:
                    self.latest, self.when = split_inside(buf[:i]), time.monotonic()
                    buf = buf[i + len(END) + 1:]
                    self.first.set()
        finally:
            self.first.set()

    def get(self) -> tuple[str, dict[str, bytes]]:
        self.first.wait(FIRST_STATS_S)
        if self.latest is None:
            raise OSError(f"no socket counts from inside {name_of(self.dep.front)}")
        if time.monotonic() - self.when > STALE_S:
            raise OSError(f"the loop inside {name_of(self.dep.front)} has stopped answering")
        return self.latest

    def stop(self) -> None:
        self.dep.front.exec_run(["touch", f"/tmp/loadcmp-stop-{self.tag}"])


class ApiSampler(Sampler):
    """`metrics.Sampler` reading through the Docker API: stats, top, events, and what
    one loop inside the front container prints every second."""

    inside: InsideReader | None = None

    def sources(self) -> list[Source]:
        try:
            self.inside = InsideReader(self.dep)
        except Exception as e:  # noqa: BLE001 - e.g. the server died right after it answered: a warning, no traceback
            self._note(f"starting the loop inside {name_of(self.dep.front)}", e)
        offset = engine_offset(self.dep.client)
        return [ApiStats(c, since=time.time() + offset, offset=offset) for c in self.dep.containers]

    def stop(self) -> list[ServerRow]:
        rows = super().stop()
        if self.inside is None:
            return rows
        try:
            self.inside.stop()
        except Exception as e:  # noqa: BLE001 - the loop ends within the hour anyway
            if getattr(e, "status_code", None) != 409:  # 409: the container is not running, nor is the loop
                self.warnings.append(f"server sampling: could not stop the loop in {name_of(self.dep.front)}: {e}")
        return rows

    def _latest(self) -> tuple[str, dict[str, bytes]]:
        if self.inside is None:
            raise OSError(f"no loop runs inside {name_of(self.dep.front)}")
        return self.inside.get()

    def tcp_states(self) -> dict[str, int]:
        return parse_proc_states(self._latest()[0])

    def status_page(self, kind: str) -> dict[str, float]:
        if self.dep.status_pages[kind].command is not None:
            return command_status(self.dep, self.dep.status_pages[kind])
        status, body = parse_answer(self._latest()[1].get(kind, b""))
        if status != 200:
            raise ValueError(f"the {kind} status page answered " + (f"HTTP {status}" if status else "nothing"))
        return parse_page(self.dep.status_pages[kind], body)
