"""The load engine against real in-process servers that misbehave on purpose."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.recorder import Result
from loadcmp.load.schedules import Closed, Ramp, Rate
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import Stopper, run_load

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)

ENGINES = ["fast", "aiohttp"]


def load(url: str, sched=Closed(4), duration=0.6, engine="fast", keepalive=False, timeout=10.0, warmup=0.0,
         workers=1) -> Result:
    spec = LoadSpec(make_target(url, keepalive=keepalive), sched, duration, warmup=warmup, timeout=timeout,
                    engine=engine)
    return run_load(spec, workers=workers)


def only(result: Result, kind: str) -> None:
    doc = result_doc(result)
    counts = result.counts()
    assert counts[kind] > 0, result_doc(result)
    others = {k: v for k, v in counts.items() if k != kind and v}
    assert not others, f"expected only {kind}: {counts}"
    assert check_invariant(doc), doc


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("keepalive", [False, True])
def test_ok_counts_and_invariant(faulty, engine, keepalive):
    r = load(faulty.url("/ok"), engine=engine, keepalive=keepalive)
    only(r, "ok")
    doc = result_doc(r)
    assert doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"]
    assert doc["rps"] == pytest.approx(doc["ok"] / doc["duration_s"], abs=1e-3)  # rps is stored to 3 decimals


def test_the_request_carries_only_the_headers_http_needs():
    def sent(**kw: bool) -> bytes:
        return make_target("http://127.0.0.1:8080/p", resolve=False, **kw).encode()

    assert sent(keepalive=True) == b"GET /p HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"  # what wrk sends
    assert b"\r\nConnection: keep-alive\r\n" in sent(keepalive=True, http10=True)
    assert b"\r\nConnection: close\r\n" in sent() and b"\r\nConnection: close\r\n" in sent(http10=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_chunked_and_read_to_close(faulty, engine):
    only(load(faulty.url("/chunked"), engine=engine), "ok")
    only(load(faulty.url("/close"), engine=engine), "ok")


@pytest.mark.parametrize("engine", ENGINES)
def test_http_errors_by_class(faulty, engine):
    only(load(faulty.url("/500"), engine=engine), "http_5xx")
    only(load(faulty.url("/404"), engine=engine, keepalive=True), "http_4xx")


@pytest.mark.parametrize("engine", ENGINES)
def test_refused(refused_port, engine):
    only(load(f"http://127.0.0.1:{refused_port}/", engine=engine, duration=1.0), "connect_refused")


@pytest.mark.parametrize("engine", ENGINES)
def test_reset_mid_response(faulty, engine):
    r = load(faulty.url("/reset"), engine=engine)
    counts = r.counts()
    # aiohttp reports a body cut short as a payload error; the fast engine sees the RST
    expected = "reset" if engine == "fast" else None
    if expected:
        only(r, expected)
    else:
        assert counts["ok"] == 0 and (counts["reset"] + counts["protocol_error"]) > 0, counts
        assert check_invariant(result_doc(r))


@pytest.mark.parametrize("engine", ENGINES)
def test_malformed_is_protocol_error(faulty, engine):
    only(load(faulty.url("/malformed"), engine=engine), "protocol_error")


@pytest.mark.parametrize("engine", ENGINES)
def test_stall_times_out_and_run_ends_on_time(faulty, engine):
    t = time.monotonic()
    r = load(faulty.url("/stall"), sched=Closed(3), duration=2.0, timeout=0.5, engine=engine)
    elapsed = time.monotonic() - t
    doc = result_doc(r)
    assert doc["failures"]["timeout"] >= 3, doc
    assert doc["ok"] == 0
    assert check_invariant(doc)
    assert elapsed < 2.0 + 3.0, "the run must finish close to its duration"


def test_unfinished_counts_in_flight_at_the_end(faulty):
    r = load(faulty.url("/slow?ms=5000"), sched=Closed(5), duration=1.0)
    doc = result_doc(r)
    assert doc["unfinished"] == 5 and doc["ok"] == 0 and doc["started"] == 5, doc
    assert check_invariant(doc)


def test_warmup_is_not_counted(faulty):
    before = faulty.requests
    r = load(faulty.url("/ok"), sched=Closed(2), duration=1.0, warmup=1.0, keepalive=True)
    sent = faulty.requests - before
    doc = result_doc(r)
    assert check_invariant(doc)
    assert sent > doc["started"] * 1.4, (sent, doc["started"])


def test_ramp_starts_users_on_plan(faulty):
    # 10 users over 2.2 s, one request each per 10 s: the i-th starts at i * 0.22 s
    # (no start on a whole second, so float rounding cannot move one across).
    sched = Ramp(10, 2.2, 10.0)
    r = load(faulty.url("/ok"), sched=sched, duration=3.0, keepalive=True)
    per_second = [s.started for s in r.seconds]
    assert sum(per_second) == 10
    assert per_second[:2] == [5, 5], per_second
    assert sched.start_offset(3) == pytest.approx(0.66)
    assert sched.next_due(1.0, 1.5) == 11.0 and sched.next_due(1.0, 12.0) == 12.0


def test_rate_schedule_holds_its_rate(faulty):
    r = load(faulty.url("/ok"), sched=Rate(200, 50), duration=2.0, keepalive=True)
    doc = result_doc(r)
    assert 360 <= doc["started"] <= 440, doc["started"]
    assert doc["dropped"] == 0
    assert check_invariant(doc)


def test_rate_counts_drops_not_queue(faulty):
    r = load(faulty.url("/slow?ms=1000"), sched=Rate(100, 5), duration=1.5)
    doc = result_doc(r)
    assert doc["dropped"] > 100, doc
    assert check_invariant(doc)


@contextlib.contextmanager
def answer_one_at_a_time(backlog: int, pause: float = 0.0, reset: bool = False) -> Iterator[int]:
    """A blocking server on 127.0.0.1 that answers one connection at a time with a
    short 200 and closes it (after `pause`; with an RST instead of a FIN if `reset`)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(backlog)
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            c.recv(4096)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            if reset:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()
            time.sleep(pause)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        th.join(2)
        srv.close()


