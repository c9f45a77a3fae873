"""The protocol table (`loadcmp/protocols.py`): each row's facts, each refusal worded there once, the house reading
the rows instead of comparing names (counted by AST), and a made-up row that the checks read like the real ones."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadcmp import protocols
from loadcmp.errors import UsageError
from loadcmp.experiment.protos import parse_protos, proto_problems
from loadcmp.lab import stacks as st
from loadcmp.load.target import make_target
from loadcmp.protocols import Protocol

PKG = Path(__file__).resolve().parent.parent / "loadcmp"
NAMES = {"h1", "h2", "h2c", "h3"}


def _names_a_protocol(node: ast.expr) -> bool:
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return any(isinstance(x, ast.Constant) and x.value in NAMES for x in items)


def comparing_modules() -> dict[str, int]:
    """Each module outside the table that compares a protocol's name with ==, !=, in or not in: how often."""
    out: dict[str, int] = {}
    for f in sorted(PKG.rglob("*.py")):
        rel = f.relative_to(PKG).as_posix()
        if rel == "protocols.py":
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                      for o in node.ops)
                    and any(_names_a_protocol(x) for x in [node.left, *node.comparators])):
                out[rel] = out.get(rel, 0) + 1
    return out


def test_the_counter_sees_each_shape_of_comparison() -> None:
    for shape in ['p == "h2"', 'p != "h1"', 'p in ("h2", "h2c")', '"h3" in protos', 'p not in ["h1"]']:
        node = ast.parse(shape, mode="eval").body
        assert isinstance(node, ast.Compare) and any(_names_a_protocol(x) for x in [node.left, *node.comparators])
    assert not _names_a_protocol(ast.parse('"http/1.1"', mode="eval").body)


def test_protocol_names_are_compared_in_at_most_three_modules_outside_the_table() -> None:
    found = comparing_modules()
    assert len(found) <= 3, found


# --- the rows ---

def test_the_rows_say_what_each_protocol_is() -> None:
    assert protocols.names() == ("h1", "h2", "h2c", "h3") and protocols.DEFAULT == "h1"
    h1, h2, h2c, h3 = map(protocols.get, ("h1", "h2", "h2c", "h3"))
    assert [p.schemes for p in (h1, h2, h2c, h3)] == [("http", "https"), ("https",), ("http",), ("https",)]
    assert [p.transport for p in (h1, h2, h2c, h3)] == ["tcp", "tcp", "tcp", "udp"]
    assert [p.multiplexed for p in (h1, h2, h2c, h3)] == [False, True, True, True]
    assert [p.http1 for p in (h1, h2, h2c, h3)] == [True, False, False, False]
    assert [p.alpn_checked for p in (h1, h2, h2c, h3)] == [False, True, False, False]
    assert h2.tcp_alpn == ("h2", "http/1.1") and h1.tcp_alpn == h2c.tcp_alpn == h3.tcp_alpn == ("http/1.1",)
    assert h3.alpn == ("h3",) and h2c.tls == "refused" and h2.tls == h3.tls == "required" and h1.tls == "either"
    assert protocols.find("spdy") is None and protocols.find("h2") is h2


def test_an_unknown_protocol_is_named_with_the_known_ones() -> None:
    with pytest.raises(UsageError, match="^unknown protocol h5: use one of h1, h2, h2c, h3$"):
        protocols.get("h5")
    assert protocols.unknown_error(["h1", "spdy", "h4"]) == "unknown protocol spdy, h4: use one of h1, h2, h2c, h3"
    assert protocols.unknown_error(["h1", "h3"]) is None
    with pytest.raises(UsageError, match="unknown protocol spdy: use one of"):
        parse_protos("h1,spdy")
    with pytest.raises(UsageError, match="unknown protocol h5: use one of"):
        make_target("http://127.0.0.1/", proto="h5", resolve=False)


# --- each refusal, worded once ---

