"""--trace on the live page: once a trial's join is done, its parts (each part's share of p50 and p99, trace.json's
figures of it) go to the page as a `parts` event, live (`Feed.trial_end`) and from a stored run (`loadcmp serve`);
the page shows each label's last joined trial in a table, drawn in Debian's Chromium by Playwright."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace

from loadcmp.live.feed import Feed
from loadcmp.live.hub import Hub
from loadcmp.live.storedruns import events
from loadcmp.store import traceparts
from loadcmp.trace.breakdown import PARTS, SHORT

from test_live import Command, browser, free_port, port_is_free  # noqa: F401  (browser: the module's fixture)
from test_trace_report import traced_run


def stored_share(folder: Path) -> dict:
    return traceparts.read_matches(folder)[0]


def with_database(folder: Path, tmp_path: Path) -> Path:
    """`folder` (nginx traced at 50) with apache-prefork at 50 traced too, from the WordPress fixture's lines, its
    database's included and its clients connecting (1 ms each): parts nginx's trial does not have."""
    from loadcmp.trace import join

    from test_trace_join import lines_of, requests_frame

    req = requests_frame("wordpress-nginx", tmp_path).assign(label="apache-prefork", level=50, trial=1, connect_ms=1.0)
    got = join.join(req, lines_of("wordpress-nginx"), (0, 1e12))
    traceparts.add_parts(folder, traceparts.trial_match("apache-prefork", 50, 1, got.parts, got.unmatched),
                         got.parts)
    return folder


def test_a_joined_trial_is_told_to_the_page_with_its_parts(tmp_path: Path) -> None:
    folder = traced_run(tmp_path)
    m = stored_share(folder)
    assert m["p99"]["upstream_wait"] > 0.5 and m["p99_ms"] > m["p50_ms"] > 0
    hub = Hub()
    feed = Feed(hub, "run", "traced")
    feed.path = folder
    rec = {"server": "nginx", "level": 50, "trial": 1}
    feed.trial_end(SimpleNamespace(), rec)  # type: ignore[arg-type]
    feed.trial_end(SimpleNamespace(), {**rec, "trial": 2})  # type: ignore[arg-type]  # not traced: nothing
    told = [json.loads(x) for x in hub.history if '"parts"' in x]
    assert len(told) == 1 and told[0]["key"] == {"server": "nginx", "level": 50, "trial": 1}
    shares = {p["part"]: p["p99"] for p in told[0]["parts"]}
    assert shares["upstream_wait"] == m["p99"]["upstream_wait"]
    assert [p["name"] for p in told[0]["parts"]][-3:] == ["upstream queue", "upstream", "database"]
    assert shares["database"] is None and told[0]["order"] == list(PARTS)  # unknown (no database logged): not 0
    replayed = [e for e in events(folder) if e["type"] == "parts"]  # `loadcmp serve`: the same event
    assert replayed == told


def test_the_page_shows_each_labels_last_trial_parts(browser, tmp_path: Path, artifacts) -> None:  # noqa: F811
    folder = with_database(traced_run(tmp_path / "root"), tmp_path)
    want = stored_share(folder)["p99"]["upstream_wait"]
    db = traceparts.read_matches(folder)[1]["p99"]["database"]
    port = free_port()
    cmd = Command("serve", str(tmp_path / "root"), "--port", str(port))
    try:
        url = cmd.url(prefix=": ")
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.goto(url)
        page.locator("table.runs tbody tr td:first-child a").first.click()
        page.wait_for_selector("#end:not([hidden])", timeout=30_000)
        page.wait_for_selector("#parts-section:not([hidden])", timeout=10_000)
        row = page.locator('#parts tr[data-server="nginx"]')
        assert row.count() == 1
        assert row.locator('td[data-part="upstream_wait"]').inner_text() == f"{round(want * 100)}%"
        # the columns in the order a request goes through them, whichever label came first
        heads = page.locator("#parts tr:first-child th").all_inner_texts()[6:]
        assert heads == [SHORT[p] for p in PARTS if SHORT[p] in heads] and {"connect", "database"} <= set(heads)
        assert row.locator('td[data-part="database"]').inner_text() == "–"  # nginx's database: unknown
        other = page.locator('#parts tr[data-server="apache-prefork"]')
        assert other.locator('td[data-part="database"]').inner_text() == f"{round(db * 100)}%" != "0%"
        page.locator("#parts-section").screenshot(path=str(artifacts / "live-parts.png"))
    finally:
        cmd.proc.send_signal(signal.SIGINT)
        rc = cmd.wait(30)
        cmd.stop()
    assert rc == 0 and "Traceback" not in "".join(cmd.err)
    assert port_is_free(port)
