"""--net: the SPEC and its profiles, the toxics it asks of Toxiproxy, the refusals (one line, exit 2, no proxy
left), and, with a real toxiproxy-server (built by `make setup`), a load through it: the round trip it adds,
the rate it allows, the conditions seen stored beside those asked, and the proxy found to be the bottleneck when
it is given too little CPU."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.net import netem, qdisc
from loadcmp.net.conditions import net_problems, parse_net, profile_names, refuse
from loadcmp.net.path import differs, open_path, toxics
from loadcmp.net.seen import Seen
from loadcmp.net.toxiproxy import binary, strays

NEEDS_PROXY = pytest.mark.skipif(binary() is None, reason="toxiproxy-server is not built (make setup builds it)")


def _mine() -> list[int]:
    """toxiproxy-servers this test process started that still run."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(d / "exe")).name == "toxiproxy-server" and \
                    f"LOADCMP_NET_OWNER={os.getpid()}".encode() in (d / "environ").read_bytes():
                out.append(int(d.name))
        except OSError:
            continue
    return out


# --- the SPEC and its profiles ---------------------------------------------------------------------------------

def test_a_spec_reads_its_keys_in_the_units_grammar():
    s = parse_net("rtt=80ms,jitter=10ms,rate=10mbit,rate-up=2mbit")
    assert (s.rtt_s, s.jitter_s, s.rate_bps, s.rate_up_bps, s.loss) == (0.08, 0.01, 10e6, 2e6, 0.0)
    assert parse_net("rate=384kbit").rate_bps == 384_000 and parse_net("rate=1.5mbit").rate_bps == 1_500_000


@pytest.mark.parametrize("name", ["lan", "cable", "dsl", "4g", "3g", "wan"])
def test_every_profile_is_data_with_its_source(name):
    s = parse_net(name)
    assert s.profile == name and s.rtt_s > 0 and s.source
    assert name in profile_names()


def test_the_dsl_profile_is_webpagetests():
    s = parse_net("dsl")
    assert (s.rtt_s, s.rate_bps, s.rate_up_bps) == (0.05, 1.5e6, 384e3) and "WebPageTest" in (s.source or "")


@pytest.mark.parametrize(("spec", "said"), [
    ("rtt=-5ms", "bad --net rtt '-5ms'"),
    ("mars", "unknown profile 'mars' (known: 3g, 4g, cable, dsl, lan, wan"),
    ("rtt=5ms,delay=3ms", "unknown key 'delay'"),
    ("rate=10mb", "use a number with bit, kbit, mbit or gbit"),
    ("rate=0kbit", "must be above 0"),
    ("rtt=10ms,jitter=20ms", "a delay cannot go below zero"),
    ("rtt=5ms,rtt=6ms", "rtt given twice"),
])
def test_a_bad_spec_is_one_usage_error(spec, said):
    with pytest.raises(UsageError) as e:
        parse_net(spec)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_udp_and_a_loss_without_netem_are_refused():
    with pytest.raises(UsageError, match="runs over UDP"):
        refuse(parse_net("rtt=10ms"), "h3", None)
    with pytest.raises(UsageError, match="this kernel has no sch_netem"):
        refuse(parse_net("loss=1%"), "h1", "this kernel has no sch_netem")
    refuse(parse_net("rtt=10ms"), "h2", None)
    said = net_problems({"a": ("rtt=1ms", ("h1", "h3")), "b": (None, ("h3",)), "c": ("rtt=2ms", ("h3",))})
    assert len(said) == 1 and said[0].startswith("--proto h3 takes no --net:") and "UDP" in said[0]


def test_the_toxics_split_the_round_trip_and_take_rates_in_kb_per_second():
    t = {x["name"]: x for x in toxics(parse_net("rtt=101ms,jitter=10ms,rate=1mbit,rate-up=384kbit"))}
    assert t["latency_downstream"]["attributes"] == {"latency": 51, "jitter": 5}
    assert t["latency_upstream"]["attributes"] == {"latency": 50, "jitter": 5}
    assert t["bandwidth_downstream"]["attributes"] == {"rate": 125} and t["bandwidth_downstream"]["stream"] == \
        "downstream"
    assert t["bandwidth_upstream"]["attributes"] == {"rate": 48}
    assert toxics(parse_net("rtt=0ms")) == []


