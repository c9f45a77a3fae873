"""Clients that behave like people: think time between requests, a slow upload, a slow download.

`--think 2s±500ms` idles each closed-loop client that long between the end of one response and its next request
(on its kept-alive connection, else before its next connect); the jitter is drawn uniformly from a seeded
generator, so a run repeats. `--send-rate RATE` writes each request in small chunks paced to RATE, and
`--send-rate slowloris` trickles it as the attack does, a few bytes every few seconds, until the server or
the request's timeout gives up. `--read-rate RATE` reads each response at RATE through a small receive buffer,
so that the server's send side fills and waits. A RATE is a bit rate (`2kbit`, `10mbit`, `loadcmp.units`) or
bytes per second (`10kB/s`, `64KiB/s`).

Pure data and arithmetic, as `schedules`: the engines ask it how long to think and how to cut a write or a
read (`send_step`, `read_step`). Everything a user can get wrong is a one-line UsageError here.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import UsageError
from ..protocols import get as get_protocol
from ..units import parse_bitrate, parse_duration, parse_size

SLOWLORIS = "slowloris"
"""The --send-rate preset: the request trickled SLOWLORIS_BYTES at a time, every SLOWLORIS_GAP_S."""
SLOWLORIS_BYTES = 8
SLOWLORIS_GAP_S = 2.0
STEP_S = 0.05
"""A paced write or read moves about this long's worth of bytes at once (between 1 byte and MAX_CHUNK)."""
MAX_CHUNK = 65536
MIN_RCVBUF = 4096
"""The least receive buffer a paced reader asks for (the kernel doubles it for its own bookkeeping)."""
_JITTER = re.compile(r"^(.*?)(?:±|\+-|\+/-)(.*)$")


def parse_think(text: str) -> tuple[float, float]:
    """'2s' -> (2.0, 0.0); '2s±500ms' (or '2s+-500ms') -> (2.0, 0.5): the jitter no larger than the think."""
    m = _JITTER.match(text.strip())
    base, spread = (m.group(1), m.group(2)) if m else (text, "0")
    think = parse_duration(base, "--think")
    jitter = parse_duration(spread, "--think jitter")
    if jitter > think:
        raise UsageError(f"bad --think {text!r}: the jitter ({spread.strip()}) is larger than the think time")
    return think, jitter


def parse_byterate(text: str, what: str) -> float:
    """'2kbit' -> 250.0, '10kB/s' -> 10000.0: bytes per second, finite and > 0 (no 0, no sign, no garbage)."""
    s = str(text).strip()
    if s.lower().endswith("/s"):
        try:
            n = parse_size(s[:-2], what)
        except UsageError:
            n = 0
        if n > 0:
            return float(n)
        raise UsageError(f"bad {what} {text!r}: use a bit rate (2kbit, 10mbit) or bytes per second (10kB/s), > 0")
    try:
        return parse_bitrate(s, what) / 8
    except UsageError:
        raise UsageError(f"bad {what} {text!r}: use a bit rate (2kbit, 10mbit) or bytes per second (10kB/s), "
                         "> 0") from None


def _chunk(rate: float) -> int:
    return int(min(MAX_CHUNK, max(1.0, rate * STEP_S)))


