"""Write report.html (self-contained), report.md and the figures from results folders."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from ..errors import StoreError, UsageError
from ..results import Results, Run, load_results, result_of
from ..records import FindingDoc, ServerInfo
from ..store import _atomic_write
from ..units import format_bytes
from . import compare, plots
from .tables import notes, table1

FORMATS = {"html", "md", "png", "svg"}


def parse_formats(text: str) -> set[str]:
    fmts = {f.strip().lower() for f in text.split(",") if f.strip()}
    bad = fmts - FORMATS
    if bad or not fmts:
        raise UsageError(f"bad --format {text!r}: use a list of {', '.join(sorted(FORMATS))}")
    return fmts


def warnings(data: Results) -> list[str]:
    """What a reader must know before trusting the numbers."""
    out: list[str] = []
    for p in data.interrupted:
        out.append(f"The run in {p} was interrupted: it holds only the trials finished before it stopped.")
    for r in data.runs:
        if r.status == "failed":
            out.append(f"The run in {r.path} failed: {'; '.join(r.problems) or 'see run.json'}")
    out += notes(data)
    seen: set[str] = set()
    for t in data.trials:
        result = result_of(t)
        for w in result["warnings"] if result else []:
            key = w.split(" in worker")[0].split(": worker")[0][:60]
            if key not in seen:
                seen.add(key)
                out.append(f"{t['server']} at {t['level']:,} clients: {w}")
    return out


def findings(data: Results) -> list[FindingDoc]:
    """The write-ups' claims as judged after each run (run.json's `findings`)."""
    return [f for r in data.runs for f in r.doc.get("findings", [])]


def _setup(data: Results) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for r in data.runs:
        run = r.doc
        rows.append(("run", f"{r.name} — {r.status} — {run.get('started', '')} → {run.get('ended', '')}"))
        rows += _load_rows(r)
        m = run.get("machine", {})
        if m:
            rows.append(("machine", f"{m.get('cpu_model', '')}, {m.get('cores')} cores, "
                                    f"{format_bytes(m.get('mem_total_bytes'))}, kernel {m.get('kernel')}, "
                                    f"Docker {m.get('docker_version')}, open files {m.get('nofile_hard')}, "
                                    f"somaxconn {m.get('somaxconn')}"))
        rows.append(("loadcmp", f"{run.get('loadcmp_version')} (commit {str(run.get('git_commit') or '?')[:10]})"))
        for name, s in run.get("servers", {}).items():
            rows.append((name, _server_line(s)))
    return rows


def _load_rows(r: Run) -> list[tuple[str, str]]:
    """The load and limits a run used (bench runs load a URL; runs load a page of the stacks)."""
    spec = r.doc.get("spec", {})
    if not spec:
        return []
    sched = spec.get("schedule", "")
    if isinstance(sched, dict):
        sched = json.dumps(sched)
    target = spec.get("url") if r.doc.get("kind") == "bench" else spec.get("page")
    memory = spec.get("server_memory")
    return [
        ("load", f"{sched} schedule, page {target}, {_how_long(spec)} after "
                 f"{spec.get('warmup', 0)} s warm-up, timeout {spec.get('timeout')} s, keep-alive "
                 f"{_onoff(spec.get('keepalive'))}, {spec.get('trials', 1)} trial(s), engine {spec.get('engine')}, "
                 f"{spec.get('workers', 1)} client process(es)"),
        ("limits", f"server CPUs {spec.get('server_cpus') or 'all'}, client CPUs {spec.get('client_cpus') or 'all'}, "
                   f"server memory {format_bytes(memory) if memory else 'no cap'}"),
    ]


def _how_long(spec: dict[str, Any]) -> str:
    """-t, or -n with the time that limited it."""
    if spec.get("requests"):
        return f"{spec['requests']:,} requests per trial (time limit {spec.get('duration'):,.0f} s)"
    return f"{spec.get('duration')} s measured"


def _server_line(s: ServerInfo) -> str:
    vers = ", ".join(s.get("versions", {}).values())
    return f"{s.get('description') or s.get('url', '')}; {vers}"


def _onoff(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return " and ".join(_onoff(x) for x in v)
    return "on" if v else "off"


def _settings(data: Results) -> dict[str, dict[str, Any]]:
    return {name: s["settings"] for r in data.runs for name, s in r.doc.get("servers", {}).items() if s.get("settings")}


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1rem;
color:#222;line-height:1.45}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:.6rem .8rem;border-radius:6px;margin:.8rem 0}
.banner.bad{background:#fde2e1;border-color:#d88}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
figure{margin:1.2rem 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9rem;color:#444}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dt{font-weight:600}dd{margin:0}ul.warn li{margin:.2rem 0}details{margin:.4rem 0}pre{font-size:.75rem;overflow-x:auto}
.supported{color:#1a7f37}.not-supported{color:#c62828}.inconclusive{color:#9a6700}
@media (max-width:600px){dl{grid-template-columns:1fr}body{padding:.5rem}}
"""


