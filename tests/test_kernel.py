"""The kernel's listen-queue counters (loadcmp/observe/kernel.py): the parser on a copy of this machine's
/proc/net/netstat, the counters rising under a real full listen queue driven by loadcmp's own engine, and the
cause they make (configs/every-stack.toml) as a record and a sentence; with Docker, apache-prefork's own
queue cut to 8 (`--set apache.ListenBacklog=8`) overflowing and said so."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab.stacks import effective_settings, get_stack
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.summary import slow_connects
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed
from loadcmp.load.target import make_target
from loadcmp.observe import evidence as ev
from loadcmp.observe import kernel
from loadcmp.observe.metrics import summarize
from loadcmp.report.causes import note
from loadcmp.store.reader import load_results

NETSTAT = Path(__file__).parent / "fixtures" / "kernel" / "netstat"
"""/proc/net/netstat as this machine had it: TcpExt, IpExt and MPTcpExt, each a line of names then of values."""


def test_the_parser_reads_each_header_and_values_pair() -> None:
    parsed = kernel.parse_netstat(NETSTAT.read_text())
    assert {k.split(".")[0] for k in parsed} >= {"TcpExt", "IpExt"}
    assert parsed["TcpExt.ListenOverflows"] == 12436 and parsed["IpExt.InOctets"] > 0
    assert kernel.counters(NETSTAT.read_text()) == {"listen_overflows": 12436, "listen_drops": 12436,
                                                    "syn_retrans": 7665}
    # a pair whose lines do not match is skipped, not misread
    assert kernel.parse_netstat("TcpExt: A B\nIpExt: 1 2\nTcpExt: C\nTcpExt: x\n") == {}
    assert kernel.counters("") == {}


def test_the_counters_of_a_process_here_are_read_and_scoped_by_its_network_mode() -> None:
    """A process of this network namespace (as a container with host networking): its counters are read from
    its own /proc entry, without a fallback's note, and said to be the host's; another network mode's are its own."""
    own = kernel.counters((Path("/proc") / str(os.getpid()) / "net" / "netstat").read_text())
    assert set(own) == set(kernel.COUNTERS.values())
    assert kernel.somaxconn() == int(Path("/proc/sys/net/core/somaxconn").read_text())
    notes: list[str] = []
    for mode, scope in (("host", "host"), ("bridge", "server")):
        front = SimpleNamespace(attrs={"State": {"Pid": os.getpid()}, "HostConfig": {"NetworkMode": mode}})
        dep = SimpleNamespace(host=SimpleNamespace(remote=False), front=front,
                              stack=SimpleNamespace(backlog="apache.ListenBacklog"),
                              settings={"apache.ListenBacklog": 511})
        c = kernel.open_counters(dep, notes.append)  # type: ignore[arg-type]
        assert c.path == Path("/proc") / str(os.getpid()) / "net" / "netstat" and c.facts["scope"] == scope
    assert notes == []
    host = SimpleNamespace(attrs={"State": {"Pid": os.getpid()}, "HostConfig": {"NetworkMode": "host"}})
    over = SimpleNamespace(host=SimpleNamespace(remote=False), front=host, stack=SimpleNamespace(backlog="b.x"),
                           settings={"b.x": kernel.somaxconn() + 1})
    kernel.open_counters(over, notes.append)  # type: ignore[arg-type]
    assert notes == [f"b.x {kernel.somaxconn() + 1:,} is more than the kernel's net.core.somaxconn "
                     f"{kernel.somaxconn():,}: the kernel cuts it to {kernel.somaxconn():,}"]
    notes.clear()
    remote = SimpleNamespace(host=SimpleNamespace(remote=True), front=None)
    assert kernel.open_counters(remote, notes.append).path is None and len(notes) == 1  # type: ignore[arg-type]