def test_rate_corrects_coordinated_omission():
    """A server that stalls (here: accepts one connection per 0.3 s with a full
    backlog) delays the sends; latency from the intended start shows it, the
    service time from the actual send does not."""
    with answer_one_at_a_time(backlog=1, pause=0.3) as port:
        spec = LoadSpec(make_target(f"http://127.0.0.1:{port}/"), Rate(20, 100), 3.0, timeout=5.0)
        r = run_load(spec)
    doc = result_doc(r)
    assert doc["ok"] >= 3, doc
    corrected, service = doc["latency_ms"]["p90"], doc["service_ms"]["p90"]
    # sends wait in SYN retries (>= 1 s) while the backlog is full: only the corrected latency shows that
    assert service < 1000, doc["service_ms"]
    assert corrected > 1000 and corrected > 1.5 * service, (corrected, service)
    assert check_invariant(doc)


def test_merge_of_two_workers_equals_one_workers_arithmetic(faulty):
    r = load(faulty.url("/ok"), sched=Closed(4), duration=1.5, keepalive=True, workers=2)
    doc = result_doc(r)
    assert check_invariant(doc)
    assert doc["ok"] > 0 and doc["failed"] == 0
    # the merged timeline adds up to the totals, second by second
    assert sum(s.counts[0] for s in r.seconds) == doc["ok"]
    assert sum(s.started for s in r.seconds) == doc["started"]
    h = r.latency()
    assert h.count == doc["ok"]


def test_stopper_interrupts_quickly(faulty):
    stopper = Stopper()
    import threading

    threading.Timer(0.8, stopper.stop).start()
    t = time.monotonic()
    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(2), 30.0)
    r = run_load(spec, stopper=stopper)
    assert time.monotonic() - t < 3.0
    assert r.interrupted
    doc = result_doc(r)
    assert doc["duration_s"] < 2.0 and check_invariant(doc)


def test_bench_json_keys(faulty, tmp_path):
    res = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "-c", "3", "-t", "1", "--json", "-k",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    for key, typ in (("ok", int), ("failed", int), ("failures", dict), ("unfinished", int), ("rps", float),
                     ("duration_s", float), ("bytes", int), ("latency_ms", dict), ("timeline", list),
                     ("schedule", dict), ("engine", str), ("workers", int), ("warnings", list)):
        assert isinstance(doc[key], typ), key
    for k in ("p50", "p90", "p99", "max"):
        assert isinstance(doc["latency_ms"][k], float)
    assert doc["timeline"] and {"second", "ok", "p99_ms", "inflight"} <= set(doc["timeline"][0])
    assert set(doc["webbench"]) == {"susceed", "failed", "pages_per_min", "bytes_per_s"}
    stored = list(tmp_path.iterdir())
    assert len(stored) == 1 and (stored[0] / "run.json").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["ftp://example.org/"], "http"),
        (["http://no-such-host.invalid/"], "resolve"),
        (["http://127.0.0.1:1/", "-c", "0"], "clients"),
        (["http://127.0.0.1:1/", "-t", "-3"], "-t"),
        (["http://127.0.0.1:1/", "--rate", "10"], "--rate"),
        (["http://127.0.0.1:1/", "-H", "no colon"], "header"),
        (["http://127.0.0.1:1/", "--schedule", "rate"], "--rate"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle):
    res = CliRunner().invoke(cli, ["bench", *args])
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_bench_ctrl_c_prints_stores_and_exits_130(faulty, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "loadcmp", "bench", faulty.url("/ok"), "-c", "4", "-t", "30", "-k",
                          "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    time.sleep(3)
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err.decode()[-400:]
    assert time.monotonic() - t < 5
    assert b"interrupted" in out + err
    (folder,) = list(tmp_path.iterdir())
    from loadcmp.store.reader import load_results

    r = load_results(folder)
    assert r.status == "interrupted" and r.summary.iloc[0].ok > 0 and r.summary.iloc[0].duration_s < 10


def test_too_many_clients_for_the_file_limit_is_refused_clearly(faulty):
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or hard > 1_000_000:
        pytest.skip("no open-file limit to run into here")
    res = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "-c", str(hard + 100), "-t", "1"])
    assert res.exit_code == 1
    assert "open files" in res.output and "--workers" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", str(hard + 100), "-t", "1"])
    assert res.exit_code == 1 and "open files" in res.output and "--workers" in res.output


