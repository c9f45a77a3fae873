"""What a load's protocol and traffic did, as TypedDicts of run.json: its TLS handshakes, its HTTP/2 or
HTTP/3 streams, its journeys, its replayed log. These are facts of one protocol or one traffic source, present
only when the load used it; records.py holds what every load has, and names these where a record carries them.
Beside them, the two figures of a full listen queue: the connects TCP's SYN retry delayed (`SlowConnects`, the
client's) and the kernel's TCP counters of the window (`KernelDoc`, where they could be read). And `--net`'s: the path
asked and seen and its proxy's cost (`NetFacts`), with the keys of the spec and of a summary that carry them; the
client behaviours' keys (`PacingFields`, `PacingResult`); and the connections by state of a label's status pages
(`StatesInfo`) and a state that held its workers (`HeldFacts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict


class TlsFacts(TypedDict):
    """What the handshakes of an https load negotiated (the most common, when they differ), and how many."""

    version: str  #: as OpenSSL and Python's ssl name it: "TLSv1.3"
    cipher: str  #: "TLS_AES_256_GCM_SHA384"
    alpn: str  #: "http/1.1"; "" when the server chose none
    full: int  #: full handshakes of counted requests
    resumed: int  #: handshakes that resumed a saved session


class StreamFacts(TypedDict):
    """What the streams of an h2, h2c or h3 load did (`load.record.result.StreamTally`), beside their outcomes."""

    protocol: str  #: negotiated: "h2", "h2c", "h3"
    connections: int  #: connections opened (a new one after each GOAWAY)
    streams: int  #: streams started in the window, as `started` counts them (not the warm-up's)
    streams_per_connection: float  #: streams / connections
    goaways: int  #: GOAWAY frames received
    goaway_unprocessed: int  #: streams a GOAWAY left unprocessed (the server never processed them)
    retried: int  #: of those, sent again on a new connection (a graceful GOAWAY's; the rest are `goaway` failures)
    resets: dict[str, int]  #: RST_STREAM by error-code name, e.g. {"REFUSED_STREAM": 3} (outcome stream_reset)
    max_concurrent: int  #: the server's SETTINGS_MAX_CONCURRENT_STREAMS as last seen; 0: none sent
    max_per_connection: int  #: the most requests one connection served


class JourneyDoc(TypedDict):
    """One journey's outcomes in a load (`--journey`)."""

    started: int  #: journeys started inside the window
    completed: int  #: every step done, every extract found
    failed: int  #: ended at a step (see failed_at)
    cut: int  #: under way when the window closed: neither completed nor failed
    completion_rate: float | None  #: completed / (started - cut); None when none ended
    failed_at: dict[str, int]  #: "step: why" -> journeys that ended there


class ReplayDoc(TypedDict):
    """A trial of a replayed access log (`traffic.logreplay.replay_doc`): the log, what was left out, the rates it
    asked and got, and the answers as in the log or not."""

    file: str
    sha256: NotRequired[str]  #: the log file's content hash (a catalog's cell names it, short)
    format: str  #: combined, common or json
    speed: str  #: 1x, 2x, ... or max
    lines: int  #: the log's lines read
    sent_in_log: int  #: the log's requests a replay sends (its sequence)
    distinct: int  #: distinct requests (method, path, status) among them
    pages: int  #: pages recorded on their own
    grouped: int  #: further pages recorded together as `other`
    left_out: dict[str, int]  #: the log's requests not sent, by reason (method, host, not a path, ...)
    left_out_named: dict[str, list[list[str | int]]]  #: the most frequent of each reason, [what, count]
    subsecond: bool  #: the log's times finer than a second (else one second's requests spread over it)
    log_rate: NotRequired[float]  #: at Nx: the log's requests due in the window per second, at this speed
    sent_rate: NotRequired[float]  #: at Nx: the requests sent in the window per second (dropped ones not)
    rate_ratio: NotRequired[float]  #: sent_rate / log_rate
    dropped_peak: NotRequired[int]  #: at Nx: the most requests dropped in one second (the client behind)
    as_in_log: int  #: answers with the status the log gave
    differs: int  #: answers with another status (or none: a failure)
    differing: list[list[str | int]]  #: the pages most often differing: [page, differing, expected]


class KernelDoc(TypedDict, total=False):
    """The kernel's listen-queue counters over a trial's window (`observe.kernel`), where they could be read."""

    scope: str  #: "host" (host networking: other traffic on the machine counts too) or "server" (its own namespace)
    somaxconn: int | None  #: the host's net.core.somaxconn, the cap of every listen backlog
    listen_overflows: int  #: TcpExt ListenOverflows: connections a full accept queue had no room for
    listen_drops: int  #: TcpExt ListenDrops: SYNs dropped at a listening socket (the overflows among them)
    syn_retrans: int  #: TcpExt TCPSynRetrans: SYNs and SYN-ACKs sent again after TCP's timeout (1 s, then 3 s)


RETRY_1S = 0.9
"""Seconds from which a connect counts as one SYN retry: TCP's initial retransmission timeout is 1 s (RFC 6298),
so a SYN the server's full listen queue dropped is sent again after about 1 s."""
RETRY_3S = 2.7
"""Seconds from which a connect counts as two SYN retries: 1 s, then 2 s more (the timeout doubles)."""


