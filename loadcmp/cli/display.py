"""What people see in the terminal: live lines, progress, result tables.

Everything goes to stderr except what a command was asked to print (JSON,
tables at the end), so `--json` leaves stdout with one document.

rich reads `[h2]` in a string as markup and drops it. What a user gave (a label such as
`nginx[h2]`, a page `/a[b]`, a run's name, a path) reaches the console only through
`markup` (our template, their values escaped) or a `PlainTable` (cells shown as they are).
"""

from __future__ import annotations

import string
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.live import Live as RichLive
from rich.style import StyleType
from rich.table import Table
from rich.text import Text, TextType

from ..records import LatencyMs, LoadSummary, ScheduleDoc, StreamFacts, TrialRecord
from ..net.words import rows as net_rows
from ..units import format_bytes, ms

if TYPE_CHECKING:  # the engine (numpy, uvloop) is imported when a load starts
    from ..load.driver import Live
    from ..load.record.recorder import Histogram

err = Console(stderr=True, highlight=False)
out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)


class _Escaping(string.Formatter):
    def format_field(self, value: object, format_spec: str) -> str:
        return escape(super().format_field(value, format_spec))


_ESCAPING = _Escaping()


def markup(template: str, /, *values: object, **named: object) -> str:
    """rich markup from our template (`str.format`'s fields) and values shown as they are: each value is
    formatted, then escaped, so a label `nginx[h2]`, a page `/a[b]` or a name `[bold]` is never read as a tag."""
    return _ESCAPING.format(template, *values, **named)


class PlainTable(Table):
    """A rich table whose strings (title, column headers, cells) are shown as they are, never read as markup; a
    cell styled on purpose is given as a `Text`."""

    def __init__(self, *, title: TextType | None = None, **kw: Any) -> None:
        style = kw.get("title_style") or "table.title"
        super().__init__(title=Text(title, style=style) if isinstance(title, str) else title, **kw)

    def add_column(self, header: RenderableType = "", *args: Any, **kw: Any) -> None:
        super().add_column(Text(header) if isinstance(header, str) else header, *args, **kw)

    def add_row(self, *renderables: RenderableType | None, style: StyleType | None = None,
                end_section: bool = False) -> None:
        super().add_row(*(Text(r) if isinstance(r, str) else r for r in renderables), style=style,
                        end_section=end_section)


def say(text: str) -> None:
    """One line on stderr, shown as it is (what the lab or a cluster says: it may hold a path or a label)."""
    err.print(text, markup=False)


def warn(text: str | None) -> None:
    """One line on stderr, `warning: ...`, never wrapped (nothing when there is nothing to say)."""
    if text:
        err.print(markup("[yellow]warning:[/yellow] {}", text), soft_wrap=True)


class LiveLine:
    """One line on stderr, redrawn every second while a load runs."""

    def __init__(self, label: str = "", console: Console = err) -> None:
        self.label = label
        self.console = console
        self.live: RichLive | None = None
        self.last = ""

    def __enter__(self) -> LiveLine:
        self.live = RichLive(Text(""), console=self.console, refresh_per_second=4, transient=True)
        self.live.__enter__()
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.__exit__(typ, exc, tb)

    def __call__(self, lv: Live) -> None:
        phase = "measuring" if lv.measuring else "warm-up"
        self.last = (
            f"{self.label}{phase} {max(0.0, lv.elapsed):5.1f}s  req/s {lv.rps:9.0f}  ok {lv.ok:9d}  "
            f"failed {lv.failed:7d}  in flight {lv.inflight:6d}"
        )
        if lv.requests and lv.measuring:
            self.last += f"  {lv.ok + lv.failed:,} of {lv.requests:,} requests"
        client, hot = lv.client_text()
        line = Text(self.last)
        if client:
            self.last += f"  {client}"
            line.append(f"  {client}", style="yellow" if hot else "")
        if self.live is not None:
            self.live.update(line)


def latency_histogram(h: Histogram, bins: int = 10, width: int = 40) -> list[tuple[float, int, str]]:
    """hey-like linear histogram rows (upper edge ms, count, bar) from a log histogram."""
    if h.count == 0:
        return []
    lo, hi = ms(h.min_s or 0.0), ms(h.max_s)
    if hi <= lo:
        return [(hi, h.count, "■" * width)]
    step = (hi - lo) / bins
    counts = [0] * bins
    for a, b, c in h.buckets_ms():
        mid = (a * b) ** 0.5
        i = min(bins - 1, max(0, int((mid - lo) / step)))
        counts[i] += c
    top = max(counts) or 1
    return [(lo + step * (i + 1), c, "■" * max(1 if c else 0, round(width * c / top))) for i, c in enumerate(counts)]


