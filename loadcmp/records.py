"""The documents a run.json holds, as TypedDicts: one definition for every
reader and writer, checked by mypy, while on disk they stay plain JSON that
any tool (and an older report) can read.

Kept apart from `store` so that the load workers, which build `LoadSummary`
and `HistogramDoc`, need not import pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

# a search's records live in studies.py; they are named here too, as every reader imports from here
from .studies import (CapacityDoc, CapacityEstimateDoc, CapacityServerDoc, CapacityStepDoc,  # noqa: F401
                      TuneDoc, TuneGainDoc, TuneParamDoc, TuneSideDoc, TuneTrialDoc)
# what a load's protocol and traffic did live in facts.py; named here too, for the same reason
from .facts import (EventFields, HeldFacts, JourneyDoc, KernelDoc, NetFields, NetResult, PacingFields, PacingResult,
                    ReplayDoc, SlowConnects, StatesInfo, StreamFacts, TlsFacts, TraceFields, TraceResult)
from .units import Setting

TrialStatus = Literal["ok", "server_failed", "wrong_protocol", "server_died", "oom", "interrupted", "failed", "partial"]
"""How a trial ended: measured normally, or why not."""
RunStatus = Literal["running", "complete", "interrupted", "failed", "abandoned"]
"""How a run ended (`running` while being written; `abandoned`, read back: left `running` by a process killed)."""
OUTCOME_KINDS: tuple[str, ...] = ("ok", "http_4xx", "http_5xx", "connect_refused", "connect_timeout", "reset",
                                  "timeout", "protocol_error", "tls_error", "stream_reset", "goaway")
"""Every way a started request can end (besides `unfinished`), in storage order: `load.record.outcomes` numbers
them, `LoadSummary.failures` counts all but `ok`, and a stack's log causes name the failures they make."""
FAIL_KINDS: tuple[str, ...] = OUTCOME_KINDS[1:]


class LatencyMs(TypedDict):
    """Percentiles of a latency histogram, in milliseconds (None: no sample)."""

    p50: float | None
    p75: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None
    max: float | None
    min: float | None
    mean: float | None
    stdev: NotRequired[float | None]  #: population standard deviation (exact)


class WebbenchCount(TypedDict):
    """What webbench would have counted for the same requests."""

    susceed: int  #: webbench's spelling: any answer read to EOF, whatever its status
    failed: int  #: only connections that could not be made or read
    pages_per_min: float
    bytes_per_s: float


class HistogramDoc(TypedDict):
    """A mergeable log histogram as stored (see load.record.histogram.Histogram)."""

    base: float
    unit: str
    idx: list[int]
    cnt: list[int]
    total_s: float
    max_s: float
    min_s: float | None  #: None: no sample
    sq_s: NotRequired[float]  #: sum of the squared values (s²), for the stdev; absent in older results


ScheduleKind = Literal["closed", "ramp", "rate", "replay"]
"""webbench's closed loop, JMeter's ramp with pacing, wrk2's and k6's open rate, an access log's own times."""


class ScheduleDoc(TypedDict):
    """A schedule as the load describes it (`Schedule.describe()`), plus keep-alive: a result's `schedule`."""

    kind: ScheduleKind
    clients: NotRequired[int]  #: closed: the concurrent clients
    requests: NotRequired[int]  #: closed with -n: the requests in all
    users: NotRequired[int]  #: ramp: the users started in all
    ramp_up_s: NotRequired[float]  #: ramp: the seconds over which the users start
    pace_s: NotRequired[float]  #: ramp: each user's seconds from one request's start to the next's
    rate: NotRequired[float]  #: rate: requests per second (replay: the log's mean at its speed)
    max_inflight: NotRequired[int]  #: rate: the in-flight cap (due requests above it are dropped)
    keepalive: NotRequired[bool]  #: the requests reuse their connection


