"""A user who waits is seen (issue 49): a request held in a server's listen backlog is started at its intended
time and ends as unfinished or timeout, never left out; one held since the warm-up counts in the window it ends
in. Against local servers that accept and never answer (the kernel's backlog holds the connections: the connect
succeeds, no answer ever comes) or answer one request at a time, under every schedule and both closed loops.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed, Ramp, Rate
from loadcmp.load.target import make_target

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)

USERS = 6


@pytest.fixture
def deaf_server() -> Iterator[int]:
    """Listens with room in its backlog and never accepts: every connect succeeds, no request is read."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def one_at_a_time() -> Iterator[tuple[int, float]]:
    """Accepts one connection at a time and answers it `pause` seconds after reading it, then closes it: the
    others wait in the backlog, as users wait for a free prefork worker."""
    pause = 0.04
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    s.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = s.accept()
            except OSError:
                continue
            with c:
                c.recv(65536)
                time.sleep(pause)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield s.getsockname()[1], pause
    stop.set()
    th.join()
    s.close()


SCHEDULES = {
    "closed": Closed(USERS),
    "ramp": Ramp(USERS, 0.0, 0.2),
    "rate": Rate(40.0, USERS),
}


@pytest.mark.parametrize("keepalive", [True, False])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_users_held_since_the_warmup_are_started_and_unfinished(deaf_server, name, keepalive):
    spec = LoadSpec(make_target(f"http://127.0.0.1:{deaf_server}/", keepalive=keepalive), SCHEDULES[name], 1.0,
                    warmup=0.3, timeout=30.0)
    doc = result_doc(run_load(spec))
    assert check_invariant(doc), doc
    assert doc["ok"] == 0, doc
    assert doc["unfinished"] == USERS, doc  # each user's first request, held from the warm-up to the close
    assert doc.get("users_unanswered") == (None if name == "rate" else USERS), doc  # a rate has no users
    assert doc["started"] == USERS + doc["dropped"], doc
    assert doc["warmup_requests"] == 0, doc  # moved into the window, not counted twice
    if name == "rate":
        assert doc["dropped"] > 0, doc  # the rest found the in-flight cap full


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_a_held_request_that_times_out_in_the_window_is_a_timeout_there(deaf_server, name):
    spec = LoadSpec(make_target(f"http://127.0.0.1:{deaf_server}/", keepalive=True), SCHEDULES[name], 1.5,
                    warmup=0.3, timeout=0.6)
    doc = result_doc(run_load(spec))
    assert check_invariant(doc), doc
    assert doc["failures"]["timeout"] >= USERS, doc  # the warm-up's requests time out in the window
    assert doc["warmup_requests"] == 0, doc
    assert doc.get("users_unanswered") == (None if name == "rate" else USERS), doc  # a timeout is no answer


def test_a_load_without_warmup_is_counted_as_before(deaf_server):
    spec = LoadSpec(make_target(f"http://127.0.0.1:{deaf_server}/", keepalive=True), Closed(USERS), 0.8,
                    timeout=30.0)
    doc = result_doc(run_load(spec))
    assert check_invariant(doc), doc
    assert doc["started"] == doc["unfinished"] == USERS, doc
    assert doc["users_unanswered"] == USERS, doc


@pytest.mark.parametrize("name", ["closed", "ramp"])
def test_latency_runs_from_the_intended_start_through_the_wait_for_a_worker(one_at_a_time, name):
    """Six users, one served at a time: each waits for the others in the backlog, so its latency is several
    times the server's own time per request; the service time of a late ramp request is from its send."""
    port, pause = one_at_a_time
    spec = LoadSpec(make_target(f"http://127.0.0.1:{port}/"), SCHEDULES[name], 1.5, warmup=0.3, timeout=30.0)
    doc = result_doc(run_load(spec))
    assert check_invariant(doc), doc
    assert doc["ok"] > 0, doc
    p50 = doc["latency_ms"]["p50"]
    assert p50 is not None and p50 >= 3 * pause * 1000, doc  # about USERS x pause: the queue, not one answer
    assert doc.get("users_unanswered") == 0, doc  # each waited its turn and was answered


@pytest.mark.parametrize("keepalive", [True, False])
def test_users_answered_in_the_warmup_only_are_counted_without_an_answer(one_at_a_time, keepalive):
    """One user at a time is served; with the window shorter than the queue, some users get no answer in it."""
    port, pause = one_at_a_time
    users = 40  # 40 x 40 ms = 1.6 s to serve them all once, against a window of 0.5 s
    spec = LoadSpec(make_target(f"http://127.0.0.1:{port}/", keepalive=keepalive), Closed(users), 0.5, warmup=0.2,
                    timeout=30.0)
    doc = result_doc(run_load(spec))
    assert check_invariant(doc), doc
    assert 0 < doc["ok"] < users, doc
    assert doc["users_unanswered"] == users - doc["ok"], doc  # each answer in the window, a user's only one
