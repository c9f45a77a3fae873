"""The live page (`--live`, `loadcmp serve`) in Debian's Chromium driven by Playwright, and its server's edges:
a slow browser dropped, a port in use, a token off loopback, Ctrl-C leaving no listening socket."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CHROMIUM = "/usr/bin/chromium"
PANELS = {"client-rps": ["ok", "failed"], "client-latency": ["p50_ms", "p90_ms", "p99_ms"],
          "client-conns": ["inflight"], "client-self": ["client_cpu_pct", "loop_lag_ms"]}
"""Each client panel's series (after x) and the timeline.parquet column each one draws."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Nothing listens on it (a connection the page closed may still be in TIME_WAIT: that holds no port)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class Command:
    """`python -m loadcmp ...` with its stderr read in a thread (the live URL is on it)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "loadcmp", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self.err: list[str] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)

    def url(self, prefix: str = "live: ", timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.err:
                if prefix in line:
                    return line.split(prefix, 1)[1].split()[0]
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError("no URL printed: " + "".join(self.err))

    def wait(self, timeout: float = 60) -> int:
        rc = self.proc.wait(timeout)
        self._t.join(5)
        return rc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    # Not a skip: `make setup` installs both, so their absence is a broken set-up to see, not to hide.
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: run `make setup` (scripts/setup.sh installs it)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def drawn(page: object, panel: str) -> list[list[float | None]]:
    return page.evaluate(f"() => window.loadcmp.charts[{panel!r}].data.map(a => Array.from(a))")  # type: ignore


def assert_drawn_as_stored(data: list[list[float | None]], columns: list[str], stored: pd.DataFrame) -> None:
    """Every point of a panel is the stored row's figure for its second."""
    by_second = stored.set_index("second")
    assert data[0], "nothing drawn"
    for i, second in enumerate(data[0]):
        row = by_second.loc[int(second)]
        for series, col in enumerate(columns, start=1):
            want = row[col] if col in row.index else None  # an older run has no client CPU column
            got = data[series][i]
            if pd.isna(want):
                assert got is None, (col, second)
            else:
                assert got == pytest.approx(float(want), rel=1e-9, abs=1e-9), (col, second, got, want)


def test_bench_live_draws_what_timeline_parquet_holds(browser, faulty, tmp_path, artifacts):
    """A short `bench --live` against the in-process server: the page holds >= 3 points while the load runs,
    and every point drawn, then and at the end, equals the stored per-second record."""
    port = free_port()
    cmd = Command("bench", faulty.url("/ok"), "-c", "4", "-t", "6s", "-k", "--live", str(port),
                  "--out", str(tmp_path))
    try:
        url = cmd.url()
        assert url == f"http://127.0.0.1:{port}/"
        page = browser.new_page(viewport={"width": 1280, "height": 1400})  # type: ignore[attr-defined]
        page.goto(url)
        page.wait_for_function("() => { const c = window.loadcmp.charts['client-rps']; "
                               "return c && c.data[0].length >= 3; }", timeout=30_000)
        during = {p: drawn(page, p) for p in PANELS}
        assert cmd.proc.poll() is None, "the points must come while the command runs"
        assert cmd.wait() == 0, "".join(cmd.err)
        page.wait_for_selector("#end:not([hidden])", timeout=10_000)
        after = {p: drawn(page, p) for p in PANELS}
        page.screenshot(path=str(artifacts / "live-bench.png"), full_page=True)
        assert "complete" in page.inner_text("#end")
        assert page.locator("#report-link").count() == 0, "no link to a server that ends with the command"
        assert page.inner_text("#serve-cmd") == f"loadcmp serve {tmp_path}"
    finally:
        cmd.stop()
    (folder,) = tmp_path.iterdir()
    stored = pd.read_parquet(folder / "timeline.parquet")
    for panel, columns in PANELS.items():
        assert_drawn_as_stored(during[panel], columns, stored)  # the live records are the stored ones
        assert_drawn_as_stored(after[panel], columns, stored)
        assert len(after[panel][0]) == len(stored), "the last point is the stored last second"
    assert port_is_free(port), "the page's socket outlived the command"