# --- the pieces of the split -----------------------------------------------------------


def test_outcome_table_maps_errors_and_names_the_clients_own():
    import errno

    from loadcmp.load.record import outcomes as oc

    assert oc.kind_of_error(OSError(errno.ECONNREFUSED, "x")) == (oc.CONNECT_REFUSED, None)
    assert oc.kind_of_error(OSError(errno.ETIMEDOUT, "x")) == (oc.CONNECT_TIMEOUT, None)
    assert oc.kind_of_error(OSError(errno.ECONNRESET, "x")) == (oc.RESET, None)
    assert oc.kind_of_error(OSError(errno.EPIPE, "x")) == (oc.RESET, None)
    assert oc.kind_of_error(TimeoutError()) == (oc.CONNECT_TIMEOUT, None)
    assert oc.kind_of_error(OSError(errno.EMFILE, "x")) == (oc.CONNECT_REFUSED, "EMFILE")
    assert oc.kind_of_error(OSError(errno.EADDRNOTAVAIL, "x")) == (oc.CONNECT_REFUSED, "EADDRNOTAVAIL")
    assert oc.kind_of_error(ValueError("odd")) == (oc.RESET, "ValueError")
    assert [oc.kind_of_status(s) for s in (200, 302, 404, 503)] == [oc.OK, oc.OK, oc.HTTP_4XX, oc.HTTP_5XX]


def test_schedules_say_their_connections():
    assert Closed(7).connections == 7
    assert Ramp(5, 1.0, 2.0).connections == 5
    assert Rate(100.0, 12).connections == 12
    assert sum(p.connections for p in Rate(100.0, 12).split(5)) == 12


def test_open_file_check_has_one_message(monkeypatch):
    import resource

    from loadcmp.errors import LoadError
    from loadcmp.load.run import limits

    monkeypatch.setattr(limits.resource, "getrlimit", lambda _: (1024, 1024))
    limits.check_nofile(900, 1)
    limits.check_nofile(2700, 3)
    with pytest.raises(LoadError, match=r"3000 clients need about 3064 open files .* allows 1024: use --workers 4"):
        limits.check_nofile(3000, 1)
    monkeypatch.setattr(limits.resource, "getrlimit", lambda _: (1024, resource.RLIM_INFINITY))
    limits.check_nofile(10**6, 1)  # no hard limit: nothing to refuse up front


def test_a_full_connection_table_is_said(faulty, tmp_path, monkeypatch):
    """Packets the kernel dropped during a load because its connection-tracking table was
    full are said: a dropped SYN waits a second for its retry, which looks like a slow server."""
    from loadcmp.load.run import limits, workers

    stat = tmp_path / "nf_conntrack"  # /proc/net/stat/nf_conntrack as this machine's kernel writes it
    stat.write_text("entries  clashres found new invalid ignore delete chainlength insert insert_failed drop "
                    "early_drop\n0001c9e5  00000000 00000000 00000000 0000003c 00000000 00000000 00000000 00000000 "
                    "00000000 000000cb 00000000\n0001c9e5  00000000 00000000 00000000 00000028 00000000 00000000 "
                    "00000000 00000000 00000000 0000000c 00000000\n")
    assert limits.conntrack_drops(stat) == 0xCB + 0x0C
    assert limits.conntrack_drops(tmp_path / "absent") is None  # connections not tracked here
    assert limits.conntrack_note(7, 7) is None and limits.conntrack_note(None, 9) is None
    readings = iter([100, 142])
    monkeypatch.setattr(workers, "conntrack_drops", lambda: next(readings))
    result = load(faulty.url("/ok"), Closed(2), duration=0.3)
    assert [w for w in result.warnings if "dropped 42 packets" in w and "nf_conntrack_max" in w]
    assert "dropped 42 packets" in json.dumps(result_doc(result)["warnings"])