def test_a_figure_seen_more_than_ten_percent_off_is_said():
    spec = parse_net("rtt=100ms,rate=10mbit")
    assert differs(spec, Seen(0.105, 0.0, 9.5e6, None)) == []
    said = differs(spec, Seen(0.125, 0.0, 5e6, None))
    assert len(said) == 2 and said[0].startswith("round trip seen 125 ms against 100 ms asked (+25%)")
    assert differs(parse_net("rtt=1ms"), Seen(0.00128, 0.0, None, None)) == []  # loopback's own 0.2 ms
    assert differs(parse_net("rtt=1ms"), Seen(0.0021, 0.0, None, None)) != []


# --- files and variants ----------------------------------------------------------------------------------------

def test_net_in_a_file_and_in_a_variant(tmp_path):
    from loadcmp.experiment.spec import load_experiment

    f = tmp_path / "e.toml"
    f.write_text('servers = ["nginx", "slow"]\nnet = "dsl"\n[variants.slow]\nstack = "nginx"\nnet = "rtt=200ms"\n')
    fields, _ = load_experiment(f)
    assert fields["net"] == "dsl" and fields["variant_net"] == {"slow": "rtt=200ms"}
    f.write_text('servers = ["nginx"]\nnet = "mars"\n')
    with pytest.raises(UsageError) as e:
        load_experiment(f)
    assert "e.toml:2: net: --net: unknown profile 'mars'" in str(e.value)


def test_a_cell_names_its_net_conditions():
    from loadcmp.catalog.folder import cell_key

    doc = {"spec": {"page": "/"}, "servers": {}}
    plain = {"server": "nginx", "level": 10, "page": "/", "result": {"warnings": []}}
    netted = {**plain, "result": {"warnings": [], "net": {"asked": {"spec": "4g"}}}}
    a, b = cell_key(plain, doc), cell_key(netted, doc)
    assert a != b and "net 4g" in b.workload() and "net" not in a.workload()


# --- bad input on the command line -----------------------------------------------------------------------------

def _one_line(res) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [x for x in res.output.strip().splitlines() if x.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize(("args", "said"), [
    (["http://127.0.0.1:1/", "--net", "rtt=-5ms"], "bad --net rtt '-5ms'"),
    (["http://127.0.0.1:1/", "--net", "mars"], "known: 3g, 4g, cable, dsl, lan, wan"),
    (["https://127.0.0.1:1/", "--proto", "h3", "--net", "rtt=10ms"], "runs over UDP"),
])
def test_bench_refuses_in_one_line_and_starts_no_proxy(args, said):
    res = CliRunner().invoke(cli, ["bench", *args, "-t", "1"])
    assert said in _one_line(res)
    assert _mine() == []


def test_a_loss_is_refused_where_the_kernel_has_no_netem():
    why = netem.missing()
    if why is None:
        pytest.skip("this kernel has sch_netem: the netem path's own tests apply")
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "--net", "rtt=10ms,loss=1%", "-t", "1"])
    assert "no sch_netem" in _one_line(res) and _mine() == []
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "--net", "dsl,via=netem", "-t", "1"])
    assert "--net via=netem needs the kernel's netem, and this kernel has no sch_netem" in _one_line(res)


def test_run_refuses_net_over_h3_with_the_rest():
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--proto", "h3", "--tls", "--net", "dsl", "-t", "1"])
    assert res.exit_code == 2 and "takes no --net" in res.output and "Traceback" not in res.output


def test_net_with_a_schedulers_cluster_is_refused_in_one_line():
    """The proxy listens on this machine's 127.0.0.1: a scheduler's workers elsewhere would each knock on their own."""
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "--net", "rtt=10ms", "--cluster",
                                   "tcp://10.0.0.9:8786", "-t", "1"])
    assert "--net takes no --cluster tcp://10.0.0.9:8786" in _one_line(res) and _mine() == []
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--net", "dsl", "--cluster", "tcp://10.0.0.9:8786",
                                   "-t", "1"])
    assert res.exit_code == 2 and "--net takes no --cluster" in res.output and "Traceback" not in res.output
    assert net_problems({"a": ("dsl", ("h1",))}, "local:2") == []  # local:N's workers are on this machine


@pytest.mark.skipif(netem.missing() is not None, reason=f"netem path: {netem.missing()}")
def test_the_netem_probe_finds_it():
    assert netem.missing() is None


# --- a real toxiproxy ------------------------------------------------------------------------------------------

