"""A replay against an in-process server (conftest's `faulty`): the log's own timing at 1x and 2x, drops counted
with the sequence kept in step, the answers as in the log or not, workers, and `max` on both closed loops."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadcmp.load.driver import LoadSpec
from loadcmp.load.schedules import Closed, Replay
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load
from loadcmp.traffic.logs import read_log
from loadcmp.traffic.logreplay import plan_replay, replay_doc, replay_schedule


def _log(tmp_path: Path, seconds: list[list[tuple[str, int]]]) -> Path:
    """A combined log: each second's (path, status) in order, from 01:24:00."""
    lines = [f'127.0.0.1 - - [26/Nov/2026:01:24:{s:02d} +0000] "GET {path} HTTP/1.1" {status} 5 "-" "-"'
             for s, reqs in enumerate(seconds) for path, status in reqs]
    p = tmp_path / "access.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def _replay(faulty, file: Path, speed: float | None, duration: float, clients: int = 50, workers: int = 1,
            engine: str = "fast"):
    plan = plan_replay(read_log(file), speed)
    target = make_target(faulty.url("/ok"), keepalive=True)
    schedule = replay_schedule(plan, clients, requests=plan.sent if speed is None else None)
    spec = LoadSpec(target, schedule, duration, timeout=5.0, pages=plan.pages(target), engine=engine)
    result = run_load(spec, workers=workers)
    doc = result_doc(result)
    assert check_invariant(doc), doc
    return plan, result, doc


def test_at_1x_each_second_sends_the_logs_requests_of_that_second(faulty, tmp_path):
    counts = [30, 60, 10]
    log = _log(tmp_path, [[("/ok", 200)] * n for n in counts])
    plan, result, doc = _replay(faulty, log, 1.0, 3.0)
    assert isinstance(replay_schedule(plan, 50), Replay)
    assert [s.started for s in result.seconds] == counts  # every request in the second the log has it
    assert doc["started"] == 100 and doc["dropped"] == 0
    rd = replay_doc(plan, doc, 0.0, [s.dropped for s in result.seconds])
    assert rd["log_rate"] == pytest.approx(100 / doc["duration_s"], rel=1e-3)
    assert rd["rate_ratio"] == pytest.approx(1.0, abs=0.01)


def test_at_2x_the_log_takes_half_its_time(faulty, tmp_path):
    log = _log(tmp_path, [[("/ok", 200)] * 20] * 4)
    plan, result, doc = _replay(faulty, log, 2.0, 2.0)
    assert plan.span == 2.0
    assert [s.started for s in result.seconds] == [40, 40]


def test_answers_as_in_the_log_and_differing_from_it(faulty, tmp_path):
    second = [("/ok", 200), ("/404", 404), ("/ok", 200), ("/ok", 404), ("/500", 200)]
    log = _log(tmp_path, [second * 4, second * 4])
    plan, result, doc = _replay(faulty, log, 1.0, 2.0)
    rd = replay_doc(plan, doc, 0.0, [])
    assert (rd["as_in_log"], rd["differs"]) == (24, 16)  # each second: /ok 200 x2 and /404 as logged; /ok's 404
    assert rd["differing"] == [["/500", 8, 8], ["/ok", 8, 24]]  # and /500's 200 differ
    pages = {p["page"]: p for p in doc["pages"]}
    assert pages["/404"]["expected"] == pages["/404"]["as_expected"] == 8


def test_a_client_behind_drops_and_says_how_many_and_later_requests_keep_their_place(faulty, tmp_path):
    slow = [("/slow?ms=1500", 200)] * 40
    log = _log(tmp_path, [slow, [], [("/404", 404)] * 10])  # a second without requests: the slow ones end in it
    plan, result, doc = _replay(faulty, log, 1.0, 3.0, clients=10)
    assert doc["dropped"] == 30 and result.seconds[0].dropped == 30  # 10 in flight, the rest of that second dropped
    rd = replay_doc(plan, doc, 0.0, [s.dropped for s in result.seconds])
    assert rd["dropped_peak"] == 30 and rd["sent_rate"] < rd["log_rate"]
    pages = {p["page"]: p for p in doc["pages"]}
    assert pages["/404"]["as_expected"] == pages["/404"]["expected"] == 10  # the drops did not shift the sequence