def test_stop_before_between_and_after_loads_is_safe(faulty):
    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(2), 30.0)
    stopper = Stopper()
    stopper.stop()  # before: the load starts and ends at once
    t = time.monotonic()
    r = run_load(spec, stopper=stopper)
    assert r.interrupted and time.monotonic() - t < 3.0
    stopper.stop()  # after (no loop bound any more): nothing to wake, no error
    r = run_load(spec, stopper=stopper)  # a requested stop holds for the next load too
    assert r.interrupted


def test_sigint_handler_reaches_the_second_load_in_one_process(faulty):
    """The command's own handler (a plain signal.signal) stops a load, also the
    second one in a process: no loop keeps a handler of its own installed."""
    import os
    import signal
    import threading

    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(2), 0.5)
    first = run_load(spec)
    assert not first.interrupted
    stopper = Stopper()

    def on_sigint(*_):
        stopper.stop()

    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        threading.Timer(0.8, os.kill, (os.getpid(), signal.SIGINT)).start()
        t = time.monotonic()
        r = run_load(LoadSpec(spec.target, Closed(2), 30.0), stopper=stopper)
        assert r.interrupted and time.monotonic() - t < 3.0
        assert signal.getsignal(signal.SIGINT) is on_sigint
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_workers_user_error_comes_back_as_it_was():
    from loadcmp.errors import UsageError

    spec = LoadSpec(make_target("http://127.0.0.1:1/", resolve=False), Closed(2), 1.0, engine="nope")
    with pytest.raises(UsageError, match="unknown engine 'nope'"):
        run_load(spec, workers=2)


def test_a_crash_in_a_worker_is_named_a_bug_with_its_traceback(caplog):
    import logging

    from loadcmp.errors import LoadError

    spec = LoadSpec(make_target("http://no-such-host.invalid/", resolve=False), Closed(2), 1.0)
    with caplog.at_level(logging.DEBUG, logger="loadcmp"), pytest.raises(LoadError) as info:
        run_load(spec, workers=2)
    msg = str(info.value)
    assert "bug" in msg and "gaierror" in msg and "\n" not in msg
    assert "Traceback" in str(info.value.__cause__)
    assert "Traceback" in caplog.text


def test_stopper_reaches_worker_processes(faulty):
    import threading

    stopper = Stopper()
    threading.Timer(2.8, stopper.stop).start()
    t = time.monotonic()
    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(4), 30.0)
    r = run_load(spec, workers=2, stopper=stopper)
    assert time.monotonic() - t < 6.0
    assert r.interrupted and check_invariant(result_doc(r))


def test_a_reset_that_comes_with_the_data_is_a_reset_not_a_timeout(faulty):
    """uvloop drops a socket's reader when its RST arrives with unread data
    (after one last call): the raw client must see the reset in that call."""
    r = load(faulty.url("/reset"), sched=Closed(4), duration=1.5, timeout=0.3)
    counts = r.counts()
    assert counts["reset"] > 100 and counts["timeout"] == 0, counts


def test_a_close_by_reset_after_a_full_answer_does_not_stall_the_client():
    """A server that answers in full and then resets (SO_LINGER 0): the raw
    client must not wait out its drain deadline (1 s) on every request."""
    with answer_one_at_a_time(backlog=128, reset=True) as port:
        r = load(f"http://127.0.0.1:{port}/", sched=Closed(4), duration=1.5)
    counts = r.counts()
    assert counts["ok"] > 200 and counts["timeout"] == 0, counts


def test_a_client_task_that_raises_fails_the_load_instead_of_hiding():
    """A bug in one client must not look like a quiet load with fewer requests."""
    import asyncio

    from loadcmp.errors import LoadError
    from loadcmp.load.driver import Engine

    class Broken(Engine[None]):
        calls = 0

        async def request(self, t_intended, counted, state):
            Broken.calls += 1
            if Broken.calls == 3:
                raise RuntimeError("boom")
            await asyncio.sleep(0.001)
            return None

    spec = LoadSpec(make_target("http://127.0.0.1:1/", resolve=False), Closed(2), 5.0)
    t0 = time.monotonic()
    with pytest.raises(LoadError, match="bug in loadcmp: RuntimeError: boom"):
        asyncio.run(Broken(spec).run(time.monotonic()))
    assert time.monotonic() - t0 < 3.0