def test_serve_lists_the_stored_runs_and_opens_each(browser, artifacts):
    """`loadcmp serve tests/fixtures`: every stored run listed, each one's page drawn from its files, a report
    built on demand; the folder is only read."""
    results = FIXTURES
    stored_runs = sorted(p.parent.name for p in results.glob("*/run.json"))
    assert {"run-2x3x2", "capacity-2x"} <= set(stored_runs)
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    port = free_port()
    cmd = Command("serve", str(results), "--port", str(port))
    try:
        url = cmd.url(prefix=": ")
        page = browser.new_page(viewport={"width": 1280, "height": 1400})  # type: ignore[attr-defined]
        page.goto(url)
        names = page.locator("table.runs tbody tr td:first-child").all_inner_texts()
        assert sorted(names) == stored_runs
        assert "nginx, apache-prefork" in page.inner_text("table.runs")
        for name in names:
            page.goto(url)
            page.click(f"text={name}")
            page.wait_for_selector("#end:not([hidden])", timeout=30_000)
            stored = pd.read_parquet(results / name / "timeline.parquet")
            last = json.loads(page.evaluate("() => JSON.stringify(window.loadcmp.state.current)"))
            server, level, trial = last.rsplit("|", 2)
            mine = stored[(stored.server == server) & (stored.level == int(level)) & (stored.trial == int(trial))]
            assert len(mine) > 0
            for panel, columns in PANELS.items():
                assert_drawn_as_stored(drawn(page, panel), columns, mine)
            assert page.locator("#grid td.cell").count() > 0
            if name == "run-2x3x2":
                page.screenshot(path=str(artifacts / "serve-run.png"), full_page=True)
            if name == "capacity-2x":
                assert page.locator("svg.probes circle").count() > 0, "capacity's probes are drawn"
        with urllib.request.urlopen(f"{url}runs/run-2x3x2/report/", timeout=120) as r:
            assert r.status == 200 and b"<html" in r.read(2000).lower()
        assert sorted(p.relative_to(results) for p in results.rglob("*")) == before, "serve only reads the folder"
    finally:
        cmd.proc.send_signal(signal.SIGINT)
        rc = cmd.wait(30)
        cmd.stop()
    assert rc == 0 and "Traceback" not in "".join(cmd.err)
    assert port_is_free(port)


def test_a_slow_browser_is_dropped_and_the_others_keep_up():
    """A browser that reads nothing is dropped once its queue is full; publishing never waits for it, and a
    browser that reads gets every event."""
    from loadcmp.live.hub import QUEUE, Hub
    from loadcmp.live.server import LiveServer

    hub = Hub()
    server = LiveServer(hub, free_port()).start()
    try:
        slow = socket.create_connection(("127.0.0.1", server.port))
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        got: list[str] = []

        def read() -> None:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/events", timeout=60) as r:
                for line in r:
                    got.append(line.decode())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        deadline = time.monotonic() + 10
        while len(hub.subscribers) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(hub.subscribers) == 2
        pad = "x" * 20_000
        burst = QUEUE // 4  # far more than a command publishes in a second; the reader catches up in between
        sent = 0
        for _ in range(8):
            for _ in range(burst):  # publish returns at once, whatever the browsers do
                hub.publish({"type": "pad", "i": sent, "pad": pad})
                sent += 1
            deadline = time.monotonic() + 30
            while sum('"pad"' in g for g in got) < sent and time.monotonic() < deadline:
                time.sleep(0.02)
        assert hub.dropped == 1, "the browser that reads nothing is dropped"
        assert len(hub.subscribers) == 1
        assert sum('"pad"' in g for g in got) == sent, "the one that reads gets every event"
        slow.close()
    finally:
        server.stop()
    reader.join(10)
    assert port_is_free(server.port)


def test_a_port_in_use_is_one_line_and_exit_2(faulty):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for args in (["bench", faulty.url("/ok"), "-t", "1s"], ["run", "--server", "nginx", "-t", "1s"]):
            cmd = Command(*args, "--live", str(port))
            assert cmd.wait() == 2
            err = "".join(cmd.err)
            assert err.strip() == f"error: --live: port {port} on 127.0.0.1 is in use (give another: --live PORT)"