class SlowConnects(TypedDict):
    """The requests whose connect took about one TCP initial retransmission timeout or more (their SYN was sent
    again after 1 s: the server's listen queue was full), and about three (sent a third time, after 1 s + 2 s).
    A slow connect delays its connection's first request by as much, so the shares are of the requests timed."""

    requests: int  #: the responses timed (the latency percentiles' count): the shares' denominator
    over_1s: int  #: connects of RETRY_1S (0.9 s) or more
    over_3s: int  #: connects of RETRY_3S (2.7 s) or more (counted in over_1s too)
    share_1s: float  #: over_1s / requests
    share_3s: float  #: over_3s / requests


class NetFacts(TypedDict):
    """`--net`: the conditions asked of the path and those seen through its proxy before the window
    (`loadcmp.net`), and what the proxy cost over the window."""

    asked: dict[str, float | str | None]  #: spec, profile, rtt_ms, jitter_ms, rate_bps, rate_up_bps, loss
    seen: dict[str, float | None]  #: rtt_ms, rtt_spread_ms, rate_bps, rate_up_bps: measured at low load
    differs: list[str]  #: each figure seen more than 10 % from the one asked, in words
    proxy: str  #: "toxiproxy 2.5.0": the version that ran
    proxy_cpu_us: float | None  #: the proxy's CPU microseconds per request that ended in the window
    proxy_cpu_pct: float | None  #: its CPU over the window (100 = one core)
    proxy_busy_pct: float | None  #: median per second of its threads on a CPU or waiting for one, over its CPUs
    proxy_cpus: int  #: the CPUs it may run on
    network_bound: bool  #: the proxy, not the server, limited the rate (then `client_bound` too)
    network_bound_reason: NotRequired[str]
    proxy_died: NotRequired[str]  #: the proxy ended in the window: said, and its cost figures are None


class NetFields(TypedDict):
    """run.json's `spec` keys of `--net` (SpecDoc has them: it is this with the rest)."""

    net: NotRequired[str | None]  #: --net: the network between the clients and every server; None: loopback
    variant_net: NotRequired[dict[str, str]]  #: a label's own `net` ([variants.LABEL] net), over `net`


class EventFields(TypedDict):
    """run.json's `spec` key of `--event` (SpecDoc has it: it is this with the rest)."""

    events: NotRequired[list[str]]  #: --event, [[events]]: 'AT ACTION' fired in every trial's window


class TraceFields(TypedDict):
    """run.json's `spec` keys of `--trace` (SpecDoc has them: it is this with the rest)."""

    trace: NotRequired[bool]  #: --trace: a traceparent header on the requests, each traced one kept in requests.parquet
    trace_sample: NotRequired[float]  #: --trace-sample: the share of the requests traced (0 < F <= 1)
    variant_trace: NotRequired[dict[str, dict[str, bool | float]]]  #: a label's own trace, trace_sample, over the run's


class TraceResult(TypedDict):
    """A load's summary key of `--trace` (LoadSummary has it: it is this with the rest)."""

    traced: NotRequired[int]  #: the requests traced (rows in requests.parquet); absent: not traced
    traced_bytes: NotRequired[int]  #: requests.parquet's size after this trial's rows


class PacingFields(TypedDict):
    """run.json's `spec` keys of the client behaviours (`load.pacing`; SpecDoc has them: it is this with the rest)."""

    think: NotRequired[str | None]  #: --think: "2s" or "2s±500ms" as given; None: no think time
    send_rate: NotRequired[str | None]  #: --send-rate: a rate as given, or "slowloris"; None: at once
    read_rate: NotRequired[str | None]  #: --read-rate: a rate as given; None: as fast as it comes


class PacingResult(TypedDict):
    """A load's summary key of the client behaviours (LoadSummary has it: it is this with the rest)."""

    pacing: NotRequired[dict[str, Any]]  #: what was asked: think, think_s, think_jitter_s, send_rate, ... (`Pacing`)


class NetResult(TypedDict):
    """A load's summary key of `--net` (LoadSummary has it: it is this with the rest)."""

    net: NotRequired[NetFacts]  #: --net: the path asked and seen, and the proxy's cost
    warmup_carried: NotRequired[int]  #: begun in the warm-up, counted in the window (in `started`); absent: none


class EventDoc(TypedDict):
    """One event fired in a trial's measured window (`--event`, `loadcmp.events`), its times in seconds into the
    window on the load's clock; kept in run.json's trial as `events` (read back with `events_of`)."""

    asked: str  #: as given: "every 4s reload"
    action: str  #: the stack's action: "reload", "restart web", "pause db"
    role: str  #: the role it was done to
    at_s: float  #: when it was due
    start_s: float  #: when it was fired
    end_s: float  #: when its command returned, or its container was back
    ok: bool
    said: str | None  #: why it failed, in one line; None: it did not
    evidence: list[str]  #: the servers' own lines about it, quoted (the command's output first)
    late: NotRequired[str]  #: fired more than LATE_S after its time: how late, and how long its thread waited for a CPU


def events_of(trial: Mapping[str, Any]) -> list[EventDoc]:
    """A stored trial's events (none: a trial without `--event`)."""
    return list(trial.get("events") or [])


class HeldFacts(TypedDict):
    """A cause's keys of a state that held the workers (CauseDoc has them: it is this with the rest)."""

    held: NotRequired[float]  #: the workers in that state (Apache's idle in keep-alive) at the fullest answered second
    held_busy: NotRequired[float]  #: the busy workers at that second
    held_said: NotRequired[str]  #: that in the stack's words (`{held}`, `{busy}`, `{limit}`: the setting's value)


class StatesInfo(TypedDict):
    """A label's keys of its connections by state (ServerInfo has them: it is this with the rest)."""

    states: NotRequired[dict[str, str]]  #: the status columns that count connections by state -> the state in words
