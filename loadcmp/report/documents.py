"""The report as a self-contained HTML page and as Markdown, from one `build.Report`.

Both say the same things in the same order: what was run, a capacity search's results, the findings
(the write-up's claims with their verdicts, then what happened and why), Table 1, the TLS handshakes
(https only), the comparison, the figures, the notes, and the full set-up.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from typing import Any

from ..records import FindingDoc
from ..store.reader import Results
from .compare import RatioRow
from .plots import Drawn
from .tables import long_form
from .streams import titled
from .journeys import LEGEND as JOURNEY_LEGEND
from .mixes import LEGEND as MIX_LEGEND
from .events import LEGEND as EVENTS_LEGEND
from .tls import LEGEND as TLS_LEGEND
from .timeparts import LEGEND as TIME_LEGEND, SLOWEST_LEGEND


@dataclass
class Report:
    """What the report says, once, for every format."""

    title: str
    data: Results
    claims: list[FindingDoc]
    story: list[tuple[str, list[str]]]
    setup: list[tuple[str, str]]
    settings: dict[str, dict[str, Any]]
    header: list[tuple[str, str]]
    rows: list[list[str]]
    legend: str
    warnings: list[str]
    comparison: list[str]  #: one sentence per level and pair about requests served (`compare.comparison_lines`)
    baseline: str
    ratios: list[RatioRow]
    figures: list[Drawn]
    png: dict[str, bytes]  #: stem -> the figure as PNG (figures drawn only)
    svg: dict[str, bytes]  #: stem -> as SVG, when asked for
    capacity: tuple[list[str], list[list[str]]] = ([], [])  #: a capacity search's table (header, rows); none: empty
    capacity_lines: tuple[str, ...] = ()  #: the search in words: its target, each server's result and notes
    tune: tuple[list[str], list[list[str]]] = ([], [])  #: a tuning study's trials (header, rows); none: empty
    tune_lines: tuple[str, ...] = ()  #: the study in words: what was tuned, its answer, what mattered, the block
    tls: tuple[list[str], list[list[str]]] = ([], [])  #: https: the handshakes table (header, rows); plain: empty
    tls_lines: tuple[str, ...] = ()  #: https: what each label negotiated, the resumption asked for, tls_error
    streams: tuple[list[str], list[list[str]]] = ([], [])  #: h2/h2c: the streams table (header, rows); h1: empty
    stream_lines: tuple[str, ...] = ()  #: h2/h2c: what each label negotiated, trials stopped for it, GOAWAY every N
    mix: tuple[list[str], list[list[str]]] = ([], [])  #: a mix: each page's row (`report.mixes`); none: empty
    mix_lines: tuple[str, ...] = ()  #: a mix: its pages, weights and seed
    journeys: tuple[list[str], list[list[str]]] = ([], [])  #: --journey: completion per journey; none: empty
    journey_steps: tuple[list[str], list[list[str]]] = ([], [])  #: --journey: each step as a page
    events: tuple[list[str], list[list[str]]] = ([], [])  #: --event: each event and its cost; none: empty
    event_lines: tuple[str, ...] = ()  #: --event: each event's evidence quoted, a failed one's reason
    time_parts: tuple[list[str], list[list[str]]] = ([], [])  #: --trace: each cell's p99 by part; untraced: empty
    time_part_lines: tuple[str, ...] = ()  #: --trace: where each cell's time went, in words; what did not match
    slowest: tuple[list[str], list[list[str]]] = ([], [])  #: --trace: the slowest traced requests and their parts

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1rem;
color:#222;line-height:1.45}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin:1rem 0 .3rem}.lead{color:#444}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:.6rem .8rem;border-radius:6px;margin:.8rem 0}
.banner.bad{background:#fde2e1;border-color:#d88}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
figure{margin:1.2rem 0;overflow-x:auto}figure img{width:100%;height:auto;border:1px solid #eee;box-sizing:border-box}
figcaption{font-size:.9rem;color:#444}p.instead{color:#555;font-style:italic}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dt{font-weight:600}dd{margin:0}ul li{margin:.25rem 0}details{margin:.4rem 0}pre{font-size:.75rem;overflow-x:auto}
.supported{color:#1a7f37}.not-supported{color:#c62828}.inconclusive{color:#9a6700}small.legend{color:#555}
@media (max-width:700px){dl{grid-template-columns:1fr}body{padding:.5rem}figure img{width:720px;max-width:none}
figcaption{position:sticky;left:0;max-width:calc(100vw - 1.5rem)}}
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _table_html(header: list[tuple[str, str]], rows: list[list[str]]) -> str:
    groups: list[tuple[str, int]] = []
    for g, _ in header:
        if groups and groups[-1][0] == g:
            groups[-1] = (g, groups[-1][1] + 1)
        else:
            groups.append((g, 1))
    h1 = "".join(f'<th colspan="{n}">{_e(g)}</th>' for g, n in groups)
    h2 = "".join(f"<th>{_e(w)}</th>" for _, w in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    top = f"<tr>{h1}</tr>" if any(g for g, _ in header) else ""
    return f'<div class="scroll"><table><thead>{top}<tr>{h2}</tr></thead><tbody>{body}</tbody></table></div>'


RATIO_HEADER = ["clients", "B / A", "requests/s", "p99 latency, pooled", "failures", "peak memory"]


def _ratio_rows(rows: list[RatioRow]) -> list[list[str]]:
    return [[f"{r.level:,}", f"{r.server} / {r.baseline}",
             *(r.ratios[k].text() for k in ("rps", "p99", "failed", "mem"))] for r in rows]


def _ratio_lead(r: Report) -> str:
    against = (f"each server B to {r.baseline} (A)" if r.baseline else
               "each label B to the label A it is compared with (the stacks within each protocol, and each stack "
               "against itself on its first protocol)")
    return (f"Ratios of {against} per level; above 1, B has more. The 95 % interval is given "
            "where both sides have 3 trials or more.")


def _lead(r: Report) -> str:
    """One line under the title: the load of the (first) run."""
    return next((v for k, v in r.setup if k == "load"), "")


def _section_html(title: str, table: tuple[list[str], list[list[str]]], legend: str, lines: tuple[str, ...]
                  ) -> list[str]:
    """A section of a table, its legend and lines in words; nothing when it has neither rows nor lines."""
    if not table[1] and not lines:
        return []
    parts = [f"<h2>{_e(title)}</h2>"]
    if table[1]:
        parts += [_table_html([("", h) for h in table[0]], table[1]),
                  f"<p><small class='legend'>{_e(legend)}</small></p>"]
    return parts + ["<ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>"]


def _section_md(title: str, table: tuple[list[str], list[list[str]]], legend: str, lines: tuple[str, ...]
                ) -> list[str]:
    """The Markdown of `_section_html`."""
    if not table[1] and not lines:
        return []
    parts = [f"## {title}", ""]
    if table[1]:
        parts += [_md_table(*table), "", f"*{legend}*", ""]
    return parts + [f"- {x}" for x in lines] + [""]


def html_page(r: Report) -> str:
    """report.html: one file, the figures inline as PNG, no request to anywhere."""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{_e(r.title)}</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{_e(r.title)}</h1>", f"<p class='lead'>{_e(_lead(r))}</p>"]
    if r.data.interrupted:
        parts.append("<div class='banner bad'><b>Interrupted run.</b> These results hold only the trials that "
                     "finished before the run was stopped (or its process was killed: see the warnings).</div>")
    if r.tune[1]:
        parts.append("<h2>Tuning</h2><ul>" + "".join(
            f"<li><pre>{_e(x)}</pre></li>" if "\n" in x else f"<li>{_e(x)}</li>" for x in r.tune_lines) + "</ul>")
        parts.append("<div class='scroll'>" + _table_html([("", h) for h in r.tune[0]], r.tune[1]) + "</div>")
    if r.capacity[1]:
        parts.append("<h2>Capacity</h2>" + _table_html([("", h) for h in r.capacity[0]], r.capacity[1]))
        parts.append("<ul>" + "".join(f"<li>{_e(x)}</li>" for x in r.capacity_lines) + "</ul>")
    parts.append("<h2>Findings</h2>")
    if r.claims:
        parts.append("<h3>The write-up's claims, judged</h3><ul>" + "".join(
            f"<li><b class='{f['verdict'].replace(' ', '-')}'>{_e(f['verdict'])}</b>: {_e(f['claim'])}<br>"
            f"<code>{_e(f['check'])}</code> — {_e(f['text'])}</li>" for f in r.claims) + "</ul>")
    for head, lines in r.story:
        parts.append(f"<h3>{_e(head)}</h3><ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>")
    parts.append("<h2>Summary (Table 1)</h2>")
    if len(r.data.servers) > 2:  # the paper's layout, one column group per server, is too wide for a page
        cols, rows = long_form(r.header, r.rows, r.data.servers)
        parts.append(_table_html([("", c) for c in cols], rows))
    else:
        parts.append(_table_html(r.header, r.rows))
    parts.append(f"<p><small class='legend'>{_e(r.legend)}</small></p>")
    parts += _mix_html(r)
    # the primer's facts whenever the run used TLS (or h2); the table when it has rows
    parts += _section_html("TLS handshakes", r.tls, TLS_LEGEND, r.tls_lines)
    title, legend = titled(r.streams[1])
    parts += _section_html(title, r.streams, legend, r.stream_lines)
    parts += _journeys_html(r)
    parts += _section_html("Events", r.events, EVENTS_LEGEND, r.event_lines)
    parts += _section_html("Where the time went", r.time_parts, TIME_LEGEND, r.time_part_lines)
    parts += _section_html("The slowest traced requests", r.slowest, SLOWEST_LEGEND, ())
    if r.comparison:
        parts.append("<h2>Comparison</h2><ul>" + "".join(f"<li>{_e(v)}</li>" for v in r.comparison) + "</ul>")
        parts.append(f"<p>{_e(_ratio_lead(r))}</p>")
        parts.append(_table_html([("", h) for h in RATIO_HEADER], _ratio_rows(r.ratios)))
    parts.append("<h2>Figures</h2>")
    for i, d in enumerate(r.figures, 1):
        if d.stem in r.png:
            b64 = base64.b64encode(r.png[d.stem]).decode()
            parts.append(f"<figure><img alt='{_e(d.caption)}' src='data:image/png;base64,{b64}'>"
                         f"<figcaption>Figure {i}. {_e(d.caption)}</figcaption></figure>")
        elif d.instead:
            parts.append(f"<p class='instead'>Figure {i}: {_e(d.instead)}</p>")
    if r.warnings:
        parts.append("<h2>Notes and warnings</h2><ul>" + "".join(f"<li>{_e(w)}</li>" for w in r.warnings) + "</ul>")
    parts.append("<h2>Set-up</h2><dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in r.setup) + "</dl>")
    for name, settings in r.settings.items():
        kv = "\n".join(f"{k} = {v}" for k, v in settings.items())
        parts.append(f"<details><summary>{_e(name)}: configuration in effect</summary><pre>{_e(kv)}</pre></details>")
    parts.append("<p><small>Built by loadcmp from stored results only: "
                 + _e(", ".join(str(run.path) for run in r.data.runs)) + "</small></p></body></html>")
    return "\n".join(parts)


def _journeys_html(r: Report) -> list[str]:
    """--journey: the journeys' completion and each step's tally; nothing without journeys."""
    if not r.journeys[1]:
        return []
    return ["<h2>Journeys</h2>" + _table_html([("", h) for h in r.journeys[0]], r.journeys[1])
            + _table_html([("", h) for h in r.journey_steps[0]], r.journey_steps[1])
            + f"<p><small class='legend'>{_e(JOURNEY_LEGEND)}</small></p>"]


def _mix_html(r: Report) -> list[str]:
    """A mix's section (its pages, each on its own); nothing for a run without one."""
    if not r.mix[1]:
        return []
    return ["<h2>Pages of the mix</h2>" + _table_html([("", h) for h in r.mix[0]], r.mix[1])
            + f"<p><small class='legend'>{_e(MIX_LEGEND)}</small></p><ul>"
            + "".join(f"<li>{_e(x)}</li>" for x in r.mix_lines) + "</ul>"]