def test_serve_and_live_name_their_own_flags_when_they_cannot_listen(faulty, tmp_path):
    """A port in use and an address not of this machine: one line, exit 2, naming the flags of the command that
    was run (`serve`: --port and --host; the loading commands: --live and --live-host)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cmd = Command("serve", str(tmp_path), "--port", str(port))
        assert cmd.wait() == 2
        assert "".join(cmd.err).strip() == (f"error: --port: port {port} on 127.0.0.1 is in use "
                                            "(give another: --port PORT)")
    away = "10.99.99.99"  # bound to nothing here: no packet leaves, the bind itself is refused
    for args, flag in ((["serve", str(tmp_path), "--host", away], "--host"),
                       (["bench", faulty.url("/ok"), "-t", "1s", "--live", str(free_port()), "--live-host", away],
                        "--live-host")):
        cmd = Command(*args)
        assert cmd.wait() == 2
        assert "".join(cmd.err).strip() == f"error: {flag}: {away} is not an address of this machine"


def test_another_address_needs_the_token_printed(faulty, tmp_path):
    port = free_port()
    cmd = Command("bench", faulty.url("/ok"), "-c", "1", "-t", "3s", "--live", str(port), "--live-host", "0.0.0.0")
    try:
        url = cmd.url()
        assert not url.startswith("http://0.0.0.0") and url.endswith(tuple(f":{port}/?token={t}" for t in
                                                                           [url.split("token=")[1]]))
        assert len(url.split("token=")[1]) >= 20
        base = f"http://127.0.0.1:{port}/"
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "events", timeout=5)
        assert e.value.code == 403
        with urllib.request.urlopen(base + "?" + url.split("?")[1], timeout=5) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as e:  # read-only: nothing but GET
            urllib.request.urlopen(urllib.request.Request(base + "?" + url.split("?")[1], data=b"x", method="POST"),
                                   timeout=5)
        assert e.value.code == 405
        assert cmd.wait() == 0
    finally:
        cmd.stop()
    alone = Command("bench", faulty.url("/ok"), "-t", "1s", "--live-host", "0.0.0.0")
    assert alone.wait() == 2 and "--live-host goes with --live" in "".join(alone.err)


def test_ctrl_c_during_live_exits_130_and_leaves_no_socket(faulty, tmp_path):
    port = free_port()
    cmd = Command("bench", faulty.url("/ok"), "-c", "2", "-t", "60s", "--live", str(port), "--out", str(tmp_path))
    try:
        cmd.url()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=30) as r:
            for line in r:
                if b'"client"' in line:
                    break
            cmd.proc.send_signal(signal.SIGINT)
            assert cmd.wait(30) == 130
    finally:
        cmd.stop()
    assert port_is_free(port), "a listening socket outlived the command"


@pytest.mark.docker
def test_run_live_shows_both_sides_and_ctrl_c_leaves_nothing(tmp_path, images, docker_client):
    """A real `run --live`: the stream carries the server's samples beside the client's seconds while the
    trial runs; Ctrl-C then exits 130 with no container of the run and no listening socket left."""
    port = free_port()
    cmd = Command("run", "--server", "nginx", "-c", "10", "-t", "30", "--live", str(port), "--out", str(tmp_path))
    try:
        cmd.url(timeout=60)
        kinds: set[str] = set()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=120) as r:
            for line in r:
                if line.startswith(b"data: "):
                    kinds.add(json.loads(line[6:]).get("type", ""))
                if {"client", "server"} <= kinds:
                    break
            cmd.proc.send_signal(signal.SIGINT)
            assert cmd.wait(60) == 130, "".join(cmd.err)
    finally:
        cmd.stop()
    assert {"hello", "trial", "client", "server"} <= kinds
    (folder,) = tmp_path.iterdir()
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert docker_client.containers.list(all=True, filters={"label": f"loadcmp.run={run['run_id']}"}) == []
    assert port_is_free(port)


def test_with_two_workers_the_live_seconds_are_the_merged_stored_ones(faulty, tmp_path):
    """--workers 2: each second on the page is the two shares' seconds merged as the stored result merges them;
    the warm-up's seconds come before them, their requests started summing to the stored warm-up requests."""
    port = free_port()
    cmd = Command("bench", faulty.url("/ok"), "-c", "4", "-t", "5s", "-k", "--workers", "2", "--warmup", "2",
                  "--live", str(port), "--out", str(tmp_path))
    rows = []
    try:
        cmd.url()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=60) as r:
            for line in r:
                if line.startswith(b"data: ") and (ev := json.loads(line[6:])).get("type") == "client":
                    rows.append(ev["row"])
        assert cmd.wait() == 0, "".join(cmd.err)
    finally:
        cmd.stop()
    (folder,) = tmp_path.iterdir()
    stored = pd.read_parquet(folder / "timeline.parquet").set_index("second")
    warm = list({r["second"]: r for r in rows if r.get("warmup")}.values())  # the last told of each second
    rows = [r for r in rows if not r.get("warmup")]
    (trial,) = json.loads((folder / "run.json").read_text())["trials"]
    assert [r["second"] for r in warm] == [-2, -1] and all(r["client_cpu_pct"] is not None for r in warm)
    assert sum(r["started"] for r in warm) == trial["result"]["warmup_requests"] > 0
    assert len(rows) >= 3
    for row in rows:
        want = stored.loc[row["second"]]
        for col in ("ok", "failed", "inflight", "p50_ms", "p90_ms", "p99_ms", "client_cpu_pct"):
            assert row[col] == pytest.approx(float(want[col])), (col, row["second"])


