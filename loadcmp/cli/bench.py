"""`loadcmp bench URL`: one load against any URL, printed and optionally stored.

It reads as its steps: flags -> plan -> load -> store -> print -> exit code.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from .. import protocols
from ..errors import Interrupted, LoadError, UsageError
from ..facts import PacingFields
from ..records import LoadSummary, SpecDoc
from .app import cli, emit_json, stop_on_signals
from .display import LiveLine, err, markup, print_result, say
from .live import LiveFlags, live_options, tee, watching
from .options import LoadFlags, json_option, load_options, writable

if TYPE_CHECKING:
    from .live import Watchers
    from ..load.driver import LoadSpec
    from ..load.run.workers import Stopper
    from ..load.record.recorder import Result
    from ..load.schedules import Schedule
    from ..load.target import Target
    from ..net.conditions import NetSpec

BENCH_DEFAULTS: dict[str, Any] = {
    "levels": (50,), "duration": 30.0, "requests": None, "schedule": "closed", "keepalive": False, "warmup": 0.0,
    "timeout": 10.0, "engine": "fast", "workers": 1, "cluster": None, "client_cpus": None,
    "ramp_up": None, "pace": None, "rate": None, "max_inflight": None, "net": None, "trace": False, "trace_sample": 1.0,
    "think": None, "send_rate": None, "read_rate": None,
}
"""What `bench` does when a flag is not given (ab and webbench: no keep-alive, no warm-up)."""


@dataclass(frozen=True)
class BenchPlan:
    """What one bench will do, decided from the flags before anything is sent."""

    url: str
    target: Target
    schedule: Schedule
    load: LoadSpec
    clients: int
    """-c: the one concurrency level (ramp: users; rate: the in-flight cap)."""
    workers: int
    client_cpus: str | None
    cluster: str | None
    requests: int | None
    started: str
    net: NetSpec | None = None
    """--net: the conditions of the path (a Toxiproxy between the engine and the server); None: direct."""


@cli.command()
@click.argument("url")
@load_options
@click.option("--method", default="GET", show_default=True)
@click.option("-H", "--header", "headers", multiple=True, help="Extra header 'Name: value' (repeatable).")
@click.option("--body", help="Request body.")
@click.option("--http10", is_flag=True, help="Send HTTP/1.0 requests (webbench -1).")
@click.option("--insecure", is_flag=True,
              help="https: do not verify the server's certificate (self-signed test servers).")
@click.option("--cacert", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="https: verify the server's certificate against this CA file, not the system's.")
@click.option("--tls-resume", type=float, default=0.0, show_default=True, metavar="FRACTION",
              help="https: the share of new connections that resume a saved TLS session (0: a full handshake "
                   "each time, as ab; 1: whenever the server allows).")
@click.option("--proto", default=protocols.DEFAULT, show_default=True, metavar="|".join(protocols.names()),
              help="The protocol: HTTP/1.1, HTTP/2 over TLS (ALPN), HTTP/2 in cleartext (prior knowledge), HTTP/3. "
                   "The load stops with one line when the server negotiates another.")
@click.option("-m", "--streams", type=int, default=1, show_default=True, metavar="N",
              help="h2, h2c, h3: requests in flight per connection, as h2load's -m (-c stays the connections).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Store the result in a results folder here.")
@json_option
@live_options
def bench(url: str, method: str, headers: tuple[str, ...], body: str | None, http10: bool,
          out_dir: str | None, as_json: bool, **flags: Any) -> None:
    """Load any URL and print what happened (no containers involved).

    Defaults: -c 50 -t 30s, a new connection per request, no warm-up. With
    -n N and no -t, it sends N requests whatever they take (up to a cap that
    only a lost request reaches: `schedules.time_cap`).
    """
    from ..load.target import TlsOptions, make_target

    live = LiveFlags.pop(flags)
    insecure, cacert, tls_resume = flags.pop("insecure"), flags.pop("cacert"), flags.pop("tls_resume")
    proto, streams = flags.pop("proto"), flags.pop("streams")
    given = LoadFlags.pop(flags).given()
    v = {**BENCH_DEFAULTS, **given}
    keepalive = v["keepalive"][0] if isinstance(v["keepalive"], tuple) else v["keepalive"]
    target = make_target(url, method=method, headers=headers, body=body, http10=http10, keepalive=keepalive,
                         tls=TlsOptions(insecure, cacert, tls_resume), proto=proto, streams=streams)
    for flag, given_ in (("--tls-resume", tls_resume), ("--cacert", cacert)):
        if given_ and target.scheme != "https":
            raise UsageError(f"{flag} is for https URLs; {url} is plain http")
    plan = _plan(url, target, v, timed="duration" in given)
    writable("--out", out_dir, folder=True)  # before the load: a bad --out found after it would lose what was measured
    from ..load.run.workers import Stopper

    stopper = Stopper()
    with watching(live) as watch:
        feed = watch.feed("bench", f"bench {url}") if watch is not None else None
        result, doc, window_start = _load(plan, stopper, feed)
        if out_dir:
            err.print(markup("stored in {}", _store(out_dir, plan, result, doc, window_start, feed)))
        elif feed is not None:
            feed.done("interrupted" if doc["interrupted"] else "complete")
    if as_json:
        from ..load.record.summary import timeline_rows

        emit_json({**doc, "timeline": timeline_rows(result)})
    else:
        print_result(doc, result.latency())
    _raise_for(doc, result, plan, stopper.signum)


def _plan(url: str, target: Target, v: dict[str, Any], timed: bool) -> BenchPlan:
    """The flags checked and turned into a load (bad usage is refused here, before any request)."""
    from ..load.driver import LoadSpec
    from ..load.pacing import pacing_of
    from ..load.schedules import make_schedule, time_cap
    from ..units import parse_cluster

    if len(v["levels"]) != 1:
        raise UsageError("bench takes one concurrency level; `loadcmp run` sweeps several")
    clients = v["levels"][0]
    if v["cluster"] is not None:
        parse_cluster(v["cluster"])
        if v["workers"] > 1:
            raise UsageError("--workers is for processes on this machine; "
                             "with --cluster the Dask workers share the load")
    sched = make_schedule(v["schedule"], clients, ramp_up=v["ramp_up"], pace=v["pace"], rate=v["rate"],
                          max_inflight=v["max_inflight"], requests=v["requests"])
    duration = v["duration"]
    if v["requests"] is not None and not timed:
        duration = time_cap(v["requests"], clients, v["timeout"])
    if (pacing := pacing_of(v["think"], v["send_rate"], v["read_rate"])) is not None:
        pacing.refuse(sched.kind, target.proto, v["engine"])
    load = LoadSpec(target, sched, duration, warmup=v["warmup"], timeout=v["timeout"], engine=v["engine"],
                    trace=v["trace_sample"] if v["trace"] else 0.0, pacing=pacing)
    return BenchPlan(url, target, sched, load, clients, v["workers"], v["client_cpus"], v["cluster"], v["requests"],
                     time.strftime("%Y-%m-%dT%H:%M:%S%z"), _net(v["net"], target.proto, v["cluster"]))


def _net(text: str | None, proto: str, cluster: str | None) -> NetSpec | None:
    """--net parsed and checked against the protocol, the cluster and the kernel (UsageError: nothing is
    started)."""
    if text is None:
        return None
    from ..net import netem
    from ..net.conditions import parse_net, refuse

    spec = parse_net(text)
    refuse(spec, proto, netem.missing() if spec.via == "netem" else None, cluster)
    return spec


def _load(plan: BenchPlan, stopper: Stopper, feed: Watchers | None = None) -> tuple[Result, LoadSummary, float]:
    """Send the load (here or on a Dask cluster), sum it up as `--json` shows it; when its window began (wall clock)."""
    from ..load.tls import context as tls
    from ..load.run.cluster import open_fleet
    from ..load.engines import engine_path
    from ..protocols import get as get_protocol
    from ..load.record.saturation import Machine, add_advice
    from ..load.record.summary import note_ramp_cut, result_doc
    from ..load.driver import now
    from ..load.run.workers import SPAWN_DELAY, run_load
    from ..net.path import add_net, maybe_path, seen_words

    spec, sched, target = plan.load, plan.schedule, plan.target
    if get_protocol(target.proto).transport == "udp":  # found as browsers find it: Alt-Svc, then a QUIC handshake
        from ..load.h3 import altsvc

        target = altsvc.discover(target, spec.timeout)
        err.print(markup("HTTP/3 on UDP port {} (Alt-Svc): {}", target.port, altsvc.probe(target, spec.timeout)))
        spec = replace(spec, target=target)
    else:
        tls.probe(target, spec.timeout)
    with maybe_path(plan.net, target, plan.client_cpus) as netp, open_fleet(plan.cluster, say) as fleet:
        if netp is not None:
            spec = replace(spec, target=netp.route(target))
            err.print(markup("--net {} ({}): {}", netp.spec.text, netp.carrier, seen_words(netp)))
        if fleet is not None:
            fleet.check_reach(target.host)
        if feed is not None:
            feed.begin(f"{plan.target.host}:{plan.target.port}", plan.clients, 1, proto=plan.target.proto)
        start_at = now() + (0.5 if plan.workers == 1 and fleet is None else SPAWN_DELAY)
        window_start = time.time() - now() + start_at + spec.warmup  # the wall clock: it stamps the seconds
        with stop_on_signals(stopper), LiveLine(f"{plan.url} ") as line:
            live = line if feed is None else tee(line, feed)
            if netp is not None:
                netp.watch_from(start_at + spec.warmup)
            result = run_load(spec, workers=plan.workers, cpus=plan.client_cpus, live=live, stopper=stopper,
                              fleet=fleet, start_at=start_at)
        cluster = fleet.describe() if fleet is not None else None
        used = len(cluster["workers"]) if cluster is not None else plan.workers
        if netp is not None:
            netp.end_window()
    path = engine_path(spec.engine, sched.kind == "closed" and not (spec.pacing and spec.pacing.paced_io and  # over
                       target.scheme == "https"), target.scheme == "https", target.proto)  # https: Python's transports
    doc = result_doc(result, {
        "url": plan.url, "engine": spec.engine, "workers": used,
        "schedule": {**sched.describe(), "keepalive": target.keepalive},
        "timeout_s": spec.timeout, "warmup_s": spec.warmup, "clients": sched.connections,
        "engine_path": path, "proto": target.proto, "streams_asked": target.streams,
        **({"tls_verify": not target.insecure} if target.scheme == "https" else {}),
        **({"cluster": cluster} if cluster is not None else {}),
        **({"lost": result.lost} if result.lost else {}), **({"pacing": spec.pacing.describe()} if spec.pacing else {}),
    })
    note_ramp_cut(doc, sched, spec.warmup)
    if netp is not None:
        add_net(doc, netp.facts(doc["completed"]))
    if target.tls_resume and path == "python":
        doc["warnings"].append("the pure-Python loop offers no saved TLS session (asyncio cannot): every handshake "
                               "was full whatever --tls-resume says")
    add_advice(doc, Machine(os.cpu_count() or 1, None, max(1, len(result.client_use)), target.keepalive))
    return result, doc, window_start


def _store(out_dir: str, plan: BenchPlan, result: Result, doc: LoadSummary, window_start: float,
           feed: Watchers | None = None) -> str:
    """A one-trial results folder with a run's layout, so `report` reads a bench as it reads a run."""
    from urllib.parse import urlsplit

    from .. import __version__
    from ..lab.provenance import git_commit, machine_info
    from ..load.record.summary import timeline_rows
    from ..store.writer import new_run_doc, save_bench

    parts = urlsplit(plan.url)
    spec = SpecDoc(
        servers=[f"{plan.target.host}:{plan.target.port}"], levels=[plan.clients],
        duration=plan.load.duration, warmup=plan.load.warmup, timeout=plan.load.timeout,
        page=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""), schedule=plan.schedule.kind,
        keepalive=[plan.target.keepalive], engine=plan.load.engine, workers=doc.get("workers", plan.workers),
        requests=plan.requests, url=plan.url, trace=plan.load.trace > 0, trace_sample=plan.load.trace or 1.0,
    )
    if (pacing := plan.load.pacing) is not None:  # --think, --send-rate, --read-rate as given
        spec.update(PacingFields(think=pacing.think, send_rate=pacing.send_rate, read_rate=pacing.read_rate))
    run = new_run_doc("bench", f"bench {plan.url}", spec, machine_info(), __version__, plan.started)
    if commit := git_commit():
        run["git_commit"] = commit
    path = save_bench(out_dir, run, doc, (result.latency().to_dict(), result.service().to_dict()),
                      timeline_rows(result), watch=feed.stored if feed is not None else None,
                      window_start=window_start)
    if result.traced is not None:  # --trace: one row per traced request (docs/tracing.md)
        from pathlib import Path

        from ..store.traceparts import add_requests

        n = len(result.traced)
        size = doc["traced_bytes"] = add_requests(Path(path), result.traced, spec["servers"][0], plan.clients, 1)
        err.print(markup("requests.parquet: {:,} traced requests, {:.1f} bytes each", n, size / max(1, n)))
    return str(path)


def _raise_for(doc: LoadSummary, result: Result, plan: BenchPlan, signum: int) -> None:
    """The exit code: a load that was cut short, partial, or measured only failures is not a 0."""
    if result.interrupted:
        raise Interrupted("the numbers above cover the measured part only", signum=signum)
    if result.lost:
        raise LoadError("the load is partial: " + "; ".join(result.lost))
    ended = doc["started"] - doc["unfinished"]
    if ended and not doc["ok"]:  # hey and ab print a table of zeros here; a number to trust must not look like one
        kinds = ", ".join(f"{n:,} {k}" for k, n in sorted(doc["failures"].items(), key=lambda kv: -kv[1]) if n)
        raise LoadError(f"every request failed ({kinds}): the figures above measure failures, not the server")
    if not ended:
        what = (f"all {doc['unfinished']:,} requests were still unanswered" if doc["started"]
                else "no request was sent: every connection was still opening")
        raise LoadError(f"no request ended within the {doc['duration_s']:g} s measured ({what}); "
                        f"the server did not answer in time (--timeout {plan.load.timeout:g} s)")
