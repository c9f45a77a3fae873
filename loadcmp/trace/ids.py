"""The ids a traced request carries: `traceparent: 00-<trace-id>-<parent-id>-01` (W3C Trace Context).

The trace-id's first 16 hex digits are a nonce drawn once per trial and worker (`os.urandom`), its last 16 the
request's sequence number in that worker's trial; the parent-id (the client's span) is that number again. So an id
never repeats across trials or workers, and a server's log line names the request it served. Which requests carry
it: a hash of the sequence number against the share (`--trace-sample`), the same one the compiled loops compute in
C (`load/core/_ctrace.h`), so the same run samples the same requests.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..errors import UsageError

MASK = (1 << 64) - 1
HEADER = b"traceparent: "
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


def splitmix64(seq: int) -> int:
    """splitmix64 of a sequence number: the draw that decides whether the request is traced."""
    x = (seq + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def check_share(share: float) -> float:
    """--trace-sample: a share in (0, 1], else a UsageError (one line, exit 2)."""
    if not 0.0 < share <= 1.0:
        raise UsageError(f"--trace-sample {share:g}: a share of the requests, above 0 and at most 1 (0.1: one in ten)")
    return share


def threshold(share: float) -> int:
    """The draws below this are traced (a share of 1: all of them, 2**64)."""
    return 1 << 64 if share >= 1.0 else int(share * (1 << 64))


def format_id(hi: int, lo: int) -> str:
    """A trace-id of 32 lowercase hex digits from its two halves."""
    return f"{hi & MASK:016x}{lo & MASK:016x}"


def parse_id(trace_id: str) -> tuple[int, int]:
    """A trace-id's two halves: (the nonce of its trial and worker, the request's sequence number)."""
    if len(trace_id) != 32:
        raise ValueError(f"not a trace-id of 32 hex digits: {trace_id!r}")
    return int(trace_id[:16], 16), int(trace_id[16:], 16)


def parse_traceparent(value: str) -> tuple[str, str] | None:
    """A traceparent header's (trace-id, parent-id), or None when it is not one."""
    m = TRACEPARENT.match(value.strip().lower())
    return (m[1], m[2]) if m else None


def traceparent(nonce: int, seq: int) -> str:
    """The header's value for request `seq` of the trial and worker whose nonce is `nonce`."""
    return f"00-{format_id(nonce, seq)}-{seq & MASK:016x}-01"


def with_header(raw: bytes, line: bytes) -> tuple[bytes, int]:
    """An HTTP/1 request's bytes with a header line added at the end of its head (its body kept), and where in
    them the line starts."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError("not an HTTP/1 request: no end of its head")
    at = end + 2
    return raw[:at] + line + raw[at:], at


@dataclass
class Ids:
    """One worker's ids in one trial: its nonce, the share it traces, and the next sequence number."""

    share: float
    nonce: int = field(default_factory=lambda: int.from_bytes(os.urandom(8), "big"))
    seq: int = 1
    """From 1: the parent-id is the number too, and W3C Trace Context holds one of all zeros invalid."""

    @property
    def limit(self) -> int:
        return threshold(self.share)

    def sampled(self, seq: int) -> bool:
        """Is request `seq` traced? The same answer in every run and in C."""
        return self.share >= 1.0 or splitmix64(seq) < self.limit

    def take(self) -> int:
        """The next request's sequence number when it is traced, else -1 (the number is used either way)."""
        seq = self.seq
        self.seq += 1
        return seq if self.sampled(seq) else -1

    def value(self, seq: int) -> str:
        return traceparent(self.nonce, seq)

    def line(self, seq: int) -> bytes:
        """The header line, CRLF included (HTTP/1)."""
        return HEADER + self.value(seq).encode() + b"\r\n"

    def template(self, raw: bytes) -> tuple[bytes, int]:
        """`raw` with the header of request 0, and where the sequence number's first hex digit is in it: the
        compiled loop copies the template and writes each request's number there and 17 bytes on (the parent)."""
        out, at = with_header(raw, self.line(0))
        return out, at + len(HEADER) + 3 + 16