def test_a_capacity_search_feeds_its_probes_and_causes_as_they_are_stored(tmp_path):
    """The feed on the model server's search (tests/helpers/fakeprobe.py): after each stored probe the page
    gets the trial's record with its causes in words, and the search's path with each probe met or missed."""
    from helpers.fakeprobe import Model, fake_sweep

    from loadcmp.experiment.capacity import CapacitySpec
    from loadcmp.experiment.spec import RunSpec
    from loadcmp.live.feed import Feed
    from loadcmp.live.hub import Hub
    from loadcmp.sweep.capacity import search_all
    from loadcmp.verdicts.slo import parse_slo

    hub = Hub()  # no server: the events stay in its history, in order
    feed = Feed(hub, "capacity", "capacity test")
    cap = CapacitySpec(parse_slo("p99<500ms, failed_rate<1%"), max=2000, max_reason="test")
    sweep = fake_sweep(cap.probe_spec(RunSpec(servers=("nginx",), duration=5.0), cap.start), tmp_path)
    sweep.writer.watch = feed.stored
    model = Model({"nginx": 300})
    sweep.writer.finish(search_all(sweep, cap, run=model), sweep.problems)
    events = [json.loads(e) for e in hub.history]
    stored = [e for e in events if e["type"] == "stored"]
    assert len(stored) == len(model.runs) and all(len(e["timeline"]) == 5 for e in stored)
    over = [e for e in stored if e["key"]["level"] > 300]
    assert over and all("all php-fpm workers were busy" in e["causes"][0] for e in over)
    probes = [e["capacity"]["servers"]["nginx"]["path"] for e in events
              if e["type"] == "progress" and "nginx" in e.get("capacity", {}).get("servers", {})]
    assert len(probes[-1]) > len(probes[0]), "the path grows as the probes are stored"
    assert {True, False} <= {p["met"] for p in probes[-1]}
    assert events[-1]["type"] == "end" and events[-1]["status"] == "complete"


def test_capacity_live_on_the_model_server_streams_its_search(monkeypatch, tmp_path):
    """`loadcmp capacity --live` as it is, on the model server: the page's stream carries each stored probe
    and the search's path, then the end; the command exits 0 and leaves no socket."""
    from click.testing import CliRunner
    from helpers.fakeprobe import Model

    from loadcmp.cli import cli
    from loadcmp.experiment.spec import RunSpec
    from loadcmp.store.writer import RunWriter, new_run_doc
    from loadcmp.sweep import capacity, runner
    from loadcmp.sweep.trial import Sweep

    def open_sweep(spec: RunSpec, progress, stopper, images, fleet, kind: str) -> Sweep:  # type: ignore[no-untyped-def]
        doc = new_run_doc("capacity", spec.name or "cap", spec.to_dict(), {"cores": 2}, "test")
        writer = RunWriter.create(spec.out, spec.name or "cap", doc)
        writer.watch = progress.stored  # as runner.open_sweep does
        return Sweep(spec, None, {}, "run-test", writer, stopper, progress)

    model = Model({"nginx": 300})

    def slow_trial(sweep, p, spec):  # type: ignore[no-untyped-def]
        time.sleep(0.05)  # a probe takes a moment, so that the page is open before the search ends
        return model(sweep, p, spec)

    monkeypatch.setattr(capacity, "open_sweep", open_sweep)
    monkeypatch.setattr(capacity, "run_trial", slow_trial)
    monkeypatch.setattr(runner, "clean_up", lambda sweep: None)
    port = free_port()
    events: list[dict[str, object]] = []

    def read() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=20) as r:
                    for line in r:
                        if line.startswith(b"data: "):
                            events.append(json.loads(line[6:]))
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.01)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "--slo", "p99<500ms, failed_rate<1%",
                                   "--out", str(tmp_path), "--live", str(port)])
    reader.join(20)
    assert res.exit_code == 0, res.output
    assert f"live: http://127.0.0.1:{port}/" in res.output
    kinds = [e["type"] for e in events if "type" in e]  # the stream closes with an empty `end` event
    assert kinds[0] == "hello" and kinds.count("stored") == len(model.runs) and kinds[-1] == "end"
    last = [e for e in events if e.get("type") == "progress"][-1]
    assert last["capacity"]["servers"]["nginx"]["kind"] in ("capacity", "at_least")  # type: ignore[index]
    assert port_is_free(port)