def print_result(doc: LoadSummary, hist: Histogram | None, console: Console = out) -> None:
    """The end-of-bench summary: counts, rates, latency and its histogram, then what to beware of."""
    console.print(_counts_table(doc))
    console.print(_latency_table(doc))
    phases = _phases_table(doc)
    if phases is not None:
        console.print(phases)
    if hist is not None and hist.count:
        console.print("histogram:")
        for edge, c, bar in latency_histogram(hist):
            console.print(f"  {edge:10.3f} ms [{c:>9,}] |{bar}")
    for line in _caveats(doc):
        console.print(line)


def _counts_table(doc: LoadSummary) -> Table:
    """What was sent and what came back: counts by outcome, rates, bytes, status codes, the client's cost."""
    sched = doc.get("schedule") or ScheduleDoc(kind="closed")
    t = PlainTable(title=f"{short_url(doc.get('url', ''))}  ({sched['kind']}, {doc.get('engine', '')} engine)",
              show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value", justify="right")
    t.add_row("measured", f"{doc['duration_s']:.{1 if doc['duration_s'] >= 10 else 3}f} s"
              + ("  (interrupted)" if doc["interrupted"] else ""))
    if n := sched.get("requests"):
        t.add_row("stopped by", _stopped_by(doc, n))
    t.add_row("started", f"{doc['started']:,}")
    t.add_row("ok", f"{doc['ok']:,}")
    t.add_row("failed", f"{doc['failed']:,}")
    for k, v in doc["failures"].items():
        if v:
            t.add_row(f"  {k}", f"{v:,}")
        if k == "tls_error":
            for why, n in (doc.get("tls_errors") or {}).items():
                t.add_row(f"    {why}", f"{n:,}")
    t.add_row("unfinished", f"{doc['unfinished']:,}")
    t.add_row("requests/s (ok)", f"{doc['rps']:,.1f}")
    t.add_row("completions/s", f"{doc['completions_per_s']:,.1f}")
    t.add_row("received", f"{format_bytes(doc['bytes'])} ({format_bytes(doc['bytes_per_s'])}/s)")
    if doc.get("bytes_per_response") is not None:
        t.add_row("size/response", f"{doc['bytes_per_response']:,.0f} bytes (head and body)")
    codes = doc.get("status_codes") or {}
    if codes:
        t.add_row("status codes", ", ".join(f"{code} ×{n:,}" for code, n in codes.items()))
    opened = doc.get("connections_opened")
    if opened and sched.get("keepalive"):
        t.add_row("connections opened", f"{opened:,} ({sum(codes.values()) / opened:,.1f} requests each)")
    if tls := doc.get("tls"):
        t.add_row("tls", " ".join(x for x in (tls["version"], tls["cipher"], tls["alpn"]) if x) or "no handshake")
        t.add_row("handshakes", f"{tls['full']:,} full, {tls['resumed']:,} resumed")
    if st := doc.get("streams"):
        t.add_row("streams", streams_text(st))
    if (client := _client_text(doc)) is not None:
        t.add_row("client", client)
    for what, value in net_rows(cast(dict[str, Any], doc).get("net")):  # --net: the path asked and seen
        t.add_row(what, value)
    wb = doc["webbench"]
    t.add_row("webbench would print",
              f"Speed={wb['pages_per_min']:,.0f} pages/min, {wb['bytes_per_s']:,.0f} bytes/sec; "
              f"Requests: {wb['susceed']:,} susceed, {wb['failed']:,} failed"
              + (" (error pages count as success there)" if wb["susceed"] != doc["ok"] else ""))
    return t


def _client_text(doc: LoadSummary) -> str | None:
    """How busy the client was and what a request cost it (None: not measured)."""
    busy = doc.get("client_busy_pct")
    if busy is None:
        return None
    cost = doc.get("client_cpu_us")
    wait = doc.get("client_wait_pct") or 0.0
    return (f"busy {busy:.0f}%" + (f" ({wait:.0f}% waiting for a CPU)" if wait >= 5 else "")
            + (f", {cost:,.0f} µs CPU per request" if cost else ""))


def _latency_table(doc: LoadSummary) -> Table:
    """The latency percentiles from the intended start (open schedules: the service time below)."""
    sched = doc.get("schedule") or ScheduleDoc(kind="closed")
    lat = PlainTable(title="latency (ms, from intended start)", title_justify="left")
    for k in PERCENTILE_COLUMNS:
        lat.add_column(k.replace("_", "."), justify="right")
    lat.add_row(*_percentile_cells(doc["latency_ms"]))
    if sched["kind"] in ("rate", "ramp"):
        lat.add_row(*_percentile_cells(doc["service_ms"]), style="dim")
        lat.caption = "second row: service time (from the actual send)"
    return lat


def _phases_table(doc: LoadSummary) -> Table | None:
    """Where a response's time went (connect, handshake over https, write, wait, read); None when no phase
    was measured."""
    phases = doc.get("phases_ms")
    if not phases or all(p["p50"] is None for p in phases.values()):
        return None
    ph = PlainTable(title="phases (ms)", title_justify="left",
               caption="connect: new connections; wait: to the first byte", caption_justify="left")
    ph.add_column("phase")
    for k in ("mean", "p50", "p90", "p99", "max"):
        ph.add_column(k, justify="right")
    for name, p in phases.items():
        if p["p50"] is not None and (name != "handshake" or doc.get("tls")):  # http: 0 each time
            ph.add_row(name, _fmt_ms(p["mean"]), _fmt_ms(p["p50"]), _fmt_ms(p["p90"]), _fmt_ms(p["p99"]),
                       _fmt_ms(p["max"]))
    return ph


def _caveats(doc: LoadSummary) -> list[str]:
    """What the figures above must be read with: slow edges, a client-bound load, the load's warnings."""
    out: list[str] = []
    if edges := edges_note(doc):
        out.append(markup("[yellow]note:[/yellow] {}", edges))
    if doc.get("client_bound"):
        out.append(markup("[yellow]client-bound:[/yellow] {}. These figures are the client's limit, not the "
                          "server's. {}", doc.get("client_bound_reason"), _sentence(doc.get("client_advice", ""))))
    out += [markup("[yellow]warning:[/yellow] {}", w) for w in doc["warnings"]]
    return out


def _stopped_by(doc: LoadSummary, n: int) -> str:
    """With -n: whether the requests or the time limit ended the load."""
    by = doc.get("stopped_by")
    if by == "requests":
        warm = doc.get("warmup_requests", 0)
        return f"-n: all {n:,} requests ended" + (f" (after {warm:,} warm-up requests)" if warm else "")
    if by == "interrupted":
        return f"Ctrl-C, {doc['started']:,} of {n:,} requests started"
    return f"the time limit ({doc['duration_s']:.0f} s), {doc['started']:,} of {n:,} requests started"


def edges_note(doc: LoadSummary) -> str | None:
    """When starting the clients or closing their connections took long beside the window, say how long."""
    start, teardown = doc.get("start_s", 0.0), doc.get("teardown_s", 0.0)
    if start + teardown <= max(1.0, 0.1 * doc["duration_s"]):
        return None
    return (f"starting the clients took {start:.1f} s and closing their connections {teardown:.1f} s beside the "
            f"{doc['duration_s']:.1f} s measured (starting is part of the warm-up, or of the window when there is "
            "none; closing comes after it)")


PERCENTILE_COLUMNS = ("min", "mean", "stdev", "p50", "p75", "p90", "p95", "p99", "p99_9", "max")


def _percentile_cells(lat: LatencyMs) -> list[str]:
    cells = cast(dict[str, float | None], lat)
    return [_fmt_ms(cells.get(k)) for k in PERCENTILE_COLUMNS]


def _fmt_ms(v: float | None) -> str:
    return NO_LATENCY if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")


NO_LATENCY = "–"
"""A latency no request gave (none completed): never 0, which would read as instant."""


def p99_text(lat: LatencyMs) -> str:
    """A trial's p99 on its progress line: `12.3 ms`, or `–` when no request completed."""
    v = lat.get("p99")
    return NO_LATENCY if v is None else f"{v:,.1f} ms"


def status_text(rec: TrialRecord) -> str:
    """A trial's status and why (`oom: ...`); a reason that only repeats the status is said once."""
    reason = rec.get("reason")
    return rec["status"] if not reason or reason == rec["status"] else f"{rec['status']}: {reason}"


def short_url(url: str, width: int = 70) -> str:
    """A long URL cut in its middle, so the header keeps its host and its end."""
    return url if len(url) <= width else url[: width // 2 - 1] + "…" + url[-(width - width // 2):]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def print_rows(title: str, header: list[str], rows: list[list[str]], left: tuple[str, ...]) -> None:
    """A report's table on the console (capacity, tuning): the columns named in `left` flush left, figures right."""
    t = PlainTable(title=title, title_justify="left")
    for h in header:
        t.add_column(h, justify="left" if h in left else "right", overflow="fold")
    for row in rows:
        t.add_row(*row)
    out.print(t)


def streams_text(st: StreamFacts) -> str:
    """An h2/h3 load's streams in one line: the protocol, streams per connection, GOAWAYs and RST_STREAMs."""
    most = f"server's max {st['max_concurrent']:,}" if st["max_concurrent"] else "no server max"
    text = (f"{st['protocol']}: {st['streams']:,} on {st['connections']:,} connections "
            f"({st['streams_per_connection']:,.1f} each, at most {st['max_per_connection']:,} answered on one; {most})"
            f"; {st['goaways']:,} GOAWAY")
    if st["goaway_unprocessed"]:
        text += (f" ({st['goaway_unprocessed']:,} streams left unprocessed, {st['retried']:,} sent again on a new "
                 "connection)")
    resets = ", ".join(f"{code} ×{n:,}" for code, n in st["resets"].items())
    return text + f"; RST_STREAM: {resets or 'none'}"
