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

from test_live import Command, browser, free_port, port_is_free  # noqa: F401  (browser: the module's fixture)
from test_trace_report import traced_run


def stored_share(folder: Path) -> dict:
    (m,) = traceparts.read_matches(folder)
    return m


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
    assert [p["name"] for p in told[0]["parts"]][-2:] == ["upstream queue", "upstream"]
    replayed = [e for e in events(folder) if e["type"] == "parts"]  # `loadcmp serve`: the same event
    assert replayed == told


def test_the_page_shows_each_labels_last_trial_parts(browser, tmp_path: Path, artifacts) -> None:  # noqa: F811
    folder = traced_run(tmp_path / "root")
    want = stored_share(folder)["p99"]["upstream_wait"]
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
        assert "upstream queue" in page.inner_text("#parts tr:first-child")
        page.locator("#parts-section").screenshot(path=str(artifacts / "live-parts.png"))
    finally:
        cmd.proc.send_signal(signal.SIGINT)
        rc = cmd.wait(30)
        cmd.stop()
    assert rc == 0 and "Traceback" not in "".join(cmd.err)
    assert port_is_free(port)