def test_a_studys_trials_and_scores_are_drawn_as_run_json_says_them(browser):
    """tune's progress on the page: every trial with its settings, state and score, the best starred, the
    baseline named."""
    from loadcmp.live.feed import ended, hello, progress
    from loadcmp.live.hub import Hub
    from loadcmp.live.server import LiveServer

    trials = [{"number": -1, "label": "nginx-base", "params": {"fpm.max_children": 5}, "state": "complete",
               "value": 87, "met": None, "client_bound": False, "seconds": 30.0, "text": "capacity 87 clients"},
              {"number": 0, "label": "nginx-t0", "params": {"fpm.max_children": 40}, "state": "complete",
               "value": 412, "met": None, "client_bound": True, "seconds": 30.0, "text": "at least 412 clients"},
              {"number": 1, "label": "", "params": {"fpm.max_children": 900}, "state": "pruned", "value": None,
               "met": None, "client_bound": False, "seconds": 0.0, "text": "refused by the stack's checks"}]
    run = {"kind": "tune", "name": "tune-test", "status": "complete", "spec": {"servers": ["nginx"]}, "trials": [],
           "tune": {"server": "nginx", "unit": "clients", "text": "fpm.max_children 40 holds 4.7x", "best": 0,
                    "trials": trials}}
    hub = Hub()
    for ev in (hello("tune", "tune test"), progress(run, "/r"), ended(run, "/r", None)):  # type: ignore[arg-type]
        hub.publish(ev)
    with LiveServer(hub, free_port()) as server:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(server.url)
        page.wait_for_selector("#end:not([hidden])", timeout=10_000)
        rows = page.locator("#tune table tr").all_inner_texts()
        page.close()
    assert len(rows) == 1 + len(trials)
    assert rows[1].startswith("baseline") and "87" in rows[1]
    assert "★" in rows[2] and "412 (at least)" in rows[2] and "900" in rows[3] and "pruned" in rows[3]