def _slow_server(stop: threading.Event, every_s: float, answer_s: float) -> tuple[socket.socket, threading.Thread]:
    """A server on 127.0.0.1 with a listen backlog of 1 that accepts one connection every `every_s` and answers
    each `answer_s` after it took it (a minimal HTTP/1.1 200, then the close): its accept queue is full whenever
    more clients come, and a client served does not come back before others had their turn at a free place."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    sock.settimeout(0.2)

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            try:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                    data += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            except OSError:
                pass

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            timer = threading.Timer(answer_s, answer, (conn,))
            timer.daemon = True
            timer.start()
            stop.wait(every_s)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return sock, thread


def test_a_full_listen_queue_is_counted_and_its_connects_wait_for_the_syn_retry() -> None:
    """30 clients on new connections against a backlog of 1 and a slow accept: the kernel counts overflows and
    drops, and each connect that took a second or more had its SYN dropped and sent again (both counters are this
    namespace's: other traffic only adds to them). Not every overflow is a slow connect: one met by the
    handshake's last ACK leaves the client connected at once, and its request waits for the server's SYN-ACK
    sent again instead."""
    stop = threading.Event()
    sock, thread = _slow_server(stop, every_s=0.2, answer_s=1.0)
    counters = kernel.Counters(kernel.HOST_NETSTAT)
    try:
        counters.mark()
        target = make_target(f"http://127.0.0.1:{sock.getsockname()[1]}/", keepalive=False)
        result = run_load(LoadSpec(target, Closed(30), 5.0, timeout=10.0))
        time.sleep(0.1)
        rose = counters.deltas()
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()
    assert rose["listen_overflows"] >= 1 and rose["listen_drops"] >= 1, rose
    slow = sum(n for lo_ms, _, n in result.phases["connect"].buckets_ms() if lo_ms >= 900)
    assert slow >= 1, result.phases["connect"].buckets_ms()
    assert rose["syn_retrans"] >= slow and rose["listen_drops"] >= slow, (rose, slow)
    # the client's share, as the trial stores it: those connects, each request after one timed ≥ 1 s more than
    # the server's own second (a request whose last ACK was dropped waits as long without a slow connect)
    doc = slow_connects(result.phases["connect"], result.latency().count)
    assert doc["over_1s"] == slow and doc["share_1s"] == pytest.approx(slow / result.latency().count, abs=1e-6)
    assert result.latency().at_least(1.9) >= slow
    assert result.counts()["ok"] >= 1


def _rows(overflows: list[int]) -> list[dict[str, object]]:
    return [{"server": "apache-prefork", "second": k, "listen_overflows": n, "listen_drops": n, "syn_retrans": n}
            for k, n in enumerate(overflows)]


def test_the_windows_overflows_make_the_cause_and_its_sentence() -> None:
    rows = _rows([0, 1200, 1114])
    server = summarize(rows, facts={"scope": "host", "somaxconn": 4096})  # type: ignore[arg-type]
    assert server["kernel"] == {"scope": "host", "somaxconn": 4096, "listen_overflows": 2314, "listen_drops": 2314,
                                "syn_retrans": 2314}
    assert "kernel" not in summarize(_rows([0]), facts=None)  # type: ignore[arg-type]  # (not read: none)

    stack = get_stack("apache-prefork")
    settings = effective_settings(stack, {})
    # the host's counters count any listener's queue: without this client's own slow connects (or a failure the
    # cause makes) they are not this server's
    peaks = ev.status_peaks(rows, stack.causes)
    assert ev.trial_causes(stack, settings, ev.Seen(None, {}, peaks, scope="host")) == []
    assert len(ev.trial_causes(stack, settings, ev.Seen(None, {"connect_timeout": 3}, peaks, scope="host"))) == 1
    seen = ev.Seen(None, {}, peaks, scope=server["kernel"]["scope"], somaxconn=4096, slow=235)
    (rec,) = ev.trial_causes(stack, settings, seen)
    assert rec["cause"] == "kernel.listen_overflow" and rec["rose"] == 2314
    assert rec["setting"] == "apache.ListenBacklog" and rec["value"] == 511
    assert rec["also"] == {"prefork.MaxRequestWorkers": 150}
    json.dumps(rec)  # stored as it is
    said = note(rec, {})
    waited = note(rec, {}, {"requests": 5094, "over_1s": 235, "over_3s": 0, "share_1s": 0.046134, "share_3s": 0.0})
    assert "sent again): 4.6 % of requests took ≥ 1 s to connect; no request failed: they waited" in waited
    assert said.startswith("its listen queue was full and the kernel turned new connections away until TCP retried "
                           "them (apache.ListenBacklog 511, prefork.MaxRequestWorkers 150) — ")
    assert ("the listen queue overflowed 2,314 times (the kernel's ListenOverflows; the host's counters: other "
            "traffic on this machine counts too): those connections waited for TCP's retry after 1 s (the client's "
            "SYN, or the server's SYN-ACK, sent again)") in said
    assert said.endswith("no request failed: they waited")
    assert note(rec, {"connect_timeout": 7}).endswith("the failures were 7 connect_timeout")
    # a backlog over the kernel's somaxconn is said with the cut
    big = effective_settings(stack, {"apache.ListenBacklog": 8192})
    (rec,) = ev.trial_causes(stack, big, seen)
    assert "(apache.ListenBacklog 8192, prefork.MaxRequestWorkers 150, net.core.somaxconn (which cuts it) 4096)" \
        in note(rec, {})
    # no overflow in the window: no cause; an event loop in front names no worker limit (php-fpm's pool sits on
    # a socket behind it and never stops it accepting), and Caddy has no backlog setting: the phrase alone
    assert ev.trial_causes(stack, settings, ev.Seen(None, {}, ev.status_peaks(_rows([0, 0]), stack.causes))) == []
    nginx = get_stack("nginx")
    (rec,) = ev.trial_causes(nginx, effective_settings(nginx, {}),
                             ev.Seen(None, {}, ev.status_peaks(rows, nginx.causes), scope="server"))
    assert rec["setting"] == "nginx.backlog" and "also" not in rec
    caddy = get_stack("caddy")
    (rec,) = ev.trial_causes(caddy, effective_settings(caddy, {}),
                             ev.Seen(None, {}, ev.status_peaks(rows, caddy.causes), scope="server"))
    assert "setting" not in rec and "also" not in rec and "the server's own network namespace" in note(rec, {})


@pytest.mark.docker
def test_apache_prefork_with_a_backlog_of_8_overflows_and_says_so(tmp_path, images, docker_client) -> None:
    """A short run of apache-prefork at 400 clients with `--set apache.ListenBacklog=8`: its rendered config has
    it, server.parquet has the kernel's columns, and the trial's causes name the overflows with the backlog."""
    res = CliRunner().invoke(cli, ["run", "--server", "apache-prefork", "--page", "/info.php", "-c", "400", "-t", "3",
                                   "--warmup", "0.5", "--set", "apache.ListenBacklog=8", "--out", str(tmp_path),
                                   "--json"])
    assert res.exit_code == 0, res.output
    r = load_results(json.loads(res.stdout)["results_dir"])
    assert "ListenBacklog 8\n" in "".join(r.run["servers"]["apache-prefork"]["configs"].values())
    (t,) = r.trials
    k = t["server_metrics"]["kernel"]
    assert k["scope"] == "host" and k["listen_overflows"] > 0 and k["somaxconn"] == kernel.somaxconn(), k
    assert int(r.server["listen_overflows"].sum()) == k["listen_overflows"]
    (c,) = [c for c in t["causes"] if c["cause"] == "kernel.listen_overflow"]
    assert c["setting"] == "apache.ListenBacklog" and c["value"] == 8 and c["rose"] == k["listen_overflows"]
