"""The write-ups' claims as one summary, from their stored runs only, and docs/seeds.md from it.

For each write-up: its file, what was cut to fit the budget, where its run is stored; for each
claim: the write-up's words, the check, what was measured (each side's mean and interval per
level, as the judge stored them), the verdict with its interval, and the cause as the servers'
own evidence gives it (`evidence`): their log lines and status pages (the report's `causes`),
webbench's count beside the strict one, memory per process, and the client's limit. Nothing in
it is a fixed sentence about a write-up: run again on another machine, it says what that run saw.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..records import FindingDoc, TrialRecord
from ..report.story import causes
from ..report.tables import cell_estimate
from ..store.reader import Results, load_results, metrics_of
from ..store.writer import _atomic_write, write_json
from ..units import format_bytes
from ..verdicts.checks import METRICS, show
from ..verdicts.findings import labels, parse_check

VERDICTS = ("supported", "not supported", "inconclusive")


@dataclass(frozen=True)
class SeedRun:
    """One write-up as run: its file, the cuts that fitted it to the budget, and where it is stored."""

    name: str
    file: str
    results: Path | None  #: None: it never started (`problem` says why)
    cuts: tuple[str, ...] = ()
    estimate_s: float | None = None
    problem: str | None = None


def summarize(seeds: list[SeedRun], command: str, budget_s: float | None = None,
              wall_s: float | None = None) -> dict[str, Any]:
    """The summary document: the machine and dates of the runs, then each write-up and its claims."""
    docs = []
    machine: dict[str, Any] = {}
    stamps: list[str] = []
    for seed in seeds:
        doc: dict[str, Any] = {"name": seed.name, "file": seed.file, "cuts": list(seed.cuts),
                               "estimate_s": seed.estimate_s, "problem": seed.problem, "claims": []}
        if seed.results is not None:
            data = load_results(seed.results)
            run = data.run
            machine = machine or dict(run.get("machine", {}))
            stamps += [s for s in (run.get("started"), run.get("ended")) if s]
            doc.update(results=str(seed.results), run_id=run.get("run_id"), status=data.status,
                       description=run.get("description", ""), levels=data.levels,
                       time_s=run["spec"].get("duration"), problems=data.problems,
                       claims=[claim(data, f) for f in run.get("findings", [])])
        docs.append(doc)
    counts = {v: sum(c["verdict"] == v for d in docs for c in d["claims"]) for v in VERDICTS}
    return {"command": command, "budget_s": budget_s, "wall_s": wall_s, "machine": machine,
            "from": min(stamps, default=None), "to": max(stamps, default=None), "verdicts": counts, "seeds": docs}


def claim(data: Results, f: FindingDoc) -> dict[str, Any]:
    """One judged claim: the words, the check, what was measured, the verdict and the evidence."""
    values = f.get("values", {})
    named = labels(parse_check(f["check"]))
    return {"claim": f["claim"], "check": f["check"], "verdict": f["verdict"], "text": f.get("text", ""),
            "measured": measured(values), "causes": evidence(data, named or data.servers, str(values.get("metric")))}


def measured(values: dict[str, Any]) -> list[str]:
    """Each judged level as measured: 'nginx 17,000 req/s (16,800–17,200) ‡ against apache-event 8,461 ...'."""
    figure = str(values.get("metric", ""))
    metric = "p" if figure.startswith("p(") else figure
    out = []
    for lv in values.get("levels", []):
        sides = [lv["left"]] + ([lv["right"]] if "right" in lv else [])
        text = " against ".join(f"{d['server']} {_figure(metric, figure, d)}" for d in sides)
        out.append(f"{text} at {lv['level']:,} clients")
    return out


def _figure(metric: str, figure: str, d: dict[str, Any]) -> str:
    if d.get("mean") is None:
        return f"{figure}: no data"
    def one(v: float) -> str:
        return f"{v:,.0f}" if metric == "rps" else show(metric, v) if metric in METRICS else f"{v:,.1f}"

    spread = (f" ({one(d['low'])}–{one(d['high'])})" if d["n"] >= 3 and d.get("low") is not None
              else f" (n={d['n']})")
    shown = f"{one(d['mean'])} req/s" if metric == "rps" else f"{figure} {one(d['mean'])}"
    return shown + spread + (" ‡" if d.get("client_bound") else "")


def evidence(data: Results, servers: Collection[str], metric: str) -> list[str]:
    """Why, from the run's data: the servers' notes and status pages, webbench's count where it
    differs, memory per process for a memory claim, and where the client set the pace."""
    mine = [s for s in data.servers if s in servers]
    out = causes(data, mine)
    for s in mine:
        out += _webbench(data, s)
        if metric == "mem_peak":
            out += _per_process(data, s)
        bound = [lv for lv in data.levels if data.client_bound(s, lv)]
        if bound:
            why = data.client_bound(s, bound[0])
            out.append(f"{s} was client-bound at {', '.join(f'{lv:,}' for lv in bound)} clients "
                       f"({why.reason if why else 'the client set the pace'}): its rate there is a lower bound.")
    return out


def _webbench(data: Results, server: str) -> list[str]:
    """Where webbench's count would have called failed requests successes (error pages read to the end)."""
    diff: dict[int, tuple[float, float]] = {}  # level -> (webbench's successes beyond ok, failed), per trial
    def beyond(t: TrialRecord) -> float:
        r = t["result"]
        return float(r.get("webbench", {}).get("susceed", r["ok"]) - r["ok"])

    for lv in data.levels:
        more = cell_estimate(data, server, lv, beyond).mean
        failed = cell_estimate(data, server, lv, lambda t: t["result"]["failed"]).mean
        if more and more > 0.5:
            diff[lv] = (more, failed or 0.0)
    if not diff:
        return []
    lv, (d, failed) = max(diff.items(), key=lambda kv: kv[1][0])
    return [f"{server}: webbench would count {d:,.0f} of the {failed:,.0f} requests loadcmp failed at {lv:,} clients "
            f"as successes (it reads an error page to its end as one; {len(diff)} level"
            f"{'s' if len(diff) > 1 else ''} differ)."]


