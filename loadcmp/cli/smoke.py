"""`loadcmp smoke`: short runs of the stacks, judged by k6-style checks."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from .app import cli, emit_json
from .display import PlainTable, markup, out, say
from .options import (LoadFlags, SetupFlags, app_option, config_option, docker_options, event_option, json_option,
                      load_options, proto_options, stacks_option, tls_options, writable, www_option)
from .live import LiveFlags, live_options, watching
from .run import raise_for_status, sweep
from ..errors import ConfigError, LabError, StoreError, ThresholdFailed, UsageError, WrongProtocol

if TYPE_CHECKING:
    from ..store.reader import Results
    from ..verdicts.smoke import Check, Verdict

SMOKE_KEYS = {"pages", "checks"}
"""What an experiment file's [smoke] table may hold."""


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True,
              help="Stacks to check (default: the file's servers, else every stack marked smoke = true).")
@load_options
@event_option
@tls_options
@proto_options
@stacks_option
@www_option
@app_option
@config_option
@docker_options
@click.option("--page", "pages", multiple=True, help="Pages to load (repeatable; default /index.html and /info.php).")
@click.option("--check", "checks", multiple=True, metavar="EXPR",
              help="A threshold like rps>200, p(99)<500ms, failed_rate<1%, nginx:mem_peak<256MiB (repeatable).")
@click.option("--baseline", type=click.Path(), help="A stored results folder to compare rps and p99 against.")
@click.option("--max-regression", default="20%", show_default=True, help="Allowed regression against --baseline.")
@click.option("--history", "history_dir", type=click.Path(file_okay=False),
              help="A results folder of earlier runs: fail when this run is a change point for the worse.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--summary", type=click.Path(dir_okay=False), help="Append a Markdown summary here (CI step summary).")
@click.option("--out", "out_dir", help="Where the results folder goes (default results/).")
@json_option
@live_options
def smoke(experiment: str | None, servers_: tuple[str, ...], pages: tuple[str, ...], checks: tuple[str, ...],
          baseline: str | None, max_regression: str, junit: str | None, summary: str | None, as_json: bool,
          **flags: Any) -> None:
    """Short runs of every stack with pass/fail checks (exit 3 when one fails)."""
    from ..experiment.flags import build_spec
    from ..lab.stacks import catalog
    from ..verdicts.smoke import parse_checks, parse_percent, write_outputs

    history_dir: str | None = flags.pop("history_dir")
    events: tuple[str, ...] = flags.pop("events")
    load, setup, live = LoadFlags.pop(flags), SetupFlags.pop(flags), LiveFlags.pop(flags)
    setup.check_out()  # first: a bad path found after the run would lose it and its verdicts
    for flag, file in (("--junit", junit), ("--summary", summary)):
        writable(flag, file, folder=False)
    path, fields, table = _smoke_file(experiment)
    texts, source = _checks(checks, table.get("checks", []), experiment is not None, setup.app or fields.get("app"))
    if not texts:
        raise UsageError("no checks: give --check EXPR or a [smoke] checks list")
    cat = catalog((*fields.get("stack_dirs", ()), *setup.stack_dirs))  # the file's and --stacks'
    parsed = parse_checks(texts, cat)
    margin = parse_percent(max_regression)
    base = _baseline(baseline)
    if not servers_ and "servers" not in fields:
        servers_ = tuple(cat.smoke_servers())
    chosen = _pages(pages, table.get("pages", []), experiment is not None, setup.app)
    file_dirs = tuple(fields.get("stack_dirs", ()))  # a file's own stacks may be named by --server and --set
    given = {**load.given(), **setup.fields_with(tuple(servers_), file_dirs),
             **({"pages": chosen} if chosen is not None else {}), **({"events": events} if events else {})}
    spec = build_spec(path, given)
    say(f"checks, from {_shown(source or path)}: {', '.join(texts)}")
    t = time.monotonic()
    with watching(live) as watch:
        run = sweep(spec, table=False, live=watch, command="smoke")
    elapsed = time.monotonic() - t
    res, verdicts = _judge(run.path, parsed, base, margin)
    said = _history(history_dir, run.path, verdicts)
    passed = all(o.passed for o in verdicts)
    write_outputs(verdicts, res, passed, elapsed, junit, summary, said)
    _print(verdicts, passed, elapsed, as_json, run.path, res)
    raise_for_status(run)
    _raise_for(res, verdicts)


