"""Every request sent is accounted (issue 10, part 1): what a server that counts
what it received saw equals warm-up + ok + failed + unfinished (less the rate
schedule's `dropped`, which were never sent), for every schedule, with and
without keep-alive and warm-up, in one process and in several.

The server (tests/helpers/fastserver.py) counts a request when it reads it;
`/slow` answers 20 ms later, so requests are in flight when the window closes
and the close itself is tested, not only the steady state.
"""

from __future__ import annotations

import time
import urllib.request

import pytest

from loadcmp.load.driver import LoadSpec
from loadcmp.load.schedules import Closed, Ramp, Rate
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)


def seen(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=10) as r:
        return int(r.read())


def settled(port: int, before: int) -> int:
    """What the server saw since `before`, once it has read everything sent (a request
    written just before the close may still be on its way through the kernel)."""
    last, t = -1, time.monotonic()
    while time.monotonic() - t < 5:
        now = seen(port) - before
        if now == last:
            return now
        last = now
        time.sleep(0.2)
    return last


CASES = {
    "closed, new connection each": (Closed(20), False, "/"),
    "closed, new connection each, slow": (Closed(20), False, "/slow"),
    "closed, keep-alive, slow": (Closed(20), True, "/slow"),
    "ramp, keep-alive": (Ramp(30, 0.4, 0.05), True, "/slow"),
    "ramp, new connection each": (Ramp(30, 0.4, 0.05), False, "/slow"),
    "rate, keep-alive": (Rate(600.0, 40), True, "/slow"),
    "rate over its in-flight cap": (Rate(600.0, 5), False, "/slow"),
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("warmup", [0.0, 0.5])
@pytest.mark.parametrize("case", list(CASES))
def test_the_server_saw_exactly_what_was_accounted(fast_server, case, warmup, workers):
    sched, keepalive, path = CASES[case]
    spec = LoadSpec(make_target(f"http://127.0.0.1:{fast_server}{path}", keepalive=keepalive), sched, 1.0,
                    warmup=warmup)
    before = seen(fast_server)
    doc = result_doc(run_load(spec, workers=workers))
    server = settled(fast_server, before)
    assert check_invariant(doc), doc
    assert doc["ok"] > 0, doc
    if warmup:
        assert doc["warmup_requests"] > 0, doc
    else:
        assert doc["warmup_requests"] == 0, doc
    sent = doc["warmup_requests"] + doc["ok"] + doc["failed"] - doc["dropped"] + doc["unfinished"]
    assert server == sent, f"server saw {server}, loadcmp accounted for {sent}: {doc}"
    if case == "rate over its in-flight cap":
        assert doc["dropped"] > 0, doc  # the test covers dropped requests, which were never sent
    if path == "/slow" and case.startswith("closed"):
        assert doc["unfinished"] > 0, doc  # requests were in flight at the close