class SpecDoc(NetFields, EventFields, TraceFields, PacingFields):
    """What a run was asked to do, as run.json's `spec` stores it: `RunSpec.to_dict()`.

    A bench stores the keys that apply to one URL (`servers` is its host:port, `levels`
    its one concurrency, `page` the URL's path) and `url`; the rest are absent."""

    servers: list[str]  #: the labels, in the order given
    levels: list[int]  #: concurrency levels (clients, users, or the rate's in-flight cap)
    duration: float  #: measured seconds per trial (with -n: the time limit)
    warmup: float  #: seconds of load before the window, not counted
    page: str  #: the path loaded
    schedule: ScheduleKind
    keepalive: list[bool]  #: one entry per variant
    tls: NotRequired[bool]  #: --tls: the servers served https (a label's own in variant_tls)
    tls_resume: NotRequired[float]  #: --tls-resume: the share of new connections that resumed a session
    variant_tls: NotRequired[dict[str, bool]]  #: a label's own `tls` ([variants.LABEL] tls), over `tls`
    protos: NotRequired[list[str]]  #: --proto: the protocols each label ran (several: labels like nginx[h2])
    variant_protos: NotRequired[dict[str, list[str]]]  #: a label's own protocols ([variants.LABEL] proto)
    streams: NotRequired[int]  #: -m/--streams: requests in flight per connection on h2, h2c and h3
    timeout: float  #: seconds per request
    engine: str  #: fast (uvloop + httptools) or aiohttp
    workers: int  #: client processes
    requests: NotRequired[int | None]  #: -n: requests per trial, else None
    url: NotRequired[str]  #: bench: the URL loaded
    stacks: NotRequired[dict[str, str]]  #: each label's stack
    stack_dirs: NotRequired[list[str]]  #: the user's stack folders (--stacks), absolute
    pages: NotRequired[list[str]]  #: several pages in one run (each server x page a variant)
    mix: NotRequired[dict[str, float]]  #: a weighted mix (--mix, [mix]): page -> weight, drawn in one load
    seed: NotRequired[int | None]  #: the mix's draw: the same seed sends the same sequence
    replay: NotRequired[str | None]  #: an access log replayed (--replay), absolute
    replay_speed: NotRequired[str]  #: 1x, 2x, ... or max
    replay_methods: NotRequired[list[str]]  #: the methods a replay sends
    log_format: NotRequired[str | None]  #: combined, common, json; None: told by its first lines
    www: NotRequired[str | None]  #: the user's own pages (--www), absolute; None: the demo pages
    app: NotRequired[str | None]  #: the application its pages ran on (--app); None: none
    journey: NotRequired[str | None]  #: --journey: the journeys each virtual user walked, as given
    journey_levels: NotRequired[dict[str, str]]  #: the journeys' mix at some levels, over `journey`
    configs: NotRequired[list[dict[str, Any]]]  #: --config: server, role, file (absolute), port, status
    trials: NotRequired[int]  #: repeats of each server x level
    ramp_up: NotRequired[float | None]
    pace: NotRequired[float | None]
    rate: NotRequired[float | None]
    max_inflight: NotRequired[int | None]
    cluster: NotRequired[str | None]  #: `local:N` or `tcp://HOST:PORT`
    docker_host: NotRequired[str | None]  #: the engine the stacks ran on (None: this machine's)
    server_address: NotRequired[str | None]
    tlsverify: NotRequired[bool]  #: TLS to a tcp:// docker_host, its certificate verified
    tlscacert: NotRequired[str | None]  #: paths only, as given
    tlscert: NotRequired[str | None]
    tlskey: NotRequired[str | None]
    server_cpus: NotRequired[str | None]
    client_cpus: NotRequired[str | None]
    server_memory: NotRequired[int | None]  #: bytes
    settings: NotRequired[dict[str, Setting]]  #: tunables for every server whose stack has their section
    variant_settings: NotRequired[dict[str, dict[str, Setting]]]  #: tunables of one label
    reuse_server: NotRequired[bool]
    findings: NotRequired[list[dict[str, str]]]  #: the write-up's claims (`claim`, `check`)
    name: NotRequired[str]
    description: NotRequired[str]
    out: NotRequired[str]  #: the folder the results folder is made in


class PageSummary(TypedDict):
    """One page of a load of several pages (a mix, a log, a journey's step), counted alone: they add up to the load."""

    page: str  #: its name (a mix's path, a journey's step)
    ok: int
    failed: int  #: ended as any other kind (dropped and unfinished requests are the load's, not a page's)
    failures: dict[str, int]  #: outcome kind -> count
    completed: int
    share: float  #: of the load's completed requests
    rps: float  #: ok / measured seconds
    bytes: int
    status_codes: dict[str, int]
    latency_ms: LatencyMs
    expected: NotRequired[int]  #: requests with a status expected of them (replay: the log's)
    as_expected: NotRequired[int]  #: of those, answered with it