def _get(url: str, host: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_loopback_without_a_token_refuses_a_rebound_host():
    """DNS rebinding: a page on loopback answers its own Host names alone; the cookie names its port."""
    from loadcmp.live.hub import Hub
    from loadcmp.live.server import LiveServer, cookie_name

    with LiveServer(Hub(), free_port()) as server:
        base = f"http://127.0.0.1:{server.port}/"
        assert _get(base + "events", f"evil.example:{server.port}")[0] == 403
        assert _get(base, f"127.0.0.1:{server.port}")[0] == 200
        assert _get(base, f"localhost:{server.port}")[0] == 200
    assert cookie_name(server.port) != cookie_name(server.port + 1)


def test_late_browser_gets_the_structure_after_trimming(monkeypatch):
    """Past the history's bound the per-second rows go, never hello nor a trial."""
    from loadcmp.live import hub as hubmod

    monkeypatch.setattr(hubmod, "HISTORY", 50)
    h = hubmod.Hub()
    h.publish({"type": "hello", "title": "t"})
    for i in range(10):
        h.publish({"type": "trial", "key": {"server": "a", "level": i, "trial": 1}})
        for s in range(20):
            h.publish({"type": "client", "row": {"second": s}})
    kinds = [json.loads(t)["type"] for t in h.history]
    assert kinds[0] == "hello" and kinds.count("trial") == 10 and len(kinds) <= 51


def test_server_that_never_binds_is_an_error(monkeypatch):
    from loadcmp.errors import LoadcmpError
    from loadcmp.live.hub import Hub
    from loadcmp.live.server import LiveServer

    server = LiveServer(Hub(), free_port())
    monkeypatch.setattr(server._ready, "wait", lambda t=None: False)
    with pytest.raises(LoadcmpError):
        server.start()
    server.stop()


def _broken_and_good(tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "results"
    shutil.copytree(FIXTURES / "run-2x3x2", root / "a run#1")
    shutil.copytree(FIXTURES / "run-2x3x2", root / "broken")
    doc = json.loads((root / "broken" / "run.json").read_text())
    del doc["trials"][0]["level"]
    (root / "broken" / "run.json").write_text(json.dumps(doc))
    return root


def test_serve_a_broken_run_is_404_in_one_line_and_names_are_encoded(browser, tmp_path):
    port = free_port()
    root = _broken_and_good(tmp_path)
    cmd = Command("serve", str(root), "--port", str(port))
    try:
        url = cmd.url(prefix=": ")
        code, body = _get(url + "runs/broken/events")
        assert code == 404 and body.decode().count("\n") == 1
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(url + "runs/broken/")
        page.wait_for_function("() => document.getElementById('state').textContent.includes('cannot be drawn')",
                               timeout=10_000)
        page.close()
        _get(url + "runs/broken/events")
        listing = _get(url)[1].decode()
        assert "href='runs/a%20run%231/'" in listing
        assert _get(url + "runs/a%20run%231/events")[0] == 200
    finally:
        cmd.proc.send_signal(signal.SIGINT)
        rc = cmd.wait(30)
        cmd.stop()
    err = "".join(cmd.err)
    assert rc == 0 and "Traceback" not in err and err.count("broken: cannot be drawn") == 1, err


def test_stored_runs_sort_by_the_moment_across_offsets(tmp_path):
    from loadcmp.live.storedruns import stored_runs

    doc = json.loads((FIXTURES / "run-2x3x2" / "run.json").read_text())
    for name, started in (("east", "2026-01-01T10:00:00+09:00"), ("west", "2026-01-01T02:00:00-05:00")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps({**doc, "started": started}))
    assert [r.name for r in stored_runs(tmp_path)] == ["west", "east"]  # 07:00Z after 01:00Z


def test_two_reports_at_once_are_each_their_own_run(tmp_path):
    """Two runs' reports asked at the same moment: each URL serves its own run's report."""
    import asyncio

    from loadcmp.live.storedruns import Reports

    a, b = tmp_path / "a", tmp_path / "b"
    for p, name in ((a, "run-2x3x2"), (b, "capacity-2x")):
        import shutil

        shutil.copytree(FIXTURES / name, p)
        shutil.rmtree(p / "report", ignore_errors=True)

    async def both() -> list[Path]:
        reports = Reports()
        try:
            got = await asyncio.gather(reports.response(a), reports.response(b), reports.response(a))
            same = await reports.response(a)
            doc = a / "run.json"
            doc.write_text(doc.read_text() + " ")  # the run went on: run.json written again
            return [Path(r._path) for r in [*got, same, await reports.response(a)]]  # type: ignore[attr-defined]
        finally:
            await reports.close()

    got: list[list[Path]] = []
    t = threading.Thread(target=lambda: got.append(asyncio.run(both())))  # Playwright's loop holds this thread
    t.start()
    t.join(300)
    pa, pb, pa2, again, after = got[0]
    assert pa == pa2 == again and pa != pb, "one build per run, each its own folder"
    assert after != pa, "a run.json written since is a report built again"


@pytest.mark.parametrize("command", ["bench", "run", "capacity"])
def test_live_before_a_url_or_file_is_the_default_port(command, monkeypatch):
    """`--live` followed by a word that is not a number leaves the word to the command."""
    from click.testing import CliRunner

    from loadcmp.cli import cli
    from loadcmp.cli.app import optional_values
    from loadcmp.live import DEFAULT_PORT

    cmd = cli.commands[command]
    assert optional_values(cmd, ["--live", "http://x/", "-t", "1"]) == [f"--live={DEFAULT_PORT}", "http://x/", "-t",
                                                                         "1"]
    assert optional_values(cmd, ["--live", "8080", "exp.toml"]) == ["--live", "8080", "exp.toml"]
    res = CliRunner().invoke(cli, [command, "--live", "no-such-file.toml", "--live-host", "nowhere.invalid"])
    assert "not a valid integer" not in res.output


def test_the_seconds_are_built_only_for_a_live_page(faulty):
    """Without a page the engine hands no closed seconds to the live line; with one (`tee`), it does."""
    from loadcmp.cli.live import tee
    from loadcmp.live.feed import Feed
    from loadcmp.live.hub import Hub
    from loadcmp.load.driver import LoadSpec
    from loadcmp.load.schedules import Closed
    from loadcmp.load.target import make_target
    from loadcmp.load.run.workers import run_load

    spec = LoadSpec(make_target(faulty.url("/ok")), Closed(2), duration=3.0)
    plain: list[int] = []
    watched: list[int] = []

    def both() -> None:  # a thread of its own, as a command's main thread has no loop running
        run_load(spec, live=lambda lv: plain.append(len(lv.closed)))
        run_load(spec, live=tee(lambda lv: watched.append(len(lv.closed)), Feed(Hub(), "bench", "t")))

    t = threading.Thread(target=both)
    t.start()
    t.join(60)
    assert sum(plain) == 0 and sum(watched) >= 2


def test_the_page_draws_every_kind_and_role_the_server_names(browser):
    """The failure kinds come from the command (`tls_error` among them) and a role's name may hold `-` or `.`."""
    from loadcmp.live.feed import hello, trial_started
    from loadcmp.live.hub import Hub
    from loadcmp.live.server import LiveServer

    key = {"server": "s", "level": 1, "trial": 1}
    hub = Hub()
    hub.publish(hello("run", "kinds"))
    hub.publish(trial_started("s", 1, 1))
    for s in range(1, 4):
        hub.publish({"type": "client", "row": {**key, "second": s, "ok": 5, "failed": 2, "tls_error": 2}})
        hub.publish({"type": "server", "row": {**key, "second": s, "cpu_pct": 50.0, "my-db.1_cpu_pct": 20.0}})
    with LiveServer(hub, free_port()) as server:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(server.url)
        page.wait_for_function("() => window.loadcmp.charts['client-rps'] && "
                               "window.loadcmp.charts['srv-my-db.1-cpu']", timeout=10_000)
        labels = page.evaluate("() => window.loadcmp.charts['client-rps'].series.map(s => s.label)")
        page.close()
    assert "tls_error" in labels


def test_the_page_draws_the_warm_up_greyed_and_tcp_states_on_a_scale_that_shows_each(browser, artifacts):
    """Warm-up seconds (before 0) drawn on a grey band and kept when the trial's stored rows come; 50 established
    connections beside 11,000 in TIME_WAIT read as far from 0 (asinh scale)."""
    from loadcmp.live.feed import hello, stored, trial_started
    from loadcmp.live.hub import Hub
    from loadcmp.live.server import LiveServer

    key = {"server": "nginx", "level": 50, "trial": 1}
    hub = Hub()
    hub.publish(hello("run", "warm-up"))
    hub.publish(trial_started("nginx", 50, 1))
    tcp = {"tcp_estab": 50, "tcp_time_wait": 11_000, "tcp_total": 11_050}
    for s in (-2, -1):
        hub.publish({"type": "client", "row": {**key, "second": s, "warmup": True, "started": 900 + s,
                                               "client_cpu_pct": 40.0, "loop_lag_ms": 1.0}})
        hub.publish({"type": "server", "row": {**key, "second": s, "cpu_pct": 30.0, **tcp}})
    window = [{**key, "second": s, "started": 1000, "ok": 1000, "failed": 0, "p50_ms": 2.0, "inflight": 50,
               "client_cpu_pct": 50.0, "loop_lag_ms": 1.0} for s in range(4)]
    server = [{**key, "second": s, "cpu_pct": 80.0, **tcp} for s in range(4)]
    record = {**key, "stack": "nginx", "keepalive": True, "status": "ok", "reason": None, "causes": [],
              "result": {"rps": 1000.0, "ok": 4000, "failed": 0, "failures": {}}}
    hub.publish(stored(record, window, server))  # type: ignore[arg-type]
    with LiveServer(hub, free_port()) as srv:
        page = browser.new_page(viewport={"width": 1280, "height": 1400})  # type: ignore[attr-defined]
        page.goto(srv.url)
        page.wait_for_function("() => window.loadcmp.charts['srv-server-tcp'] && "
                               "window.loadcmp.state.trials.get('nginx|50|1').stored", timeout=10_000)
        page.wait_for_timeout(500)
        rps = drawn(page, "client-rps")
        labels = page.evaluate("() => window.loadcmp.charts['client-rps'].series.map(s => s.label)")
        tcp_scale = page.evaluate("""() => { const u = window.loadcmp.charts['srv-server-tcp'];
            const h = u.bbox.height / devicePixelRatio;
            return {distr: u.scales.y.distr, min: u.scales.y.min, at: (h - u.valToPos(50, 'y')) / h,
                    top: (h - u.valToPos(11000, 'y')) / h}; }""")
        shade = page.evaluate("""() => { const u = window.loadcmp.charts['client-latency'];
            const px = (v) => Array.from(u.ctx.getImageData(u.valToPos(v, 'x', true),
                                                            u.bbox.top + u.bbox.height - 3, 1, 1).data);
            return [px(-1.5), px(2.5)]; }""")
        page.screenshot(path=str(artifacts / "live-warmup.png"), full_page=True)
        page.close()
    assert rps[0] == [-2, -1, 0, 1, 2, 3], "the warm-up's seconds stay once the stored rows replace the window's"
    assert rps[1] == [None, None, 1000, 1000, 1000, 1000], "no response is counted before the window"
    started = rps[labels.index("started (warm-up)")]
    assert started == [898, 899, None, None, None, None]
    assert tcp_scale["distr"] == 4 and tcp_scale["min"] == 0, tcp_scale
    assert 0.3 < tcp_scale["at"] < tcp_scale["top"] - 0.3, f"50 reads far from 0 and from 11,000: {tcp_scale}"
    warm, measured = shade
    assert warm[3] > 0 and measured[3] == 0, f"the warm-up is on a grey band, the window is not: {shade}"


class _Logless:
    """A deployment whose logs say nothing (the events' evidence is not this test's)."""

    host = type("Host", (), {"name": "local"})()

    def log_lines(self, since, until):
        return iter(())


def test_events_are_marked_on_every_figure_as_they_fire_and_the_stored_ones_replace_them(browser, artifacts):
    """`Firer` tells each event as it is fired and as it ends; the page draws a mark on each figure (a line, a band
    until its end), says a failed one as an alert, and takes the stored events (their evidence) over the live ones."""
    from loadcmp.events import fire
    from loadcmp.lab.stacks import catalog
    from loadcmp.live.feed import Feed, stored
    from loadcmp.live.hub import Hub
    from loadcmp.live.server import LiveServer

    told: list[tuple[str, bool, float | None]] = []

    def act(dep, a, cut):
        time.sleep(0.1)
        return (a.name != "restart", None if a.name != "restart" else "docker said no", "")

    planned = fire.plan(("0.05s reload", "0.2s restart"), catalog().get("nginx"), 1.0)
    hub = Hub()
    feed = Feed(hub, "run", "events")
    feed.begin("nginx", 50, 1)
    f = fire.Firer(_Logless(), planned, time.monotonic(), time.time(), run=act,  # type: ignore[arg-type]
                   told=lambda d, running: (told.append((d["action"], running, d["end_s"])), feed.event(d, running)))
    f.start()
    time.sleep(0.6)
    docs = f.finish()
    assert [(a, r) for a, r, _ in told] == [("reload", True), ("reload", False), ("restart", True),
                                            ("restart", False)]
    assert told[1][2] == docs[0]["end_s"] and told[1][2] > told[0][2], "the end told is the stored one's"
    key = {"server": "nginx", "level": 50, "trial": 1}
    window = [{**key, "second": s, "started": 100, "ok": 100, "failed": 0, "p50_ms": 2.0, "inflight": 5}
              for s in range(3)]
    with LiveServer(hub, free_port()) as srv:
        page = browser.new_page(viewport={"width": 1280, "height": 1400})  # type: ignore[attr-defined]
        page.goto(srv.url)
        for row in window:
            hub.publish({"type": "client", "row": row})
        page.wait_for_function("() => window.loadcmp.charts['client-rps'] && "
                               "window.loadcmp.state.trials.get('nginx|50|1').marks.size === 2", timeout=10_000)
        page.wait_for_timeout(400)
        live = page.evaluate("() => [...window.loadcmp.state.trials.get('nginx|50|1').marks.values()]"
                             ".map(m => [m.action, m.ok, m.end_s !== null])")
        alerts = page.inner_text("#alerts")
        said = page.inner_text("#trial-events")
        # the reload's band: orange over the figure at its start, the figure's white beside it (x = 2)
        px = page.evaluate("""() => { const u = window.loadcmp.charts['client-latency'];
            const at = (v) => Array.from(u.ctx.getImageData(u.valToPos(v, 'x', true), u.bbox.top + 5, 1, 1).data);
            return [at(0.1), at(2)]; }""")
        record = {**key, "stack": "nginx", "keepalive": True, "status": "ok", "reason": None, "causes": [],
                  "result": {"rps": 100.0, "ok": 300, "failed": 0, "failures": {}},
                  "events": [{**docs[0], "evidence": ["signal process started"]}]}
        hub.publish(stored(record, window, []))  # type: ignore[arg-type]
        page.wait_for_function("() => window.loadcmp.state.trials.get('nginx|50|1').marks.size === 1",
                               timeout=10_000)
        kept = page.evaluate("() => [...window.loadcmp.state.trials.get('nginx|50|1').marks.values()][0].evidence")
        page.wait_for_timeout(400)
        page.screenshot(path=str(artifacts / "live-events.png"), full_page=True)
        page.close()
    assert sorted(live) == [["reload", True, True], ["restart", False, True]]
    assert "event '0.2s restart'" in alerts and "docker said no" in alerts
    assert "reload at" in said and "failed: docker said no" in said
    assert px[0][:3] != px[1][:3] and px[0][0] > px[0][2], f"an orange band at the reload, not beside it: {px}"
    assert kept == ["signal process started"]