@dataclass(frozen=True)
class Pacing:
    """How each client of a load behaves (picklable: workers get it); the zero value is a machine's client."""

    think: str | None = None
    """--think as given; None: no think time."""
    send_rate: str | None = None
    """--send-rate as given (a rate, or `slowloris`); None: the request at once."""
    read_rate: str | None = None
    """--read-rate as given; None: the response as fast as it comes."""
    seed: int = 0
    """The think jitter's generator's seed (each worker adds its index)."""
    think_s: float = field(init=False, default=0.0)
    jitter_s: float = field(init=False, default=0.0)
    send_bps: float = field(init=False, default=0.0)
    """Bytes per second up (0: at once)."""
    read_bps: float = field(init=False, default=0.0)
    """Bytes per second down (0: as fast as it comes)."""

    def __post_init__(self) -> None:
        if self.think is not None:
            think, jitter = parse_think(self.think)
            object.__setattr__(self, "think_s", think)
            object.__setattr__(self, "jitter_s", jitter)
        if self.send_rate is not None:
            bps = (SLOWLORIS_BYTES / SLOWLORIS_GAP_S if self.slowloris
                   else parse_byterate(self.send_rate, "--send-rate"))
            object.__setattr__(self, "send_bps", bps)
        if self.read_rate is not None:
            object.__setattr__(self, "read_bps", parse_byterate(self.read_rate, "--read-rate"))

    @property
    def slowloris(self) -> bool:
        return (self.send_rate or "").strip().lower() == SLOWLORIS

    @property
    def paced_io(self) -> bool:
        """A write or a read is paced (the compiled loop runs it over http; over https the Python loop does)."""
        return bool(self.send_bps or self.read_bps)

    def rng(self, index: int = 0) -> random.Random:
        """The think jitter's generator of one loop (a worker's index keeps their draws apart)."""
        return random.Random(self.seed * 1000003 + index)

    def think_delay(self, rng: random.Random) -> float:
        """One pause between a response and the next request."""
        if not self.jitter_s:
            return self.think_s
        return max(0.0, self.think_s + rng.uniform(-self.jitter_s, self.jitter_s))

    def send_step(self) -> tuple[int, float]:
        """(bytes written at once, seconds between writes)."""
        if self.slowloris:
            return SLOWLORIS_BYTES, SLOWLORIS_GAP_S
        n = _chunk(self.send_bps)
        return n, n / self.send_bps

    def read_step(self) -> tuple[int, int]:
        """(bytes read at once, the receive buffer asked for before connecting)."""
        n = _chunk(self.read_bps)
        return n, max(MIN_RCVBUF, n)

    def describe(self) -> dict[str, Any]:
        """What was asked, as `--json` and run.json keep it (seconds, bytes per second)."""
        out: dict[str, Any] = {}
        if self.think is not None:
            out |= {"think": self.think, "think_s": self.think_s, "think_jitter_s": self.jitter_s}
        if self.send_rate is not None:
            out |= {"send_rate": self.send_rate, "send_bytes_per_s": self.send_bps}
        if self.read_rate is not None:
            out |= {"read_rate": self.read_rate, "read_bytes_per_s": self.read_bps}
        return out

    def words(self) -> str:
        """'think 2s±500ms, send at 2kbit, read at 10kB/s' (the report's set-up line, the terminal)."""
        parts = [f"think {self.think}" if self.think else "",
                 "send as slowloris (8 bytes every 2 s)" if self.slowloris
                 else (f"send at {self.send_rate}" if self.send_rate else ""),
                 f"read at {self.read_rate}" if self.read_rate else ""]
        return ", ".join(p for p in parts if p)

    def refuse(self, schedule: str, proto: str, engine: str = "fast") -> None:
        """What has no meaning: think time where the schedule sets the times (rate, a replay, the ramp's pace), and
        what an engine does not do (the aiohttp engine; a protocol's row's `behaviours`)."""
        if engine != "fast":
            raise UsageError(f"--engine {engine} runs no client behaviour ({self.words()}): use --engine fast")
        if self.think is not None and schedule != "closed":
            raise UsageError(f"--think is for the closed loop: the {schedule} schedule sets when each request "
                             "starts itself")
        for flag, asked in (("--think", self.think), ("--send-rate", self.send_rate), ("--read-rate", self.read_rate)):
            if asked is not None and (why := get_protocol(proto).behaviour_error(flag)) is not None:
                raise UsageError(why)


class Behaving(Protocol):
    """What the check reads of a run's traffic source (`traffic.source.Source`): its flag, whether its engine runs
    the behaviours, and the schedule it sets itself (None: the run's)."""

    @property
    def flag(self) -> str: ...
    @property
    def behaves(self) -> bool: ...
    @property
    def schedule_of(self) -> str | None: ...


def pacing_of(think: str | None, send_rate: str | None, read_rate: str | None) -> Pacing | None:
    """The behaviour asked (UsageError if a value is bad); None when none was."""
    if think is None and send_rate is None and read_rate is None:
        return None
    return Pacing(think, send_rate, read_rate)


def pacing_problems(think: str | None, send_rate: str | None, read_rate: str | None, schedule: str, engine: str,
                    protos: set[str], source: Behaving | None = None) -> list[str]:
    """A run's behaviours checked against its schedule, engine, traffic source and every protocol it loads
    (`experiment.spec`): a source may set its own times (a replay's), or run its own engine (journeys')."""
    try:
        if (pacing := pacing_of(think, send_rate, read_rate)) is not None:
            if source is not None and not source.behaves:
                raise UsageError(f"{source.flag}: its engine runs no client behaviour ({pacing.words()})")
            for proto in sorted(protos):
                pacing.refuse(source.schedule_of or schedule if source is not None else schedule, proto, engine)
    except UsageError as e:
        return list(e.messages)
    return []