def _mix_md(r: Report) -> list[str]:
    if not r.mix[1]:
        return []
    return ["## Pages of the mix", "", _md_table(*r.mix), "", f"*{MIX_LEGEND}*", ""] + [
        f"- {x}" for x in r.mix_lines] + [""]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(out)


def markdown(r: Report) -> str:
    """report.md: the same text, the figures as PNG files beside it."""
    parts = [f"# {r.title}", "", _lead(r), ""]
    if r.data.interrupted:
        parts += ["> **Interrupted run**: only the trials finished before it stopped are here.", ""]
    if r.tune[1]:
        parts += ["## Tuning", ""] + [f"- {x}" if "\n" not in x else x.replace("\n", "\n\n```toml\n", 1) + "\n```"
                                      for x in r.tune_lines] + ["", _md_table(*r.tune), ""]
    if r.capacity[1]:
        parts += ["## Capacity", "", _md_table(*r.capacity), ""] + [f"- {x}" for x in r.capacity_lines] + [""]
    parts += ["## Findings", ""]
    if r.claims:
        parts += ["### The write-up's claims, judged", ""] + [
            f"- **{f['verdict']}**: {f['claim']}  \n  `{f['check']}` — {f['text']}" for f in r.claims] + [""]
    for head, lines in r.story:
        parts += [f"### {head}", ""] + [f"- {x}" for x in lines] + [""]
    table = (_md_table(*long_form(r.header, r.rows, r.data.servers)) if len(r.data.servers) > 2
             else _md_table([f"{g} {w}".strip() for g, w in r.header], r.rows))
    parts += ["## Summary (Table 1)", "", table, "", f"*{r.legend}*", ""]
    parts += _mix_md(r)
    parts += _section_md("TLS handshakes", r.tls, TLS_LEGEND, r.tls_lines)
    title, legend = titled(r.streams[1])
    parts += _section_md(title, r.streams, legend, r.stream_lines)
    if r.journeys[1]:
        parts += ["## Journeys", "", _md_table(*r.journeys), "", _md_table(*r.journey_steps), "",
                  f"*{JOURNEY_LEGEND}*", ""]
    parts += _section_md("Events", r.events, EVENTS_LEGEND, r.event_lines)
    parts += _section_md("Where the time went", r.time_parts, TIME_LEGEND, r.time_part_lines)
    parts += _section_md("The slowest traced requests", r.slowest, SLOWEST_LEGEND, ())
    if r.comparison:
        parts += ["## Comparison", ""] + [f"- {v}" for v in r.comparison] + [
            "", _ratio_lead(r), "", _md_table(RATIO_HEADER, _ratio_rows(r.ratios)), ""]
    parts += ["## Figures", ""]
    for i, d in enumerate(r.figures, 1):
        if d.stem in r.png:
            parts += [f"![Figure {i}. {d.caption}]({d.stem}.png)", "", f"*Figure {i}. {d.caption}*", ""]
        elif d.instead:
            parts += [f"*Figure {i}: {d.instead}*", ""]
    if r.warnings:
        parts += ["## Notes and warnings", ""] + [f"- {w}" for w in r.warnings] + [""]
    parts += ["## Set-up", ""] + [f"- **{k}**: {v}" for k, v in r.setup] + [""]
    return "\n".join(parts)