class LoadSummary(NetResult, TraceResult, PacingResult):
    """One measurement's numbers: the `result` of a trial and of `--json`."""

    ok: int  #: complete responses with status < 400
    failed: int  #: sum of `failures`
    failures: dict[str, int]  #: outcome kind -> count (dropped included for the rate schedule)
    unfinished: int  #: in flight when the window closed; not failed
    started: int  #: ok + failed + unfinished
    dropped: int  #: rate schedule: due but not sent (the in-flight cap was reached)
    completed: int  #: every response or failure that ended inside the window
    rps: float  #: ok / measured seconds
    completions_per_s: float
    failed_rate: float  #: failed / (started - unfinished)
    duration_s: float  #: the measured seconds
    bytes: int
    bytes_per_s: float
    latency_ms: LatencyMs  #: from the intended start (corrects coordinated omission)
    service_ms: LatencyMs  #: from the moment the request was written
    webbench: WebbenchCount
    interrupted: bool
    warnings: list[str]
    client_bound: NotRequired[bool]  #: the client, not the server, limited the rate (`load.record.saturation`)
    client_bound_reason: NotRequired[str | None]  #: what says so: the client's CPU, its event-loop lag
    client_busy_pct: NotRequired[float | None]  #: the busiest load thread's median busy % (on or waiting for a CPU)
    client_wait_pct: NotRequired[float | None]  #: the largest median % a load thread waited for a CPU
    client_lag_ms: NotRequired[float | None]  #: the worst median event-loop lag of the load processes
    client_cpu_us: NotRequired[float | None]  #: the client's CPU microseconds per request completed
    client_advice: NotRequired[str]  #: when client-bound: its ceiling and what would raise it
    start_s: NotRequired[float]  #: starting the clients (connecting them, for a closed loop without keep-alive)
    teardown_s: NotRequired[float]  #: from the window's close until every connection was closed
    client_errors: NotRequired[dict[str, int]]  #: the client's own socket errors (EMFILE ...)
    schedule: NotRequired[ScheduleDoc]  #: the schedule's own description, plus keepalive
    engine: NotRequired[str]
    workers: NotRequired[int]
    url: NotRequired[str]
    clients: NotRequired[int]  #: bench: the concurrency level
    timeout_s: NotRequired[float]  #: bench: the per-request timeout
    warmup_s: NotRequired[float]  #: bench: load sent before the window, not counted
    stopped_by: NotRequired[Literal["time", "requests", "interrupted"]]  #: the window closed, -n was done, Ctrl-C
    warmup_requests: NotRequired[int]  #: started during the warm-up; not counted, but the server saw them
    users_reached: NotRequired[int]  #: ramp: the users started by the window's close, when fewer than all
    users_unanswered: NotRequired[int]  #: users (closed clients, ramp users) with no answer at all in the window
    status_codes: NotRequired[dict[str, int]]  #: responses by exact status code, e.g. {"200": 9120, "404": 3}
    phases_ms: NotRequired[dict[str, LatencyMs]]  #: connect (new connections), write, wait (first byte), read
    connections_opened: NotRequired[int | None]  #: connections the answered requests opened (keep-alive: few)
    slow_connects: NotRequired[SlowConnects]  #: the requests TCP's SYN retry delayed by 1 s and 3 s (facts.py)
    bytes_per_response: NotRequired[float | None]  #: bytes received per response, head included
    lost: NotRequired[list[str]]  #: shares whose worker died or left (the load is partial), in words
    cluster: NotRequired[dict[str, Any]]  #: bench --cluster: the Dask scheduler, its workers, their clock offsets
    tls: NotRequired[TlsFacts | None]  #: https: what the handshakes negotiated and how many; None over http
    tls_errors: NotRequired[dict[str, int]]  #: https: tls_error's reasons -> count
    streams: NotRequired[StreamFacts | None]  #: h2, h2c, h3: streams, GOAWAYs, RST_STREAMs; None for h1
    pages: NotRequired[list[PageSummary]]  #: a load of several pages: each one's figures, in the load's order
    journeys: NotRequired[dict[str, JourneyDoc]]  #: --journey: each journey's completions and failures
    journey_completion: NotRequired[float | None]  #: --journey: completed / (started - cut), all journeys
    journey: NotRequired[str]  #: --journey: the mix this load walked (`reader=80,author=20`; its seed: journey_seed)
    replay: NotRequired[ReplayDoc]  #: a replayed access log: its rates, the answers as in the log or not


class RoleMetrics(TypedDict, total=False):
    """A role measured apart from the server (an app's database), summed up from its own columns."""

    cpu_pct: float | None  #: mean over the window, 100 = one core
    cpu_pct_max: float | None
    mem_peak_bytes: int | None
    peaks: dict[str, float]
    """Each of its status columns (`<role>_…`) at its highest in the window."""