def build(paths: list[str] | list[Path], out_dir: str | Path | None = None, formats: set[str] | None = None,
          level: int | None = None) -> dict[str, Path]:
    """Build the report; returns what was written (kind -> path).

    Raises StoreError (a folder unreadable, nothing stored in it, the output not
    writable) and UsageError (a level not run, --out naming a file), one line each."""
    formats = formats or {"html", "md", "png"}
    data = load_results(*paths)
    if not data.trials:
        raise StoreError(f"{', '.join(map(str, paths))}: no trial was stored "
                         "(the run stopped before the first one ended)")
    if level is not None and level not in data.levels:
        raise UsageError(f"--level {level} was not run; levels: {', '.join(map(str, data.levels))}")
    out = _out_dir(Path(out_dir) if out_dir else data.path / "report")
    try:
        return _write(data, out, formats, level)
    except OSError as e:
        raise StoreError(f"cannot write the report to {out}: {e.strerror or e}") from None


def _out_dir(out: Path) -> Path:
    """Create the output folder first, so a bad --out fails before any figure is drawn."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the report folder {out}: {e.strerror or e}") from None
    return out


def _write(data: Results, out: Path, formats: set[str], level: int | None) -> dict[str, Path]:
    figs = plots.figures(data, level)
    written: dict[str, Path] = {}
    images: dict[str, bytes] = {}
    for stem, fig, _ in figs:
        images[stem] = _png(fig)
        if "png" in formats or "md" in formats:
            p = out / f"{stem}.png"
            _atomic_write(p, lambda tmp, b=images[stem]: Path(tmp).write_bytes(b))
            written[f"{stem}.png"] = p
        if "svg" in formats:
            p = out / f"{stem}.svg"
            _atomic_write(p, lambda tmp, f=fig: f.savefig(tmp, format="svg", bbox_inches="tight"))
            written[f"{stem}.svg"] = p
        plt.close(fig)
    captions = {stem: cap for stem, _, cap in figs}
    header, rows = table1(data)
    base, ratios = compare.ratio_table(data)
    verdicts = compare.verdicts(data)
    warns = warnings(data)
    title = "loadcmp report — " + data.name
    if "html" in formats:
        p = out / "report.html"
        doc = _html(data, title, header, rows, base, ratios, verdicts, warns, images, captions)
        _atomic_write(p, lambda tmp: Path(tmp).write_text(doc))
        written["html"] = p
    if "md" in formats:
        p = out / "report.md"
        doc = _md(data, title, header, rows, base, ratios, verdicts, warns, captions)
        _atomic_write(p, lambda tmp: Path(tmp).write_text(doc))
        written["md"] = p
    return written


def _table_html(header: list[tuple[str, str]], rows: list[list[str]]) -> str:
    groups: list[tuple[str, int]] = []
    for g, _ in header:
        if groups and groups[-1][0] == g:
            groups[-1] = (g, groups[-1][1] + 1)
        else:
            groups.append((g, 1))
    h1 = "".join(f'<th colspan="{n}">{html.escape(g)}</th>' for g, n in groups)
    h2 = "".join(f"<th>{html.escape(w)}</th>" for _, w in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table><thead><tr>{h1}</tr><tr>{h2}</tr></thead><tbody>{body}</tbody></table></div>'


def _ratio_rows(rows: list[compare.RatioRow]) -> list[list[str]]:
    return [[f"{r.level:,}", f"{r.server} / {r.baseline}", *(r.ratios[k].text() for k in ("rps", "p99", "failed", "mem"))]
            for r in rows]


RATIO_HEADER = ["clients", "B / A", "requests/s", "p99 latency", "failures", "peak memory"]


def _html(data: Results, title: str, header: list[tuple[str, str]], rows: list[list[str]], base: str,
          ratios: list[compare.RatioRow], verdicts: list[str], warns: list[str], images: dict[str, bytes],
          captions: dict[str, str]) -> str:
    e = html.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{e(title)}</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    if data.interrupted:
        parts.append("<div class='banner bad'><b>Interrupted run.</b> These results hold only the trials that "
                     "finished before the run was stopped.</div>")
    found = findings(data)
    if found:
        parts.append("<h2>Findings of the write-up</h2><ul>" + "".join(
            f"<li><b class='{f['verdict'].replace(' ', '-')}'>{e(f['verdict'])}</b>: {e(f['claim'])}<br>"
            f"<code>{e(f['check'])}</code> — {e(f['text'])}</li>" for f in found) + "</ul>")
    parts.append("<h2>Set-up</h2><dl>" + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in _setup(data)) + "</dl>")
    for name, settings in _settings(data).items():
        kv = "\n".join(f"{k} = {v}" for k, v in settings.items())
        parts.append(f"<details><summary>{e(name)}: configuration in effect</summary><pre>{e(kv)}</pre></details>")
    parts.append("<h2>Summary</h2><p>Successful / failed requests per server and level, with requests/s (± half "
                 "the 95 % interval when there were trials), p99 latency and peak server memory. "
                 "'/' = the level could not run; '*' = see the notes.</p>")
    parts.append(_table_html(header, rows))
    if warns:
        parts.append("<h2>Warnings and notes</h2><ul class='warn'>" + "".join(f"<li>{e(w)}</li>" for w in warns) + "</ul>")
    if verdicts:
        parts.append("<h2>Comparison</h2><ul>" + "".join(f"<li>{e(v)}</li>" for v in verdicts) + "</ul>")
        parts.append(f"<p>Ratios against {e(base)} (95 % interval where trials allow):</p>")
        rr = _ratio_rows(ratios)
        parts.append(_table_html([("", h) for h in RATIO_HEADER], rr))
    parts.append("<h2>Figures</h2>")
    for stem, png in images.items():
        b64 = base64.b64encode(png).decode()
        parts.append(f"<figure><img alt='{e(captions[stem])}' src='data:image/png;base64,{b64}'>"
                     f"<figcaption>{e(captions[stem])}</figcaption></figure>")
    parts.append("<p><small>Built by loadcmp from stored results only: "
                 + e(", ".join(str(r.path) for r in data.runs)) + "</small></p></body></html>")
    return "\n".join(parts)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def _md(data: Results, title: str, header: list[tuple[str, str]], rows: list[list[str]], base: str,
        ratios: list[compare.RatioRow], verdicts: list[str], warns: list[str], captions: dict[str, str]) -> str:
    parts = [f"# {title}", ""]
    if data.interrupted:
        parts += ["> **Interrupted run**: only the trials finished before it stopped are here.", ""]
    found = findings(data)
    if found:
        parts += ["## Findings of the write-up", ""] + [
            f"- **{f['verdict']}**: {f['claim']}  \n  `{f['check']}` — {f['text']}" for f in found] + [""]
    parts += ["## Set-up", ""] + [f"- **{k}**: {v}" for k, v in _setup(data)] + [""]
    parts += ["## Summary", "", _md_table([f"{g} {w}".strip() for g, w in header], rows), ""]
    if warns:
        parts += ["## Warnings and notes", ""] + [f"- {w}" for w in warns] + [""]
    if verdicts:
        parts += ["## Comparison", ""] + [f"- {v}" for v in verdicts] + ["", f"Ratios against {base}:", "",
                                                                         _md_table(RATIO_HEADER, _ratio_rows(ratios)), ""]
    parts += ["## Figures", ""]
    for stem, cap in captions.items():
        parts += [f"![{cap}]({stem}.png)", "", f"*{cap}*", ""]
    return "\n".join(parts)
