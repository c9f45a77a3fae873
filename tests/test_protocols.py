"""--proto and -m above the engine: what each stack offers (data), the protocol as a dimension of a run (labels
like nginx[h2]), its bad inputs as one line and exit 2, the primer's check against in-process servers, findings
that name a protocol, and the report's HTTP/2 section from made-up tallies."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import ConfigError, UsageError
from loadcmp.experiment.flags import build_spec
from loadcmp.experiment.protos import parse_protos
from loadcmp.lab import stacks as st
from loadcmp.lab.certs import RunCA
from loadcmp.lab import render as rendering
from loadcmp.lab.certs import STAND_IN
from loadcmp.report.build import compose
from loadcmp.report.documents import markdown as markdown_page
from loadcmp.store.reader import load_results
from loadcmp.sweep import primer
from loadcmp.verdicts import findings as fd
from tests.helpers.stored import stored_run

from tests.test_stacks_as_data import copy_stack


def rendered(stack: str, https: bool, **settings: Any) -> list[rendering.Rendered]:
    """Every role's files, rendered with these settings (and the part tls's lines with `https`)."""
    s = st.get_stack(stack)
    ports = {r.name: 8000 + i for i, r in enumerate(s.roles)}
    return rendering.render(s, st.effective_settings(s, settings), ports, https=STAND_IN if https else None)


def configs(stack: str, https: bool, **settings: Any) -> str:
    """Every file a stack's front role renders, as one text."""
    return "\n".join(rendered(stack, https, **settings)[-1].files.values())


# --- the stacks, as data ---

def test_each_stack_says_what_it_offers() -> None:
    offered = {s.name: s.protocols for s in st.catalog()}
    assert offered == {
        "nginx": ("h1", "h2"), "nginx-apache": ("h1", "h2"), "apache-prefork": ("h1", "h2", "h2c"),
        "apache-worker": ("h1", "h2", "h2c"), "apache-event": ("h1", "h2", "h2c"), "caddy": ("h1", "h2", "h2c", "h3"),
        "lighttpd": ("h1", "h2", "h2c")}


def test_the_templates_render_h2_by_alpn_with_tls_and_h2c_where_offered() -> None:
    nginx = configs("nginx", https=True, **{"h2.max_concurrent_streams": 64})
    assert " ssl http2 backlog=" in nginx and "http2_max_concurrent_streams 64;" in nginx
    assert "http2" not in configs("nginx", https=False)  # nginx 1.22: its plain port stays HTTP/1.1
    apache = configs("apache-event", https=True, **{"h2.max_workers": 8})
    assert "Protocols h2 http/1.1" in apache and "H2MaxWorkers 8" in apache and "mod_http2.so" in apache
    assert "Protocols h2c http/1.1" in configs("apache-worker", https=False)
    assert "H2MaxWorkers" not in configs("apache-event", https=False)  # 0: mod_http2's own default
    assert "protocols h1 h2 h2c" in configs("caddy", https=False)
    assert "protocols h1 h2 h2c" not in configs("caddy", https=True)  # its default (h2 by ALPN) stays
    assert '"server.h2c" => "enable"' in configs("lighttpd", https=False)
    # nginx-apache: h2 at nginx in front, HTTP/1.1 to Apache behind it
    back, front = rendered("nginx-apache", https=True)
    assert "http2" in front.files["nginx.conf"]
    assert "Protocols" not in back.files["apache2.conf"]


@pytest.mark.parametrize("stack,setting,says", [
    ("caddy", "h2.max_concurrent_streams=10", "cannot set HTTP/2's concurrent streams"),
    ("lighttpd", "h2.window_size=1048576", "fixes HTTP/2's stream window"),
    ("nginx", "h2.max_workers=4", "has no h2 worker threads"),
])
def test_a_stack_refuses_in_its_own_words_what_its_server_cannot_set(stack: str, setting: str, says: str) -> None:
    with pytest.raises(UsageError) as e:
        build_spec(None, {"servers": (stack,), "settings": st.catalog().parse_overrides([setting])})
    assert says in str(e.value)


