"""The connects TCP's SYN retry delayed, in words: the share of requests whose connect took about 1 s (their SYN
sent again after TCP's initial retransmission timeout) and about 3 s (sent a third time, 1 s + 2 s later), of a
trial for the console, of a cell (its trials pooled) for the report.

A server whose listen queue is full drops a new connection's SYN; no log of its own says so. The client sends the
SYN again after 1 s, and again 2 s later, so those requests start a second (three) late. Once more than 1 % of a
cell's requests do, its p99 is one of them: p99 jumps by a second while p90 stays where it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..facts import SlowConnects
from ..records import TrialRecord
from ..units import ms

if TYPE_CHECKING:  # pandas: only when results are read (the verdicts take `pooled` and `pct` at the CLI's start)
    from ..store.reader import Results


def pooled(trials: Iterable[TrialRecord]) -> SlowConnects | None:
    """The trials' slow connects added up; None when none stored them (an older loadcmp's results)."""
    docs = [s for t in trials if (r := t.get("result")) and (s := r.get("slow_connects")) is not None]
    if not docs:
        return None
    n, one, three = (sum(d[k] for d in docs) for k in ("requests", "over_1s", "over_3s"))
    return SlowConnects(requests=n, over_1s=one, over_3s=three, share_1s=one / n if n else 0.0,
                        share_3s=three / n if n else 0.0)


def pct(share: float) -> str:
    """A share as people read a small one: `1.2 %`, `0.04 %`."""
    return f"{share * 100:.1f} %" if share >= 0.001 or share == 0 else f"{share * 100:.2f} %"


def share_said(s: SlowConnects) -> str:
    """`1.2 % of requests took ≥ 1 s to connect (0.1 % ≥ 3 s)`: the words every face uses."""
    three = f" ({pct(s['share_3s'])} ≥ 3 s)" if s["over_3s"] else ""
    return f"{pct(s['share_1s'])} of requests took ≥ 1 s to connect{three}"


def trial_line(result: Mapping[str, Any] | None) -> str | None:
    """A trial's slow connects for `run`'s console line; None when no connect took a retry."""
    s = result.get("slow_connects") if result else None
    if not s or not s["over_1s"]:
        return None
    return (f"connect: {share_said(s)} ({s['over_1s']:,} of {s['requests']:,}): SYNs sent again after TCP's 1 s "
            "timeout, a full listen queue")


def cell_line(data: Results, server: str, level: int) -> str | None:
    """A cell's slow connects, its trials pooled, and what they did to its p99; None when none."""
    from ..store.reader import pooled_latency
    cell = data.cell(server, level)
    s = pooled(cell)
    if s is None or not s["over_1s"]:
        return None
    n = len(cell)
    text = (f"{server} at {level:,}: {share_said(s)} ({s['over_1s']:,} of {s['requests']:,}"
            + (f" over {n} trials" if n > 1 else "") + ")")
    h = pooled_latency(cell)
    p99, without = h.percentile(99), h.percentile(99, without_top=s["over_1s"])
    if s["share_1s"] >= 0.01 and p99 is not None and without is not None:
        text += f"; p99 {ms(p99, 1):,.1f} ms, without them {ms(without, 1):,.1f} ms"
    return text + "."


def cell_section(data: Results, line_of: Callable[[Results, str, int], str | None], legend: str) -> list[str]:
    """A report section of one line per cell that has something to say, then `legend` once (none: no section)."""
    out = [line for s in data.servers for lv in data.levels if (line := line_of(data, s, lv))]
    return [*out, legend] if out else []


def slow_connects(data: Results) -> list[str]:
    """The report's section: every cell where a connect waited for TCP's SYN retry (none: no section)."""
    return cell_section(data, cell_line,
                        "A connect of about 1 s is a SYN the server dropped and the client sent again after TCP's "
                        "initial retransmission timeout, 1 s (about 3 s: dropped twice, the timeout doubled); the "
                        "server's listen queue was full. The kernel's overflow count is larger: it counts every drop, "
                        "retries included, and a handshake's last ACK dropped delays the request instead of the "
                        "connect.")