class ServerMetrics(TypedDict, total=False):
    """A trial's server side summed up from the 1 Hz samples."""

    cpu_pct: float | None  #: mean over the window, 100 = one core
    cpu_pct_max: float | None
    mem_peak_bytes: int | None
    mem_mean_bytes: int | None
    pids_peak: int | None  #: threads (cgroup pids)
    procs_peak: int | None
    tcp_peak: int | None
    tcp_established_peak: int | None
    busy_workers_peak: float | None
    oom_kills: int
    mem_limit_hits: int
    samples: int
    apart: dict[str, RoleMetrics]
    """The roles measured apart (an app's database), by name."""
    limits: dict[str, list[Any]]
    """A status column a cause reads as a peak -> [the setting it points to, its value]: what the peak is
    measured against (connections in use against max_connections)."""
    kernel: KernelDoc  #: the kernel's listen-queue counters over the window, their scope and somaxconn


class ContainerState(TypedDict):
    """Docker's word on one container after the load."""

    Status: str | None
    ExitCode: int | None
    OOMKilled: bool | None


class CauseDoc(HeldFacts):
    """A limit the servers' own evidence points to in one trial, as figures (`observe.evidence` finds it,
    `report.causes` says it in words): an entry of a trial's `causes`."""

    cause: str  #: the stack's cause key (`program.what`, as in `log_evidence`), or `oom`: the same cause across trials
    phrase: str  #: the limit in words (the stack's `[[causes]]` phrase)
    setting: NotRequired[str]  #: the tunable it points to
    value: NotRequired[Setting]  #: that tunable's value in the trial
    quote: NotRequired[str]  #: the first line of the window that says so, as the server wrote it
    logged: NotRequired[int]  #: the lines of the window that say so
    peak: NotRequired[float]  #: a status column's peak that reached `value` (all workers busy)
    peak_said: NotRequired[str]  #: that peak in the stack's words (`{limit}`: the value)
    rose: NotRequired[float]  #: how much a counter of the server's own (or the kernel's) rose in the window
    also: NotRequired[dict[str, Setting]]  #: other tunables its words name, with their values (the worker limit)
    rose_said: NotRequired[str]  #: that rise in the stack's words (`{times}`: the rise in words)
    kinds: NotRequired[list[str]]  #: the client failure kinds it makes (the trial's `result.failures`: which were seen)
    oom_kills: NotRequired[int]  #: `oom`: the server processes the kernel killed at the memory cap
    memory: NotRequired[int]  #: `oom`: the memory cap, bytes
    said: NotRequired[str]  #: read from an older run.json's note: its evidence, in its words (no figures apart)


class TrialRecord(TypedDict):
    """One server x level x trial, as stored in run.json's `trials`."""

    server: str  #: the label (a stack name, or a variant's label)
    level: int  #: concurrency (clients, users or in-flight cap)
    trial: int  #: 1-based repeat number
    stack: str
    keepalive: bool
    status: TrialStatus
    reason: str | None  #: why the status is not `ok`, in words
    page: NotRequired[str]
    ready_s: NotRequired[float | None]  #: seconds from start to ready (None: the server was reused)
    window_start: NotRequired[float]  #: the measured window's start on the wall clock, epoch seconds
    result: NotRequired[LoadSummary]
    tls: NotRequired[TlsFacts | None]  #: https: the result's `tls` (None: plain http; absent: an older run)
    latency_hist: NotRequired[HistogramDoc]
    page_hists: NotRequired[dict[str, HistogramDoc]]  #: a load of several pages: each page's latency histogram
    service_hist: NotRequired[HistogramDoc]
    server_metrics: NotRequired[ServerMetrics]
    container_state: NotRequired[dict[str, ContainerState]]
    log_evidence: NotRequired[dict[str, int]]  #: the servers' log lines of the window by cause (the stack's causes)
    causes: NotRequired[list[CauseDoc]]  #: the limits the evidence (logs, status pages, OOM kills) shows
    notes: NotRequired[list[str]]  #: older results: those limits as sentences (store.reader.causes_of)
    warnings: NotRequired[list[str]]  #: the client's socket errors, sampler errors ...


class ServerTls(TypedDict):
    """What the primer's handshake saw of a label's server under --tls, as OpenSSL and Python's ssl name it."""

    version: str  #: the TLS version negotiated (TLSv1.3)
    cipher: str  #: the cipher suite negotiated (TLS_AES_256_GCM_SHA384)
    alpn: str | None  #: the protocol ALPN chose (http/1.1); None: the server chose none
    chain_ok: bool  #: the server's certificate chain verified against the run's CA
    key: str  #: the certificate's key type, as its key says (ecdsa-p256, rsa-2048, rsa-4096)