def test_a_stack_file_with_a_wrong_protocol_list_is_refused_with_its_line(tmp_path: Path) -> None:
    bad = copy_stack("caddy", tmp_path / "bad")
    text = (bad / "stack.toml").read_text()
    text = text.replace('protocols = ["h1", "h2", "h2c", "h3"]', 'protocols = ["h2", "spdy"]')
    (bad / "stack.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        st.catalog([str(bad)])
    assert "unknown protocol spdy: use one of h1, h2, h2c, h3" in str(e.value)
    plain = copy_stack("caddy", tmp_path / "plain")
    text = (plain / "stack.toml").read_text().replace('"tls", "h2"]', '"h2"]')
    text = text.replace('"h2", "h2c", "h3"]', '"h2c", "h2", "h3"]')
    (plain / "stack.toml").write_text(text.replace("[[checks]]\nrule = \"not tls", "[[checks]]\nrule = \"not fpm"))
    with pytest.raises(ConfigError) as e:
        st.catalog([str(plain)])
    assert "h2, h3 run over TLS only: list the part 'tls' too" in "\n".join(e.value.messages)


# --- the protocol as a dimension ---

def test_several_protocols_label_each_server_once_per_protocol() -> None:
    spec = build_spec(None, {"servers": ("nginx", "caddy"), "protos": ("h1", "h2"), "tls": True, "streams": 10})
    assert [spec.label(*v) for v in spec.variants()] == ["nginx[h1]", "nginx[h2]", "caddy[h1]", "caddy[h2]"]
    assert spec.streams_for("h1") == 1 and spec.streams_for("h2") == 10
    one = build_spec(None, {"servers": ("nginx",), "protos": ("h2",), "tls": True})
    assert [one.label(*v) for v in one.variants()] == ["nginx"]  # one protocol: the label as it was
    both = build_spec(None, {"servers": ("caddy",), "protos": ("h1", "h2c"), "pages": ("/a", "/b")})
    assert both.label("caddy", False, "/a", "h2c") == "caddy[h2c] /a"


def test_an_experiment_file_and_a_variant_name_their_protocols(tmp_path: Path) -> None:
    f = tmp_path / "e.toml"
    f.write_text('servers = ["nginx", "fast"]\ntls = true\nproto = "h1"\nstreams = 4\n'
                 '[variants.fast]\nstack = "caddy"\nproto = ["h1", "h2"]\n'
                 '[[findings]]\nclaim = "h2 serves more"\ncheck = "fast[h2]:rps > fast[h1]:rps"\n')
    spec = build_spec(str(f), {})
    assert [spec.label(*v) for v in spec.variants()] == ["nginx[h1]", "fast[h1]", "fast[h2]"]
    assert spec.to_dict()["variant_protos"] == {"fast": ("h1", "h2")} and spec.streams == 4
    f.write_text('servers = ["nginx"]\nproto = ["h1", "h4"]\n')
    with pytest.raises(ConfigError) as e:
        build_spec(str(f), {})
    assert "e.toml:2: proto: unknown protocol h4" in str(e.value.messages)


@pytest.mark.parametrize("args,needle", [
    (["-m", "0", "--proto", "h2", "--tls"], "-m/--streams must be at least 1, got 0"),
    (["--proto", "h2c"], "--proto h2c: nginx does not speak h2c (cleartext HTTP/2); the stacks that do: "
                         "apache-prefork, apache-worker, apache-event, caddy, lighttpd"),
    (["--proto", "h2"], "h2 (HTTP/2 over TLS) runs over TLS only; add --tls"),
    (["--proto", "h2,spdy"], "unknown protocol spdy: use one of h1, h2, h2c, h3"),
    (["-m", "10"], "HTTP/1.1 has one request in flight per connection"),
    (["--proto", "h2", "--tls", "--schedule", "ramp"], "runs the fast engine's closed, rate and replay schedules"),
])
@pytest.mark.parametrize("command", ["run", "smoke", "capacity", "tune"])
def test_bad_protocol_input_is_one_line_and_exit_2_before_anything_starts(command: str, args: list[str],
                                                                          needle: str) -> None:
    extra = ["--param", "nginx.worker_connections=100..200"] if command == "tune" else []
    if command in ("capacity", "tune") and "--schedule" in args:
        pytest.skip("a search sets its own schedule")
    res = CliRunner().invoke(cli, [command, "--server", "nginx", *args, *extra])
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert "Step" not in res.output and "starting" not in res.output


# --- the primer: what the server negotiates ---

class _Server:
    """One in-process server on loopback that answers each connection with `reply` (after reading what came)."""

    def __init__(self, reply: bytes, ctx: ssl.SSLContext | None = None) -> None:
        self.reply, self.ctx = reply, ctx
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                if self.ctx is not None:
                    conn = self.ctx.wrap_socket(conn, server_side=True)
                conn.recv(65536)
                conn.sendall(self.reply)
            except OSError:
                pass
            finally:
                conn.close()


def _dep(port: int, cafile: str | None, log: str = "") -> Any:
    return SimpleNamespace(host=SimpleNamespace(address="127.0.0.1"), port=port, plan=SimpleNamespace(cafile=cafile),
                           stack=SimpleNamespace(name="demo"), logs=lambda n=20: log)


@pytest.fixture()
def ca(tmp_path: Path) -> Iterator[tuple[RunCA, str]]:
    run_ca = RunCA(tmp_path / "run")
    yield run_ca, run_ca.cafile


def _tls_server(run_ca: RunCA, tmp_path: Path, alpn: list[str]) -> _Server:
    issued = run_ca.issue("ecdsa-p256")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_bytes(issued.cert_pem)
    key.write_bytes(issued.key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(alpn)
    return _Server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", ctx)


def test_the_primer_sees_h2_chosen_by_alpn(ca: tuple[RunCA, str], tmp_path: Path) -> None:
    server = _tls_server(ca[0], tmp_path, ["h2", "http/1.1"])
    assert primer.negotiate(_dep(server.port, ca[1]), "h2") == "h2"


def test_an_h2_server_that_answers_h1_stops_the_trial_naming_it_and_its_log(ca: tuple[RunCA, str],
                                                                           tmp_path: Path) -> None:
    server = _tls_server(ca[0], tmp_path, ["http/1.1"])
    log = ("[http2:warn] AH10034: The mpm module (prefork.c) is not supported by mod_http2. ... the HTTP/2 "
           "protocol will be inactive.\nother line")
    dep = _dep(server.port, ca[1], log)
    got = primer.negotiate(dep, "h2")
    assert got == "http/1.1"
    said = primer.wrong_protocol(dep, "h2", got)
    assert said.startswith("demo: asked for h2, ALPN chose http/1.1; its log says: [http2:warn] AH10034")


def test_the_primer_sees_h2c_by_its_settings_and_h1_by_its_status_line() -> None:
    settings = bytes([0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100])
    assert primer.negotiate(_dep(_Server(settings).port, None), "h2c") == "h2c"
    h1 = _Server(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
    assert primer.negotiate(_dep(h1.port, None), "h2c") == "http/1.1"
    assert primer.negotiate(_dep(_Server(b"").port, None), "h2c") == "nothing"
    assert primer.negotiate(_dep(h1.port, None), "h1") is None  # h1: the handshake's ALPN checks it


# --- findings and the report ---

def test_a_finding_names_a_protocol_and_a_page() -> None:
    c = fd.parse_check("nginx[h2]:rps > 1.5 * nginx[h1]:rps")
    assert c.left.label == "nginx[h2]" and c.right is not None and c.right.label == "nginx[h1]"
    c = fd.parse_check("caddy[h2c][/info.php]:p99 < caddy[h1][/info.php]:p99")
    assert c.left.label == "caddy[h2c] /info.php"
    assert fd.parse_check("nginx[/index.html]:rps > 100").left.label == "nginx /index.html"


def _tally(goaways: int, resets: dict[str, int]) -> dict[str, Any]:
    return {"protocol": "h2", "connections": 10 + goaways, "streams": 20000, "streams_per_connection": 950.0,
            "goaways": goaways, "goaway_unprocessed": goaways * 3, "retried": goaways * 3, "resets": resets,
            "max_concurrent": 128, "max_per_connection": 1000}


def test_the_report_shows_streams_goaway_every_n_and_a_trial_stopped_for_its_protocol(tmp_path: Path) -> None:
    def edit(t: dict[str, Any]) -> None:
        if t["server"] == "nginx":
            t["result"]["streams"] = _tally(12, {"REFUSED_STREAM": 2})
        elif t["level"] == 50:
            t.update(status="wrong_protocol", reason="apache-prefork: asked for h2, ALPN chose http/1.1; its log "
                                                     "says: AH10034: The mpm module (prefork.c) is not supported")
            del t["result"]

    folder = stored_run(tmp_path / "run", edit=edit)
    run = json.loads((folder / "run.json").read_text())
    run["servers"]["nginx"].update(proto="h2", negotiated="h2", goaway_after="nginx.keepalive_requests")
    run["servers"]["nginx"]["settings"]["nginx.keepalive_requests"] = 1000
    run["servers"]["apache-prefork"].update(proto="h2", negotiated="http/1.1")
    (folder / "run.json").write_text(json.dumps(run))
    text = markdown_page(compose(load_results(folder)))
    assert "## HTTP/2 streams" in text
    assert "| 10 | nginx | h2 | 950.0 | 22 | 12 | 36 | 36 | REFUSED_STREAM 2 | 128 | 1,000 |" in text
    assert "nginx: asked for h2, the server negotiated h2" in text
    assert "apache-prefork: asked for h2, the server negotiated http/1.1" in text
    assert "apache-prefork at 50 clients was not measured: apache-prefork: asked for h2, ALPN chose http/1.1" in text
    assert ("the server sent 12 GOAWAY per trial, closing connections after at most 1,000 requests each: its "
            "per-connection limit nginx.keepalive_requests = 1,000") in text


def test_an_h1_run_has_no_http2_section(tmp_path: Path) -> None:
    text = markdown_page(compose(load_results(stored_run(tmp_path / "run"))))
    assert "HTTP/2" not in text


def test_parse_protos_keeps_order_and_refuses_what_is_not_one() -> None:
    assert parse_protos("h2, h1") == ("h2", "h1")
    with pytest.raises(UsageError, match="protocol h2 is given twice"):  # two trials of one cell, both #1
        parse_protos("h2, h1,h2")
    assert parse_protos(["H2C"]) == ("h2c",)
    with pytest.raises(UsageError, match="unknown protocol"):
        parse_protos("")


# --- a run of several protocols: what the report compares ---

def _several_protocols(folder: Path, h2_gain: dict[str, float], streams: int = 4) -> Path:
    """run-2x2x3 as if run with `--proto h1,h2 -m 4`: each trial as `X[h1]`, and as `X[h2]` with its rate
    times `h2_gain[X]`."""
    import copy

    from tests.helpers.stored import FIXTURES

    folder = stored_run(folder, fixture=FIXTURES / "run-2x2x3")
    run = json.loads((folder / "run.json").read_text())
    trials = []
    for t in run["trials"]:
        for proto in ("h1", "h2"):
            c = copy.deepcopy(t)
            c["server"] = f"{t['server']}[{proto}]"
            c["result"]["rps"] *= h2_gain[t["server"]] if proto == "h2" else 1.0
            trials.append(c)
    run["trials"] = trials
    run["servers"] = {f"{s}[{p}]": {**info, "proto": p, "negotiated": "h2" if p == "h2" else "http/1.1"}
                      for s, info in run["servers"].items() for p in ("h1", "h2")}
    run["spec"].update(protos=["h1", "h2"], streams=streams)
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def test_several_protocols_compare_the_stacks_within_each_and_each_stack_across_them(tmp_path: Path) -> None:
    from loadcmp.report.compare import comparison_lines, pairs, ratio_table
    from loadcmp.report.story import throughput

    data = load_results(_several_protocols(tmp_path / "run", {"nginx": 3.0, "apache-prefork": 1.0}))
    assert data.servers == ["nginx[h1]", "nginx[h2]", "apache-prefork[h1]", "apache-prefork[h2]"]
    assert pairs(data) == [("nginx[h1]", "apache-prefork[h1]"), ("nginx[h2]", "apache-prefork[h2]"),
                           ("nginx[h1]", "nginx[h2]"), ("apache-prefork[h1]", "apache-prefork[h2]")]
    base, rows = ratio_table(data)
    assert base == "" and {(r.server, r.baseline) for r in rows} == {(b, a) for a, b in pairs(data)}
    said = comparison_lines(data) + throughput(data)
    crossed = [v for v in said if "apache-prefork[h2]" in v and "nginx[h1]" in v]
    assert not crossed, crossed  # never one stack on h2 against another on h1
    assert any(v.startswith("nginx[h2] served 2.") and "of apache-prefork[h2] at 50 connections × 4 streams" in v
               for v in said), said
    assert any(v.startswith("nginx[h2] served 3.00× (") and "of nginx[h1] at 400 clients (nginx[h2]'s: connections "
               "× 4 streams)" in v for v in said), said
    assert any(v.startswith("nginx[h2] peaked at") and "at 400 connections × 4 streams" in v for v in said), said
    assert any(v.startswith("nginx[h1] peaked at") and "at 400 clients" in v for v in said), said
    assert any(v.startswith("nginx[h2] handled more requests/s than apache-prefork[h2] at 50 and 400 connections × 4 "
                            "streams") for v in said), said
    text = markdown_page(compose(data))
    assert ("50 and 400 concurrent clients on h1 and 50 and 400 connections × 4 streams on h2 (200 and 1,600 "
            "requests in flight)") in text
    assert "Ratios of each label B to the label A it is compared with" in text
    assert "| 50 | nginx[h2] / nginx[h1] |" in text and "| 50 | apache-prefork[h2] / nginx[h2] |" in text
    assert "| 50 | apache-prefork[h2] / nginx[h1] |" not in text and "/ nginx[h1] | " in text


def test_a_capacity_in_clients_of_several_streams_says_both() -> None:
    from loadcmp.sweep.capacity import sentence
    from loadcmp.sweep.search import Found

    found = Found(kind="capacity", level=160, missed=200)
    cap = SimpleNamespace(unit="clients", most_trials=5, max_reason="", start=10)
    assert sentence("caddy[h2]", found, cap, None, 4) == (  # type: ignore[arg-type]
        "caddy[h2]: capacity 160 clients (connections, each carrying 4 streams) (met at 160, missed at 200)")
    assert sentence("caddy[h1]", found, cap, None) == "caddy[h1]: capacity 160 clients (met at 160, missed at 200)"  # type: ignore[arg-type]