def test_two_workers_send_every_request_once(faulty, tmp_path):
    log = _log(tmp_path, [[("/ok", 200), ("/404", 404)] * 25] * 2)
    plan, result, doc = _replay(faulty, log, 1.0, 2.0, workers=2)
    assert doc["started"] == 100
    pages = {p["page"]: p for p in doc["pages"]}
    assert pages["/404"]["completed"] == pages["/404"]["as_expected"] == 50


@pytest.mark.parametrize("engine", ["fast", "aiohttp"])
def test_a_drop_passes_the_request_that_was_due_not_a_later_one(faulty, tmp_path, engine):
    """Five requests due at once, two in flight at most: the first two are sent, the last three dropped. Each
    takes its place in the log when due: a sent one used to take it when its task ran, after the drops."""
    rows = [("/404", 404)] * 2 + [("/ok", 200)] * 3
    log = tmp_path / "access.log"
    log.write_text("".join(json.dumps({"msec": "100.250", "request": f"GET {path} HTTP/1.1", "status": status}) + "\n"
                           for path, status in rows))
    plan, result, doc = _replay(faulty, log, 1.0, 1.0, clients=2, engine=engine)
    assert doc["dropped"] == 3 and doc["completed"] == 2
    pages = {p["page"]: p for p in doc["pages"]}
    assert pages["/404"]["completed"] == pages["/404"]["as_expected"] == 2  # the two due first, as logged
    assert pages.get("/ok", {}).get("completed", 0) == 0


def test_at_max_workers_deal_the_sequence_as_they_share_the_requests(faulty, tmp_path):
    """11 requests, 10 clients, 3 workers: 5 + 3 + 3 requests, so 5 + 3 + 3 consecutive positions each."""
    log = _log(tmp_path, [[(f"/ok?i={i}", 200) for i in range(11)]])
    plan, result, doc = _replay(faulty, log, None, 10.0, clients=10, workers=3)
    assert doc["started"] == 11
    assert sorted(p["page"] for p in doc["pages"] if p["completed"] == 1) == sorted(f"/ok?i={i}" for i in range(11))


def test_at_max_the_closed_loop_sends_the_sequence_once(faulty, tmp_path, loop_path):
    log = _log(tmp_path, [[("/ok", 200)] * 150 + [("/404", 404)] * 50])
    plan = plan_replay(read_log(log), None)
    assert replay_schedule(plan, 8, requests=200) == Closed(8, requests=200)
    assert replay_schedule(plan, 8) == Closed(8)  # -t given: the sequence again and again until the time is up
    target = make_target(faulty.url("/ok"), keepalive=True)
    spec = LoadSpec(target, replay_schedule(plan, 8, requests=200), 10.0, pages=plan.pages(target))
    doc = result_doc(run_load(spec))
    assert doc["started"] == 200 and doc["stopped_by"] == "requests"
    rd = replay_doc(plan, doc, 0.0, [])
    assert "log_rate" not in rd and (rd["as_in_log"], rd["differs"]) == (200, 0)


@contextlib.contextmanager
def head_aware_server() -> Iterator[int]:
    """Answers GET with a 5-byte body and HEAD with the same head and no body, as a real server does."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n" + (b"" if head.startswith(b"HEAD ") else
                                                                                b"hello"))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
        port.append(server.sockets[0].getsockname()[1])
        ready.set()
        loop.run_forever()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    ready.wait(5)
    try:
        yield port[0]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        th.join(5)


@pytest.mark.parametrize("speed", [1.0, None])
def test_head_and_get_on_one_kept_connection_each_end_where_their_answer_does(tmp_path, loop_path, speed):
    reqs = [("GET", "/a"), ("HEAD", "/a"), ("HEAD", "/b"), ("GET", "/b")] * 20
    lines = [f'127.0.0.1 - - [26/Nov/2026:01:24:00 +0000] "{m} {p} HTTP/1.1" 200 5 "-" "-"' for m, p in reqs]
    (tmp_path / "access.log").write_text("\n".join(lines) + "\n")
    plan = plan_replay(read_log(tmp_path / "access.log"), speed)
    with head_aware_server() as port:
        target = make_target(f"http://127.0.0.1:{port}/", keepalive=True)
        schedule = replay_schedule(plan, 4, requests=None if speed else 80)
        spec = LoadSpec(target, schedule, 1.0 if speed else 10.0, timeout=2.0, pages=plan.pages(target))
        doc = result_doc(run_load(spec))
    assert doc["ok"] == 80 and doc["failed"] == 0, doc  # a HEAD read as a GET would wait for a body: a timeout
    assert doc["bytes"] > 0 and check_invariant(doc)