class _Big(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b"z" * 250_000

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture()
def big_page() -> Iterator[int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Big)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield int(srv.server_address[1])
    srv.shutdown()
    srv.server_close()


@NEEDS_PROXY
def test_the_path_carries_the_rate_asked_and_stops(big_page):
    import urllib.request

    with open_path(parse_net("rtt=20ms,rate=10mbit,rate-up=2mbit"), ("127.0.0.1", big_page), None) as p:
        pid = p.proxy.pid
        assert p.proxy.version[:1].isdigit() and p.facts(0)["proxy"] == f"toxiproxy {p.proxy.version}"
        assert abs(p.seen.rate_bps / 10e6 - 1) < 0.10 and abs((p.seen.rate_up_bps or 0) / 2e6 - 1) < 0.10
        assert p.seen.rtt_s >= 0.020
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{p.port}/", timeout=30) as r:
            assert len(r.read()) == 250_000
        took = time.perf_counter() - t0
    assert took >= 0.9 * (250_000 * 8 / 10e6 + 0.020)  # 0.2 s at 10 Mbit/s, and the round trip
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@NEEDS_PROXY
def test_a_round_trip_of_100ms_is_in_every_response_and_stored_asked_and_seen(fast_server):
    url = f"http://127.0.0.1:{fast_server}/"
    res = CliRunner().invoke(cli, ["bench", url, "--net", "rtt=100ms", "-c", "10", "-t", "3s", "-k", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{"):])
    assert doc["ok"] > 0 and doc["latency_ms"]["p50"] >= 100.0  # a 100 ms round trip cannot answer sooner
    assert doc["latency_ms"]["min"] >= 99.0
    net = doc["net"]
    assert net["asked"]["rtt_ms"] == 100.0 and 99.0 <= net["seen"]["rtt_ms"] < 200.0
    assert net["proxy_cpu_us"] is not None and net["network_bound"] is False
    assert _mine() == [] and strays() == []


@NEEDS_PROXY
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a CPU for the proxy apart from the client's")
def test_a_proxy_given_too_little_cpu_is_network_bound(fast_server):
    """The proxy on CPU 0, where a busy loop runs too, the client on CPU 1: the proxy waits for its CPU as much as
    it runs, and is flagged."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    try:
        with open_path(parse_net("rtt=0ms"), ("127.0.0.1", fast_server), [0]) as p:
            p.watch_from(time.monotonic() + 0.5)
            res = CliRunner().invoke(cli, ["bench", f"http://127.0.0.1:{p.port}/", "-c", "50", "-t", "3s", "-k",
                                           "--client-cpus", "1", "--json"])
            p.end_window()
    finally:
        busy.kill()
        busy.wait()
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{"):])
    facts = p.facts(doc["completed"])
    assert facts["network_bound"] is True and (facts["proxy_busy_pct"] or 0) >= 90, facts
    assert facts["proxy_cpu_us"] is not None and facts["proxy_cpus"] == 1


def test_the_proxys_version_is_the_one_that_runs():
    from loadcmp.net.toxiproxy import version_of

    assert version_of("2.5.0", "/nonexistent") == "2.5.0" and version_of({"version": "v2.9.1"}, "/x") == "2.9.1"
    assert version_of("git", "/nonexistent") == "git"  # a build with no stamp, whose binary cannot be read
    if (exe := binary()) is not None:  # `go install` stamps no version: the Go build info has the module's
        assert version_of("git", exe)[:1].isdigit()


@NEEDS_PROXY
def test_a_proxy_that_dies_in_the_window_is_said_and_costs_no_figure(fast_server):
    """Its CPU is gone with it: no negative share, and the failures after it are not the server's."""
    import signal

    from loadcmp.net.path import add_net

    with open_path(parse_net("rtt=2ms"), ("127.0.0.1", fast_server), None) as p:
        p.watch_from(time.monotonic())
        time.sleep(1.2)
        os.kill(p.proxy.pid, signal.SIGKILL)
        p.proxy.proc.wait()
        p.end_window()
        facts = p.facts(100)
    assert facts["proxy_cpu_pct"] is None and facts["proxy_cpu_us"] is None and facts["proxy_busy_pct"] is None
    assert "ended in the window (exit status -9)" in facts["proxy_died"]
    doc = {"warnings": [], "client_bound": False, "client_bound_reason": None}
    add_net(doc, facts)
    died = [w for w in doc["warnings"] if "ended in the window" in w]  # beside any round trip seen off the one asked
    assert len(died) == 1 and "not the server's" in died[0] and "\n" not in died[0], doc["warnings"]


@NEEDS_PROXY
def test_the_proxy_ends_with_a_loadcmp_killed_outright():
    """The parent-death signal, set in the child with the prctl the parent loaded (no library loaded after fork)."""
    from loadcmp.net import toxiproxy

    assert toxiproxy._PRCTL is not None
    code = ("import sys, time; from loadcmp.net.toxiproxy import Toxiproxy; "
            "t = Toxiproxy.start(); print(t.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert Path(f"/proc/{pid}").exists()
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def _gone(pid: int) -> bool:
    """The process has ended (gone, or a zombie not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_network_bound_is_said_as_client_bound_too():
    """So that verdicts read the figures as a lower bound, as for a saturated client."""
    from loadcmp.net.cost import ProxyUse, judge
    from loadcmp.net.path import add_net

    from loadcmp.facts import NetFacts

    spec = parse_net("rtt=10ms")
    facts = NetFacts(asked=spec.describe(), seen={"rtt_ms": 10.2}, differs=[], proxy="toxiproxy 2.5.0",
                     proxy_cpu_us=None, proxy_cpu_pct=None, proxy_busy_pct=None, proxy_cpus=1, network_bound=False)
    judge(facts, ProxyUse(cpu_s=0.6, elapsed_s=1.0, busy_pct=97.0), 1000)
    assert facts["network_bound"] and facts["proxy_cpu_us"] == 600.0 and facts["proxy_cpu_pct"] == 60.0
    doc = {"warnings": [], "client_bound": False, "client_bound_reason": None}
    add_net(doc, facts)
    assert doc["client_bound"] is True and doc["client_bound_reason"].startswith("network-bound: the --net proxy")
    calm = NetFacts(**{**facts, "network_bound": False})
    calm.pop("network_bound_reason")
    judge(calm, ProxyUse(cpu_s=0.1, elapsed_s=1.0, busy_pct=30.0), 1000)
    assert not calm["network_bound"]


def test_via_netem_and_a_loss_select_the_kernels_path_and_a_profile_takes_keys_after_it():
    assert parse_net("rtt=10ms").via == "proxy"
    assert parse_net("rtt=10ms,loss=1%").via == "netem", "only netem loses packets"
    spec = parse_net("dsl,via=netem,loss=0.5%")
    assert (spec.via, spec.loss, spec.rtt_s, spec.profile) == ("netem", 0.005, parse_net("dsl").rtt_s, "dsl")
    assert parse_net("dsl,loss=1%").via == "netem" and parse_net("dsl,rtt=20ms").rtt_s == 0.02
    for bad, said in (("rtt=10ms,via=carrier-pigeon", "bad --net via"), ("rtt=10ms,via=proxy,loss=1%", "only netem"),
                      ("dsl,jitter=90ms", "jitter 90ms is more than the rtt")):
        with pytest.raises(UsageError, match=said):
            parse_net(bad)


def test_the_netem_commands_split_the_round_trip_on_the_ports_named_and_leave_other_traffic_alone():
    cmds = [" ".join(c) for c in qdisc.commands(parse_net("rtt=101ms,jitter=10ms,rate=1mbit,rate-up=384kbit,loss=1%"),
                                                 [8080, 40001])]
    assert cmds[0] == ("tc qdisc add dev lo root handle c0de: prio bands 5 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1")
    assert cmds[1] == ("tc qdisc add dev lo parent c0de:4 handle c0d4: netem limit 1000000 delay 51ms 5ms "
                       "distribution normal rate 1000000bit loss 1%")
    assert cmds[2] == ("tc qdisc add dev lo parent c0de:5 handle c0d5: netem limit 1000000 delay 50ms 5ms "
                       "distribution normal rate 384000bit loss 1%")
    assert cmds[3:] == [f"tc filter add dev lo parent c0de: protocol ip prio 1 u32 match ip {f} {p} 0xffff flowid {b}"
                        for p in (8080, 40001) for f, b in (("sport", "c0de:4"), ("dport", "c0de:5"))]


def test_netem_is_laid_for_the_block_and_removed_however_it_ends_and_never_replaces_a_qdisc(monkeypatch):
    """tc faked (this kernel has neither netem nor prio to lay): the order of the calls, the removal after a
    failure, and a root qdisc already on lo refused with what it is."""
    import subprocess

    from loadcmp.errors import LoadError

    calls: list[str] = []
    state = {"root": "qdisc noqueue 0: root refcnt 2", "fail": ""}

    def tc(args):
        line = " ".join(args)
        calls.append(line)
        if line == "tc qdisc show dev lo":
            return subprocess.CompletedProcess(args, 0, state["root"] + "\n", "")
        bad = bool(state["fail"]) and state["fail"] in line
        return subprocess.CompletedProcess(args, 2 if bad else 0, "", "Error: Specified qdisc kind is unknown." if bad
                                           else "")

    monkeypatch.setattr(qdisc, "_tc", tc)
    spec = parse_net("rtt=20ms,via=netem")
    with qdisc.applied(spec, [8080]):
        assert calls[1:] == [" ".join(c) for c in qdisc.commands(spec, [8080])]
    assert calls[-1] == "tc qdisc del dev lo root handle c0de:"
    calls.clear()
    state["fail"] = "delay 10ms"
    with pytest.raises(LoadError, match="failed: Error: Specified qdisc kind is unknown"):
        with qdisc.applied(spec, [8080]):
            pass
    assert calls[-1] == "tc qdisc del dev lo root handle c0de:", "what was laid before the failure is removed"
    calls.clear()
    state["root"] = "qdisc prio c0de: root refcnt 2 bands 5 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1"
    with pytest.raises(LoadError, match=r"already has a root qdisc .* which leaves it: tc qdisc del dev lo root"):
        with qdisc.applied(spec, [8080]):
            pass
    state["root"] = "qdisc fq_codel 0: root refcnt 2 limit 10240p"
    with pytest.raises(LoadError, match="does not replace$"):
        with qdisc.applied(spec, [8080]):
            pass
    assert not any("add" in c or "del" in c for c in calls), "nothing laid, nothing removed that is not ours"


@pytest.mark.skipif(netem.missing() is not None, reason=f"netem path: {netem.missing()}")
def test_bench_via_netem_gives_the_round_trip_asked(fast_server):
    """Where the kernel has netem: a round trip of 60 ms laid on the server's port shows in the latency and in
    the conditions seen, and nothing is left on lo."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "loadcmp", "bench", f"http://127.0.0.1:{fast_server}/", "-c", "4",
                          "-t", "3s", "-k", "--net", "rtt=60ms,via=netem", "--json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    d = json.loads(out)
    assert 0.9 < d["latency_ms"]["p50"] / 60 < 1.3, d["latency_ms"]
    assert d["net"]["proxy"].startswith("netem") and abs(d["net"]["seen"]["rtt_ms"] - 60) < 6
    shown = subprocess.run(["tc", "qdisc", "show", "dev", "lo"], capture_output=True, text=True).stdout
    assert "c0de:" not in shown


# --- --net beside the other ways a load runs: several processes, a local cluster, a log, journeys --------------


@NEEDS_PROXY
@pytest.mark.parametrize("where", [["--workers", "2"], ["--cluster", "local:2"]])
def test_every_client_process_goes_through_the_proxy(fast_server, where):
    """Two client processes (or a local Dask cluster's two workers) all reach the server through the one proxy: no
    response comes sooner than its round trip, and the proxy's cost is measured over their requests."""
    url = f"http://127.0.0.1:{fast_server}/"
    res = CliRunner().invoke(cli, ["bench", url, "--net", "rtt=40ms", "-c", "4", "-t", "2s", "-k", "--json", *where])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{"):])
    assert doc["ok"] > 0 and doc["failed"] == 0 and doc["latency_ms"]["min"] >= 39.0, doc["latency_ms"]
    assert doc["net"]["proxy_cpu_us"] is not None
    assert _mine() == [] and strays() == []


DEMO_JOURNEY = """[[steps]]
name = "home"
path = "/index.html"
expect = 200

[[steps]]
name = "info"
path = "/info.php"
expect = 200
"""
LOG = Path(__file__).parent / "fixtures" / "accesslogs" / "nginx-access.log"


@pytest.mark.docker
@NEEDS_PROXY
@pytest.mark.parametrize("how", ["journey", "replay-aiohttp", "replay-workers", "mix-cluster"])
def test_net_carries_journeys_replays_workers_and_a_local_cluster(tmp_path, images, docker_client, how):
    """`run --net` with each traffic source and each way of running clients: every page's every answer took at least
    the round trip (none went around the proxy: a page of a load of several is sent to the proxy too)."""
    (tmp_path / "j.toml").write_text(DEMO_JOURNEY)
    extra = {"journey": ["--journey", str(tmp_path / "j.toml")],
             "replay-aiohttp": ["--replay", str(LOG), "--replay-speed", "max", "--engine", "aiohttp"],
             "replay-workers": ["--replay", str(LOG), "--replay-speed", "max", "--workers", "2"],
             "mix-cluster": ["--mix", "/index.html=50,/info.php=50", "--cluster", "local:2"]}[how]
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "4", "-t", "2s", "--warmup", "0.5s", "--net",
                                   "rtt=40ms", "--out", str(tmp_path), "--json", *extra])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["results"]
    assert rows[0]["ok"] > 0 and rows[0]["net"][0]["asked"]["rtt_ms"] == 40.0
    timed = [r for r in rows if r["latency_ms"].get("p50") is not None]
    assert len(timed) >= 2 and all(r["latency_ms"]["p50"] >= 39.0 for r in timed), timed
    assert _mine() == [] and strays() == []