def _smoke_file(experiment: str | None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The experiment file (the user's, else configs/experiments/smoke.toml): its path, its RunSpec fields
    and its [smoke] table, whose keys are checked."""
    from ..experiment.spec import load_experiment
    from ..lab.stacks import configs_dir

    path = experiment or str(configs_dir() / "experiments" / "smoke.toml")
    fields, extra = load_experiment(path)
    table = extra.get("smoke", {})
    unknown = set(table) - SMOKE_KEYS
    if unknown:
        raise ConfigError(f"{path}: [smoke] has unknown key(s) {', '.join(sorted(unknown))} (known: pages, checks)")
    return path, fields, table


def _baseline(folder: str | None) -> Results | None:
    """The stored run --baseline names, read before anything runs (one it cannot read is bad usage)."""
    from ..store.reader import load_results

    if not folder:
        return None
    try:
        return load_results(folder)
    except StoreError as e:
        raise UsageError(f"--baseline: {e}") from None


def _judge(path: str, checks: list[Check], base: Results | None, margin: float) -> tuple[Results, list[Verdict]]:
    """The stored run read back and its verdicts: every check, then rps and p99 against the baseline."""
    from ..store.reader import load_results
    from ..verdicts.smoke import compare_baseline, evaluate

    res = load_results(path)
    verdicts = evaluate(res, checks)
    if base is not None:
        verdicts += compare_baseline(res, base, margin)
    return res, verdicts


def _history(folder: str | None, path: str, verdicts: list[Verdict]) -> list[str]:
    """--history: this run against the stored ones, each change point for the worse a failed check (added to
    `verdicts`); what is said instead (too little history) returned and shown on stderr."""
    from pathlib import Path

    from ..catalog.gate import history_verdicts

    if not folder:
        return []
    found, said = history_verdicts(Path(folder), Path(path))
    verdicts += found
    for line in said:
        say(line)
    return said


def _raise_for(res: Results, verdicts: list[Verdict]) -> None:
    """A server that speaks another protocol than the one asked is a usage error (exit 2, as `run`'s); one that
    could not start is a runtime error (exit 1); a check not met is exit 3."""
    wrong = [tr for tr in res.trials if tr["status"] == "wrong_protocol"]
    if wrong:
        raise WrongProtocol(str(wrong[0].get("reason")))
    not_started = [tr for tr in res.trials if tr["status"] == "server_failed"]
    if not_started:
        raise LabError(f"{len(not_started)} server(s) could not start: {not_started[0].get('reason')}")
    failed = [o for o in verdicts if not o.passed]
    if failed:
        raise ThresholdFailed(f"{len(failed)} of {len(verdicts)} smoke check(s) not met")


def _checks(given: tuple[str, ...], listed: list[str], users_file: bool, app_name: str | None
            ) -> tuple[list[str], str | None]:
    """Which checks a smoke run judges, and the file they come from (None: the experiment file's): --check;
    else the user's own file's `[smoke] checks`; else the app's (a framework's pace is not a demo page's);
    else the default file's."""
    if given:
        return list(given), "--check"
    if users_file and listed:
        return list(listed), None
    own, where = _app_checks(app_name)
    return (own, where) if own else (list(listed), None)


def _shown(source: str) -> str:
    """Where checks come from: --check, or a file (relative to where the user is, when it lies below) [smoke]."""
    from pathlib import Path

    if source == "--check":
        return source
    with contextlib.suppress(ValueError):
        source = str(Path(source).resolve().relative_to(Path.cwd()))
    return f"{source} [smoke]"


def _app_checks(name: str | None) -> tuple[list[str], str]:
    """The app's own `[smoke] checks` and its file, checked here as a --check would be (the file named when
    one is wrong)."""
    from ..lab.apps import APP_FILE, get_app
    from ..verdicts.smoke import parse_checks

    app = get_app(name) if name else None
    if app is None or not app.smoke_checks:
        return [], ""
    where = str(app.home / APP_FILE)
    try:
        parse_checks(list(app.smoke_checks))
    except UsageError as e:
        raise ConfigError(f"{where}: [smoke] {e}") from None
    return list(app.smoke_checks), where


def _pages(given: tuple[str, ...], listed: list[str], users_file: bool, app_flag: str | None
           ) -> tuple[str, ...] | None:
    """Which pages a smoke run loads: --page; else the user's own file's `[smoke] pages`; else, with --app,
    every page of the app; else the user's file's own (None: as `run` reads it); else the default file's."""
    from ..lab.apps import get_app

    if given:
        return tuple(given)
    if users_file and listed:
        return tuple(listed)
    if app_flag:
        return tuple(p.path for p in get_app(app_flag).pages)
    return None if users_file else tuple(listed) or None


def smoke_doc(verdicts: list[Verdict], passed: bool, elapsed: float, res: Results | None,
              path: str) -> dict[str, Any]:
    """`smoke --json`: the verdict, each check's, and the run's rows (`report.tables.summary_doc`'s; none
    without `res`)."""
    from ..report.tables import summary_doc

    return {"passed": passed, "results_dir": path, "elapsed_s": round(elapsed, 1),
            "checks": [{"server": o.server, "check": o.check, "kind": o.kind, "measured": o.measured,
                        "shown": o.shown, "passed": o.passed, "message": o.message,
                        "client_bound": o.client_bound_reason is not None,
                        "client_bound_reason": o.client_bound_reason}
                       for o in verdicts],
            "results": summary_doc(res)["results"] if res is not None else []}


def _print(verdicts: list[Verdict], passed: bool, elapsed: float, as_json: bool, path: str,
           res: Results | None = None) -> None:
    """The checks on stdout: as JSON (`smoke_doc`, with the rows of `res`), else as a table."""
    if as_json:
        emit_json(smoke_doc(verdicts, passed, elapsed, res, path))
        return
    t = PlainTable(title=f"smoke checks ({elapsed:.0f} s)", title_justify="left")
    for c in ("server", "check", "measured", "verdict"):
        t.add_column(c)
    for o in verdicts:
        verdict = Text.from_markup(("[green]pass[/green]" if o.passed else "[red]FAIL[/red]")
                                   + (" [yellow](client-bound)[/yellow]" if o.client_bound_reason else ""))
        t.add_row(o.server, o.check, o.shown, verdict)
    out.print(t)
    for o in verdicts:
        if not o.passed:
            out.print(markup("[red]failed:[/red] {}", o.message))
    bound = next((o for o in verdicts if o.client_bound_reason), None)
    if bound is not None:
        out.print(markup("[yellow]client-bound:[/yellow] {}: {}: figures marked so are the client's limit, not the "
                         "server's", bound.server, bound.client_bound_reason))
    out.print("[green]all checks passed[/green]" if passed else "[red]smoke checks failed[/red]")