def _per_process(data: Results, server: str) -> list[str]:
    """Peak memory over peak processes where both were sampled: what one process costs here."""
    cells = [(lv, float(mem), int(procs)) for lv in data.levels for t in data.cell(server, lv)
             if (mem := metrics_of(t).get("mem_peak_bytes")) and (procs := metrics_of(t).get("procs_peak"))]
    if not cells:
        return []
    level, peak, count = max(cells, key=lambda c: c[1])
    return [f"{server}: peak memory {format_bytes(peak)} with {count:,} processes at {level:,} clients, "
            f"about {format_bytes(peak / count)} a process."]


def write_summary(summary: dict[str, Any], folder: Path) -> tuple[Path, Path]:
    """seeds.json and seeds.md in `folder`, each written whole (a StoreError when it cannot be)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot write the seeds summary to {folder}: {e.strerror or e}") from None
    js = folder / "seeds.json"
    write_json(js, summary)
    return js, write_page(summary, folder / "seeds.md")


def write_page(summary: dict[str, Any], path: Path) -> Path:
    """The summary as Markdown at `path` (docs/seeds.md), written whole."""
    text = markdown(summary)
    _atomic_write(path, lambda tmp: Path(tmp).write_text(text))
    return path


def markdown(summary: dict[str, Any]) -> str:
    """docs/seeds.md: the machine, the dates and the command, then each write-up's claims in a table."""
    m = summary.get("machine", {})
    counts = summary.get("verdicts", {})
    lines = ["# The five write-ups, re-run", "",
             f"Made by `{summary['command']}` from the runs named below; running it again on any machine makes "
             "this page anew from that machine's runs. Every figure here is in the results folder named beside it.",
             "", "| | |", "|---|---|",
             f"| machine | {m.get('cores', '?')} CPUs ({m.get('cpu_model', 'unknown model')}), "
             f"{format_bytes(m.get('mem_total_bytes'))} memory, kernel {m.get('kernel', '?')} |",
             f"| runs | {summary.get('from') or '-'} to {summary.get('to') or '-'} |",
             f"| command | `{summary['command']}` |"]
    if summary.get("budget_s"):
        took = f"; took {_mins(summary['wall_s'])}" if summary.get("wall_s") else ""
        lines.append(f"| budget | {_mins(summary['budget_s'])}{took} |")
    lines += [f"| verdicts | {', '.join(f'{counts.get(v, 0)} {v}' for v in VERDICTS)} |", "",
              "‡ = client-bound: the client, not the server, set the pace; such a rate is a lower bound on what "
              "the server serves ([client-bound.md](client-bound.md)).", ""]
    for seed in summary["seeds"]:
        lines += [f"## {seed['name']}", ""]
        if seed.get("description"):
            lines += [seed["description"], ""]
        lines.append(f"- file: `{_shown_path(seed['file'])}`")
        if seed.get("results"):
            lines.append(f"- stored in `{seed['results']}` (run {seed.get('run_id')}, {seed.get('status')}); "
                         f"levels {', '.join(f'{lv:,}' for lv in seed.get('levels', []))}")
        lines.append("- cut to fit the budget: " + ("; ".join(f"`{c}`" for c in seed["cuts"]) if seed["cuts"]
                                                   else "nothing, run as the file says"))
        for p in ([seed["problem"]] if seed.get("problem") else []) + seed.get("problems", []):
            lines.append(f"- problem: {p}")
        lines.append("")
        if seed["claims"]:
            lines += ["| the write-up's claim | measured | verdict | cause, from the servers' evidence |",
                      "|---|---|---|---|"]
            lines += [f"| {_cell(c['claim'])}<br>`{_cell(c['check'])}` | {_cell('<br>'.join(c['measured']))} | "
                      f"**{c['verdict']}**: {_cell(c['text'].split(': ', 1)[-1])} | "
                      f"{_cell('<br>'.join(c['causes']) or 'the servers logged none')} |" for c in seed["claims"]]
            lines.append("")
    return "\n".join(lines)


def _shown_path(file: str) -> str:
    """A write-up's file as the page names it: from the project's folder when it is there (the page is read
    beside the code, on any machine)."""
    from ..lab.model import project_root

    try:
        return str(Path(file).resolve().relative_to(project_root().resolve()))
    except ValueError:
        return file


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _mins(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"
