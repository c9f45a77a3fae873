"""The metric families loadcmp exports, each named once: its name, its type, its help and its own labels.

Every family carries the trial's labels (`TRIAL_LABELS`: the run, the server label, the protocol, the level and
the trial); the client's families add the page. Their values are bounded by what a run holds: no request ids,
no paths beyond the run's pages, no free text. The live endpoint and the stored export both read this table,
so a dashboard's query names the same series in both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..load.record.histogram import BUCKET_BASE as RECORDER_BASE

Kind = Literal["counter", "gauge", "histogram"]

ALL_PAGES = "(all)"
"""The page label of a load as a whole; a load of several pages (a mix, a replay, journeys) has a series of each
page beside it."""
TRIAL_LABELS = ("run", "label", "proto", "level", "trial")
"""The labels of every series: which run, which server set-up (`nginx[h2]`), its protocol, level and trial."""


@dataclass(frozen=True)
class Family:
    """One metric family: `name` without the `_total` a counter's samples add."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    """Its own labels after `TRIAL_LABELS`."""


def _f(name: str, kind: Kind, help_: str, *labels: str) -> Family:
    return Family(name, kind, help_, labels)


CLIENT = (
    _f("loadcmp_requests", "counter", "Requests that ended, by outcome kind (ok, http_5xx, timeout, ...).",
       "page", "outcome"),
    _f("loadcmp_requests_started", "counter", "Requests started in the measured window.", "page"),
    _f("loadcmp_requests_dropped", "counter", "Requests the rate schedule could not start in time.", "page"),
    _f("loadcmp_response_bytes", "counter", "Bytes received in completed responses.", "page"),
    _f("loadcmp_requests_in_flight", "gauge", "Requests in flight when the second closed.", "page"),
    _f("loadcmp_request_latency_seconds", "histogram",
       "Latency from each request's intended start; buckets are edges of the recorder's 1 % buckets.", "page"),
    _f("loadcmp_request_latency_quantile_seconds", "gauge",
       "Latency quantiles of each second (1 = the second's largest).", "page", "quantile"),
    _f("loadcmp_client_cpu_percent", "gauge", "The load thread's CPU over the second (100 = one core)."),
    _f("loadcmp_client_loop_lag_seconds", "gauge", "The event loop's worst lag in the second."),
    _f("loadcmp_streams", "counter", "HTTP/2 and HTTP/3 streams of a trial, by what became of them.", "what"),
    _f("loadcmp_tls_handshakes", "counter", "TLS handshakes of a trial, full or resumed.", "handshake"),
    _f("loadcmp_journeys", "counter", "Journeys of a trial: started, completed, failed, cut at the window's end.",
       "journey_outcome"),
)
"""The client's side: per second while it runs (streams, handshakes and journeys at each trial's end)."""

SERVER = (
    _f("loadcmp_server_cpu_percent", "gauge", "A role's CPU over the second (100 = one core).", "role"),
    _f("loadcmp_server_memory_bytes", "gauge", "A role's memory (cgroup usage).", "role"),
    _f("loadcmp_server_processes", "gauge", "A role's processes.", "role"),
    _f("loadcmp_server_threads", "gauge", "A role's threads.", "role"),
    _f("loadcmp_server_tcp_connections", "gauge", "The server's TCP connections on its port, by state.", "state"),
    _f("loadcmp_server_status", "gauge",
       "A figure of a role's status page (busy workers, php-fpm's queue, ...), named as server.parquet's column.",
       "role", "figure"),
    _f("loadcmp_server_oom_kills", "counter", "Server processes the kernel killed at the memory cap."),
    _f("loadcmp_server_log_lines", "counter", "The servers' log lines of a trial's window, by cause.", "cause"),
    _f("loadcmp_server_causes", "counter", "Trials whose evidence named a cause (logs, status pages, OOM).",
       "cause"),
    _f("loadcmp_events", "counter", "--event's events of a trial (reload, restart, ...) as each ended, by its action "
       "and whether it failed.", "action", "outcome"),
)
"""The server's side, per role (the server, and each role measured apart such as an app's database)."""

FAMILIES = {f.name: f for f in (*CLIENT, *SERVER)}

QUANTILES = (("0.5", "p50_ms"), ("0.9", "p90_ms"), ("0.99", "p99_ms"), ("1", "max_ms"))
"""The per-second quantile gauges and the timeline.parquet columns they come from."""

_ROUND_EDGES_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                  60.0)


def _edge(seconds: float) -> int:
    """The recorder's bucket edge at or just above `seconds`: bucket i holds [base^i, base^(i+1)) microseconds."""
    return math.ceil(math.log(seconds * 1e6) / math.log(RECORDER_BASE) - 1e-9)


LATENCY_EDGES: tuple[tuple[int, str], ...] = tuple(
    (k, f"{RECORDER_BASE ** k / 1e6:.6g}") for k in (_edge(s) for s in _ROUND_EDGES_S))
"""The histogram's buckets: (the recorder's bucket number that starts above the edge, `le` as written). Each
edge is one of the recorder's own, the nearest above a round value, so every count is exact."""


def sample_name(f: Family) -> str:
    return f"{f.name}_total" if f.kind == "counter" else f.name