def test_scheme_and_tls_refusals() -> None:
    h1, h2, h2c, h3 = map(protocols.get, ("h1", "h2", "h2c", "h3"))
    assert h2.scheme_error("http", "http://x/") == ("--proto h2 needs an https:// URL; http://x/ is plain http "
                                                    "(use --proto h2c)")
    assert h3.scheme_error("http", "http://x/") == ("--proto h3 needs an https:// URL; http://x/ is plain http "
                                                    "(h3 (HTTP/3) runs over QUIC, which is always encrypted)")
    assert h2c.scheme_error("https", "https://x/") == ("--proto h2c runs over plain http only; https://x/ is https "
                                                       "(use --proto h2 or h3)")
    assert h1.scheme_error("http", "") is h1.scheme_error("https", "") is h3.scheme_error("https", "") is None
    assert h3.tls_error("nginx", False) == ("--proto h3: h3 (HTTP/3) runs over TLS only; add --tls (tls = true) "
                                            "for nginx")
    assert h2c.tls_error("caddy", True) == ("--proto h2c: h2c (cleartext HTTP/2) is on a plain port; caddy runs "
                                            "--tls (use --proto h2 or h3)")
    assert h1.tls_error("x", True) is h1.tls_error("x", False) is h2.tls_error("x", True) is None


def test_streams_options_and_stack_refusals() -> None:
    h1, h2 = protocols.get("h1"), protocols.get("h2")
    assert protocols.streams_error(0, ("h2",)) == "-m/--streams must be at least 1, got 0"
    assert protocols.streams_error(4, ("h1",)) == (
        "-m/--streams 4: HTTP/1.1 has one request in flight per connection (pipelining is not offered); streams "
        "are for --proto h2, h2c or h3")
    assert protocols.streams_error(4, ("h1", "h2")) is protocols.streams_error(1, ("h1",)) is None
    assert h2.option_error("--http10") == ("--proto h2 takes no --http10: that is HTTP/1's (an h2 connection shakes "
                                           "hands once and carries many streams)")
    assert h1.option_error("--tls-resume") is None
    assert h2.unspoken_error("fast (nginx)", ["caddy"]) == ("--proto h2: fast (nginx) does not speak h2 (HTTP/2 "
                                                            "over TLS); the stacks that do: caddy")
    assert h2.unspoken_error("nginx", []).endswith("; no stack does")
    assert protocols.stack_problems(["h1", "h2"], None) == []
    assert protocols.stack_problems(["h2", "spdy"], "tls") == ["unknown protocol spdy: use one of h1, h2, h2c, h3",
                                                               "h2 run over TLS only: list the part 'tls' too"]
    assert protocols.stack_problems(["h2c"], "tls") == [
        "protocols must include h1 (readiness, the primer and status pages speak it)"]


def test_engine_schedule_and_source_refusals() -> None:
    h1, h2, h3 = map(protocols.get, ("h1", "h2", "h3"))
    assert h2.run_error("aiohttp", "ramp") == ("--proto h2 runs the fast engine's closed, rate and replay schedules "
                                               "(-c connections, -m streams each), not --schedule ramp nor "
                                               "--engine aiohttp")
    assert h3.run_error("aiohttp", "rate") == ("--proto h3 runs its own QUIC engine (every schedule), "
                                               "not --engine aiohttp")
    assert h1.run_error("aiohttp", "ramp") is h2.run_error("fast", "closed") is None
    assert all(p.source_error(f) is None for p in (h1, h2, h3) for f in ("--page", "--mix", "--replay", "--journey"))
    one = protocols.register(Protocol("h1p", "one page only", "tcp", "either", (), False, sources=("page",)))
    try:
        assert one.source_error("--journey") == (
            "--journey runs over HTTP/1.1 (--proto h1) or h2 (HTTP/2 over TLS) (--proto h2) or h2c (cleartext HTTP/2) "
            "(--proto h2c) or h3 (HTTP/3) (--proto h3): the h1p engine does not carry --journey; drop --proto h1p or "
            "--journey")
    finally:
        protocols.unregister("h1p")


