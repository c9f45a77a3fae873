"""What goes with a run's traffic sources (`traffic.fits`): flags with nothing to act on, a replay's flags
that its log overrules, and the protocol all three sources run over, each refused in one line before anything
starts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp import protocols
from loadcmp.cli import cli


def _log(tmp_path: Path) -> str:
    p = tmp_path / "access.log"
    p.write_text("".join(f'127.0.0.1 - - [26/Nov/2026:01:24:0{s} +0000] "GET /a HTTP/1.1" 200 10 "-" "-"\n'
                         for s in (1, 2, 3)))
    return str(p)


def _refused(tmp_path: Path, args: list[str]) -> str:
    """The one line `run` says; exit 2 and no results folder (nothing started)."""
    out = tmp_path / "results"
    r = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "2", "--out", str(out), *args])
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output, r.output
    assert not out.exists()
    return r.output


@pytest.mark.parametrize("args, said", [
    (["--replay-speed", "2x"], "--replay-speed without --replay: it has nothing to act on"),
    (["--replay-methods", "GET,POST"], "--replay-methods without --replay"),
    (["--log-format", "json"], "--log-format without --replay"),
    (["--seed", "3"], "--seed without --mix or --journey: nothing is drawn with it"),
])
def test_a_flag_with_nothing_to_act_on_is_refused(tmp_path, args, said):
    assert said in _refused(tmp_path, args)


@pytest.mark.parametrize("args, said", [
    (["-n", "5"], "--replay and -n/--requests: at Nx the log's own times say how many are sent"),
    (["--replay-speed", "2x", "--warmup", "0", "-n", "5"], "--replay and -n/--requests"),
    (["--rate", "5"], "--replay and --rate: a replay's log says what is sent and when"),
    (["--ramp-up", "1s"], "--replay and --ramp-up"),
    (["--pace", "1s"], "--replay and --pace"),
    (["--page", "/b"], "--replay and --page"),
    (["--replay-methods", "GET,GTE"], "bad --replay-methods 'GET,GTE': GTE is not an HTTP method"),
])
def test_a_replay_refuses_what_its_log_says(tmp_path, args, said):
    assert said in _refused(tmp_path, ["--replay", _log(tmp_path), *args])


def test_a_replay_at_max_takes_n_and_its_own_page(tmp_path):
    from loadcmp.experiment.flags import build_spec
    from loadcmp.traffic.source import MixTraffic, ReplayTraffic

    log = _log(tmp_path)
    spec = build_spec(None, {"servers": ("nginx",), "replay": log, "replay_speed": "max", "requests": 5})
    assert spec.requests == 5 and spec.page == "/a"
    assert build_spec(None, {"servers": ("nginx",), "replay": log, "page": "/a"}).page == "/a"  # the log's own
    methods = build_spec(None, {"servers": ("nginx",), "replay": log, "replay_methods": ("GET", "PROPFIND")})
    assert methods.traffic == ReplayTraffic(log, "1x", ("GET", "PROPFIND"))
    mixed = build_spec(None, {"servers": ("nginx",), "mix": {"/a": 1.0}, "seed": 3})
    assert mixed.traffic == MixTraffic({"/a": 1.0}, 3)


def test_pages_in_a_file_are_named_as_the_files_key(tmp_path):
    exp = tmp_path / "e.toml"
    exp.write_text(f'servers = ["nginx"]\npages = ["/a", "/b"]\nreplay = "{_log(tmp_path)}"\n')
    said = _refused(tmp_path, [str(exp)])
    assert "--replay and pages = [...]" in said and "--pages" not in said


def test_a_paced_replay_names_its_flag_where_a_protocol_lacks_the_replay_schedule():
    """A replay at 1x runs the replay schedule, which h2 runs; a protocol without it refuses the flag given (at max
    a replay is the closed loop's), never a `--schedule replay` that --schedule has no choice for."""
    assert protocols.get("h2").run_error("fast", "replay", "--replay-speed 1x") is None
    row = protocols.register(replace(protocols.H2C, name="hx", words="hx (a test's)", schedules=("closed",)))
    try:
        said = row.run_error("fast", "replay", "--replay-speed 1x")
    finally:
        protocols.unregister("hx")
    assert said == ("--proto hx runs the fast engine's closed loop (-c connections, -m streams each), not "
                    "--replay-speed 1x")


@pytest.mark.parametrize("tls", [[], ["--tls"]], ids=["plain", "tls"])
def test_journeys_refuse_tls_resume_and_do_not_advise_tls(tmp_path, tls):
    """Journeys' users keep their own connections and resume no TLS session: --tls-resume with them is refused
    with or without --tls, and adding --tls is never the advice (it would not make them resume)."""
    said = _refused(tmp_path, ["--journey", "reader", "--app", "wordpress", "--tls-resume", "0.5", *tls])
    assert "--tls-resume 0.5: --journey's users keep their own connections and resume no TLS session" in said, said
    assert "add --tls" not in said
