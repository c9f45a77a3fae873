"""`loadcmp smoke`: glue between the CLI, the sweep and the checks."""

from __future__ import annotations

import json
import time
from typing import Any

from rich.table import Table

from . import smoke as sm
from .console import err, out
from .errors import ConfigError, StoreError, UsageError
from .stacks import configs_dir
from .results import load_results
from .units import parse_duration, parse_levels

SMOKE_KEYS = {"pages", "checks"}


def run_smoke(*, experiment: str | None, servers: tuple[str, ...], clients: str | None, duration: str | None,
              pages: tuple[str, ...], checks: tuple[str, ...], baseline: str | None, max_regression: str,
              junit: str | None, summary: str | None, out_dir: str | None, as_json: bool) -> int:
    from .run_cmd import build_spec, run

    path = experiment or str(configs_dir() / "experiments" / "smoke.toml")
    flags: dict[str, Any] = {
        "servers": servers or None,
        "levels": tuple(parse_levels(clients)) if clients else None,
        "duration": parse_duration(duration, "-t/--time", allow_zero=False) if duration else None,
        "out": out_dir,
    }
    from .spec import load_experiment

    _, extra = load_experiment(path)
    table = extra.get("smoke", {})
    unknown = set(table) - SMOKE_KEYS
    if unknown:
        raise ConfigError(f"{path}: [smoke] has unknown key(s) {', '.join(sorted(unknown))} (known: pages, checks)")
    texts = list(checks) or list(table.get("checks", []))
    if not texts:
        raise UsageError("no checks: give --check EXPR or a [smoke] checks list")
    parsed = sm.parse_checks(texts)
    margin = sm.parse_percent(max_regression)
    base = None
    if baseline:
        try:
            base = load_results(baseline)
        except StoreError as e:
            raise UsageError(f"--baseline: {e}") from None
    page_list = tuple(pages) or tuple(table.get("pages", ())) or None
    flags["pages"] = page_list
    spec, _ = build_spec(path, flags)
    t = time.monotonic()
    outcome, code = run(spec, as_json=False, quiet=True)
    elapsed = time.monotonic() - t
    res = load_results(outcome.path)
    outcomes = sm.evaluate(res, parsed)
    if base is not None:
        outcomes += sm.compare_baseline(res, base, margin)
    passed = all(o.passed for o in outcomes)
    sm.write_outputs(outcomes, res, passed, elapsed, junit, summary)
    not_started = [tr for tr in res.trials if tr["status"] == "server_failed"]
    _print(outcomes, passed, elapsed, as_json, outcome.path)
    if code == 130:
        return 130
    if not_started:
        err.print(f"[red]error:[/red] {len(not_started)} server(s) could not start: {not_started[0].get('reason')}")
        return 1
    return 0 if passed else 3


def _print(outcomes: list[sm.Verdict], passed: bool, elapsed: float, as_json: bool, path: str) -> None:
    if as_json:
        doc = {"passed": passed, "results_dir": path, "elapsed_s": round(elapsed, 1),
               "checks": [{"server": o.server, "check": o.check, "kind": o.kind, "measured": o.measured,
                           "shown": o.shown, "passed": o.passed, "message": o.message} for o in outcomes]}
        out.file.write(json.dumps(doc, indent=2) + "\n")
        return
    t = Table(title=f"smoke checks ({elapsed:.0f} s)", title_justify="left")
    for c in ("server", "check", "measured", "verdict"):
        t.add_column(c)
    for o in outcomes:
        t.add_row(o.server, o.check, o.shown, "[green]pass[/green]" if o.passed else "[red]FAIL[/red]")
    out.print(t)
    for o in outcomes:
        if not o.passed:
            out.print(f"[red]failed:[/red] {o.message}")
    out.print("[green]all checks passed[/green]" if passed else "[red]smoke checks failed[/red]")