def test_client_behaviour_refusals_say_why() -> None:
    """--think runs over every protocol's engine; a paced write or read over HTTP/1 only, each refusal with its reason
    (docs/clients.md#where-they-run)."""
    h1, h2, h2c, h3 = map(protocols.get, ("h1", "h2", "h2c", "h3"))
    assert all(p.behaviour_error("--think") is None for p in (h1, h2, h2c, h3))
    assert h1.behaviour_error("--send-rate") is h1.behaviour_error("--read-rate") is None
    assert h2.behaviour_error("--send-rate") == (
        "--proto h2 takes no --send-rate: HTTP/2 and HTTP/3 frame a connection's streams together, and a request "
        "trickled to the server (slowloris) is HTTP/1's attack; --proto h1 runs it")
    assert h2c.behaviour_error("--read-rate") == (
        "--proto h2c takes no --read-rate: one h2 connection carries all its streams, and the h2 engine does not "
        "pace its reads; --proto h1 runs it")
    assert "QUIC runs over UDP" in str(h3.behaviour_error("--read-rate"))
    none = protocols.register(Protocol("h1x", "a made-up one", "tcp", "either", (), False))
    try:
        assert none.behaviour_error("--think") == ("--proto h1x takes no --think: its engine runs no client "
                                                   "behaviour; --proto h1, h2, h2c or h3 runs it")
    finally:
        protocols.unregister("h1x")


REFUSALS = ["needs an https:// URL", "frame a connection's streams together", "does not pace its reads",
            "receive buffer drops", "runs over plain http only", "runs over TLS only", "is on a plain port",
            "that is HTTP/1's", "the stacks that do:", "one request in flight per connection",
            "-m/--streams must be", "unknown protocol", "protocols must include", "engine does not carry",
            "runs its own "]


def test_each_refusal_is_worded_in_the_table_only() -> None:
    where = {w: sorted(f.relative_to(PKG).as_posix() for f in PKG.rglob("*.py") if w in f.read_text())
             for w in REFUSALS}
    assert where == {w: ["protocols.py"] for w in REFUSALS}


# --- a made-up row, read by the checks like the real ones ---

@pytest.fixture
def hq() -> Iterator[Protocol]:
    """A made-up protocol: cleartext, multiplexed, over TCP (as h2c), registered for one test."""
    row = protocols.register(Protocol("hq", "hq (a made-up one)", "tcp", "refused", (), True))
    yield row
    protocols.unregister("hq")


def test_a_new_row_is_read_by_the_target_and_the_spec(hq: Protocol) -> None:
    with pytest.raises(ValueError, match="registered already"):
        protocols.register(hq)
    assert "hq" in protocols.names() and parse_protos("h1,hq") == ("h1", "hq")
    t = make_target("http://127.0.0.1/", proto="hq", streams=8, resolve=False)
    assert (t.proto, t.streams) == ("hq", 8)
    with pytest.raises(UsageError, match="^--proto hq runs over plain http only; https://127.0.0.1/ is https"):
        make_target("https://127.0.0.1/", proto="hq", resolve=False)
    with pytest.raises(UsageError, match="^--proto hq takes no --http10"):
        make_target("http://127.0.0.1/", proto="hq", http10=True, resolve=False)
    assert protocols.streams_error(4, ("h1", "hq")) is None
    assert protocols.streams_error(4, ("h1",)) is not None and "h2c, h3 or hq" in str(protocols.streams_error(4, ()))
    assert proto_problems({"caddy": "caddy"}, {"caddy": ("hq",)}, {"caddy": True}, 4, st.catalog()) == [
        "--proto hq: caddy does not speak hq (a made-up one); no stack does"]
