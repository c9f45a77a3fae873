"""`loadcmp bench URL`: one load against any URL, printed and optionally stored."""

from __future__ import annotations

import os
import time
from typing import Any

import click

from .app import cli, emit_json, stop_on_sigint
from .display import LiveLine, err, print_result
from .options import LoadFlags, json_option, load_options
from ..errors import Interrupted, LoadError, UsageError

BENCH_DEFAULTS: dict[str, Any] = {
    "levels": (50,), "duration": 30.0, "requests": None, "schedule": "closed", "keepalive": False, "warmup": 0.0,
    "timeout": 10.0, "engine": "fast", "workers": 1, "cluster": None, "client_cpus": None,
    "ramp_up": None, "pace": None, "rate": None, "max_inflight": None,
}
"""What `bench` does when a flag is not given (ab and webbench: no keep-alive, no warm-up)."""


@cli.command()
@click.argument("url")
@load_options
@click.option("--method", default="GET", show_default=True)
@click.option("-H", "--header", "headers", multiple=True, help="Extra header 'Name: value' (repeatable).")
@click.option("--body", help="Request body.")
@click.option("--http10", is_flag=True, help="Send HTTP/1.0 requests (webbench -1).")
@click.option("--insecure", is_flag=True, help="https: do not verify the server's certificate (self-signed test servers).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Store the result in a results folder here.")
@json_option
def bench(url: str, method: str, headers: tuple[str, ...], body: str | None, http10: bool, insecure: bool,
          out_dir: str | None, as_json: bool, **flags: Any) -> None:
    """Load any URL and print what happened (no containers involved).

    Defaults: -c 50 -t 30s, a new connection per request, no warm-up. With
    -n N and no -t, it sends N requests whatever they take (up to a cap that
    only a lost request reaches: `schedules.time_cap`).
    """
    from ..load.compiled import engine_path
    from ..load.driver import LoadSpec
    from ..load.saturation import Machine, add_advice
    from ..load import tls
    from ..load.cluster import open_fleet
    from ..units import parse_cluster
    from ..load.target import make_target
    from ..load.schedules import make_schedule, time_cap
    from ..load.summary import note_ramp_cut, result_doc, timeline_rows
    from ..load.workers import Stopper, run_load

    given = LoadFlags.pop(flags).given()
    v = {**BENCH_DEFAULTS, **given}
    if len(v["levels"]) != 1:
        raise UsageError("bench takes one concurrency level; `loadcmp run` sweeps several")
    clients = v["levels"][0]
    keepalive = v["keepalive"][0] if isinstance(v["keepalive"], tuple) else v["keepalive"]
    sched = make_schedule(v["schedule"], clients, ramp_up=v["ramp_up"], pace=v["pace"], rate=v["rate"],
                          max_inflight=v["max_inflight"], requests=v["requests"])
    target = make_target(url, method=method, headers=headers, body=body, http10=http10, keepalive=keepalive,
                         insecure=insecure)
    if out_dir:
        from ..store.writer import check_out_dir

        check_out_dir(out_dir)
    tls.probe(target, v["timeout"])
    if v["requests"] is not None and "duration" not in given:
        v["duration"] = time_cap(v["requests"], clients, v["timeout"])
    spec = LoadSpec(target, sched, v["duration"], warmup=v["warmup"], timeout=v["timeout"], engine=v["engine"])
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if v["cluster"] is not None:
        parse_cluster(v["cluster"])
        if v["workers"] > 1:
            raise UsageError("--workers is for processes on this machine; with --cluster the Dask workers share the load")
    with open_fleet(v["cluster"], err.print) as fleet:
        if fleet is not None:
            fleet.check_reach(target.host)
        with stop_on_sigint(Stopper()) as stopper, LiveLine(f"{url} ") as live:
            result = run_load(spec, workers=v["workers"], cpus=v["client_cpus"], live=live, stopper=stopper,
                              fleet=fleet)
        cluster = fleet.describe() if fleet is not None else None
        used = len(cluster["workers"]) if cluster is not None else v["workers"]
    doc = result_doc(result, {
        "url": url, "engine": v["engine"], "workers": used,
        "schedule": {**sched.describe(), "keepalive": keepalive},
        "timeout_s": spec.timeout, "warmup_s": spec.warmup, "clients": sched.connections,
        "engine_path": engine_path(spec.engine, sched.kind == "closed", target.scheme == "https"),
        **({"tls_verify": not insecure} if target.scheme == "https" else {}),
        **({"cluster": cluster} if cluster is not None else {}),
        **({"lost": result.lost} if result.lost else {}),
    })
    note_ramp_cut(doc, sched, spec.warmup)
    add_advice(doc, Machine(os.cpu_count() or 1, None, max(1, len(result.client_use)), keepalive))
    timeline = timeline_rows(result)
    if out_dir:
        from .. import __version__
        from ..lab.provenance import git_commit, machine_info
        from ..store.writer import save_bench

        path = save_bench(out_dir, url=url, label=f"{target.host}:{target.port}", clients=clients,
                          schedule=v["schedule"], requests=v["requests"], keepalive=keepalive, duration=spec.duration,
                          warmup=spec.warmup,
                          timeout=spec.timeout, engine=spec.engine, workers=doc.get("workers", v["workers"]), summary=doc,
                          latency_hist=result.latency().to_dict(), service_hist=result.service().to_dict(),
                          timeline=timeline, started=started, machine=machine_info(), loadcmp_version=__version__,
                          git_commit=git_commit())
        err.print(f"stored in {path}")
    if as_json:
        emit_json({**doc, "timeline": timeline})
    else:
        print_result(doc, result.latency())
    if result.interrupted:
        raise Interrupted("the numbers above cover the measured part only")
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
                        f"the server did not answer in time (--timeout {spec.timeout:g} s)")