class ServerInfo(StatesInfo, total=False):
    """A server label's set-up, stored once per run (run.json's `servers`)."""

    stack: str
    description: str
    php_api: str
    workers: str | None  #: how its server handles connections, in its own word (a role's `vars.workers`)
    busy_limit: str  #: the tunable that caps its busy workers (the stack's `busy_limit`)
    settings: dict[str, Setting]  #: every tunable in effect
    configs: dict[str, str]  #: rendered config files by path (the user's own as they were, see own_configs)
    own_configs: dict[str, str]  #: `role/name` -> the user's file that ran in its place (--config)
    unmeasured: list[str]  #: what the user's own config kept from being measured, in words
    versions: dict[str, str]
    image_ids: dict[str, str]
    cpus: str | None
    memory_bytes: int | None
    keepalive: bool
    page: str
    app: str  #: the application it served the page from (--app); absent: the demo or the user's pages
    url: str  #: bench: the URL loaded
    tls: ServerTls  #: --tls: what the primer's handshake saw; absent: plain http
    proto: str  #: the protocol asked (--proto: h1, h2, h2c, h3); absent: h1
    negotiated: str  #: what the primer saw the server speak for it (h2 by ALPN, h2c by its SETTINGS, http/1.1)
    goaway_after: str  #: the tunable after whose count of requests the server sends GOAWAY (the stack's)


class MachineInfo(TypedDict, total=False):
    """Where the run ran (what is known of it)."""

    kernel: str
    cpu_model: str
    cores: int | None
    mem_total_bytes: int | None
    docker_version: str | None
    python: str
    nofile_hard: int
    somaxconn: int | None
    hostname: str


RunKind = Literal["run", "bench", "capacity", "tune"]
"""What wrote a results folder: a sweep, a bench of a URL, a capacity search, a tuning study."""


class RunDoc(TypedDict):
    """run.json: everything about one run but the per-second tables."""

    format: int
    kind: RunKind
    name: str
    status: RunStatus
    spec: SpecDoc
    loadcmp_version: str
    started: str
    machine: MachineInfo
    servers: dict[str, ServerInfo]
    trials: list[TrialRecord]
    run_id: NotRequired[str]
    owner: NotRequired[str]  #: `pid:start` of the process that writes it (lab.provenance.this_process)
    host: NotRequired[str]  #: the machine that process runs on
    description: NotRequired[str]
    git_commit: NotRequired[str | None]
    images: NotRequired[dict[str, str]]
    cluster: NotRequired[dict[str, Any]]  #: --cluster: the Dask scheduler, its workers, their hosts and clock offsets
    docker_host: NotRequired[dict[str, Any]]  #: the engine the stacks ran on, the server address, how measured
    www: NotRequired[dict[str, str | int]]  #: --www: the folder, its file count, a hash of its files (lab.www)
    ended: NotRequired[str]
    problems: NotRequired[list[str]]
    findings: NotRequired[list[FindingDoc]]  #: the experiment's [[findings]], judged after the run
    capacity: NotRequired[CapacityDoc]  #: `loadcmp capacity`: the target, the search's settings, each server's edge
    tune: NotRequired[TuneDoc]  #: `loadcmp tune`: the study, its trials, the best settings and their gain


FindingVerdict = Literal["supported", "not supported", "inconclusive"]
"""What the measured results say of a write-up's claim (`loadcmp.verdicts.judge`)."""


class FindingDoc(TypedDict):
    """One `[[findings]]` entry judged on the results: in run.json and `run --json`."""

    claim: str  #: the write-up's statement, in its words
    check: str  #: the expression it was judged by, as written
    verdict: FindingVerdict
    values: dict[str, Any]  #: what decided it, per level: means, 95 % intervals, trials, ratios
    reason: str | None  #: why it is not supported or inconclusive (None when supported)
    text: str  #: one sentence: the verdict and the figures behind it


def missing_keys(doc: Mapping[str, object], kind: type) -> list[str]:
    """The keys a TypedDict requires that `doc` lacks (a reader checks before it indexes).

    Read from the annotations' text: with postponed annotations, Python 3.11's
    `__required_keys__` does not see `NotRequired`."""
    if not getattr(kind, "__total__", True):
        return []  # total=False: every key may be absent
    text = {k: str(getattr(a, "__forward_arg__", a)) for k, a in kind.__annotations__.items()}
    return [k for k, a in text.items() if not a.startswith("NotRequired[") and k not in doc]
