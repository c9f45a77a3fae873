"""Unit tests, no Docker: parsing, catalog, config rendering, spec validation,
recorder arithmetic, schedules, the store."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner

from loadcmp import stacks as st
from loadcmp.cli import cli
from loadcmp.errors import ConfigError, StoreError, UsageError
from loadcmp.load.recorder import KINDS, OK, TIMEOUT, Histogram, Recorder, Result
from loadcmp.load.schedules import Closed, Ramp, Rate, make_schedule
from loadcmp.load.summary import check_invariant, result_doc
from loadcmp.spec import RunSpec, load_experiment, validate
from loadcmp.results import load_results
from loadcmp.store import RunWriter
from loadcmp.units import parse_duration, parse_levels, parse_size

# --- units ---------------------------------------------------------------------


@pytest.mark.parametrize("text, secs", [("30", 30), ("30s", 30), ("2m", 120), ("500ms", 0.5), ("1h", 3600), (5, 5)])
def test_durations(text, secs):
    assert parse_duration(text) == secs


@pytest.mark.parametrize("bad", ["-1", "abc", "3x", ""])
def test_bad_durations(bad):
    with pytest.raises(UsageError):
        parse_duration(bad)


def test_sizes_and_levels():
    assert parse_size("3g") == 3 * 2**30
    assert parse_size("512m") == 512 * 2**20
    assert parse_size("256MiB") == 256 * 2**20
    assert parse_levels("50,100, 500") == [50, 100, 500]
    with pytest.raises(UsageError):
        parse_size("lots")
    with pytest.raises(UsageError):
        parse_levels("0")


# --- catalog and rendering -----------------------------------------------------------


def test_catalog_has_the_five_stacks_and_alias():
    assert set(st.stack_names()) == {"nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache"}
    assert st.get_stack("apache").name == "apache-prefork"
    assert st.get_stack("nginx-apache").php_api == "Apache 2.0 Handler"
    assert st.get_stack("apache-event").php_api == "FPM/FastCGI"
    assert [s.name for s in st.resolve_servers(["all"])] == st.stack_names()


def test_unknown_server_lists_valid_ones():
    with pytest.raises(UsageError) as e:
        st.get_stack("lighttpd")
    assert "apache-event" in str(e.value) and "nginx" in str(e.value)


def render(name, overrides=None, port=8080):
    stack = st.get_stack(name)
    ports = {r.name: port + i for i, r in enumerate(reversed(stack.roles))}
    return st.render(stack, st.effective_settings(stack, overrides or {}), ports)


def test_prefork_render_with_override():
    (r,) = render("apache-prefork", st.parse_overrides(["prefork.MaxRequestWorkers=200"]))
    conf = r.files["apache2.conf"]
    assert "Listen 127.0.0.1:8080" in conf
    assert "mod_mpm_prefork.so" in conf and "libphp8.2.so" in conf
    assert "MaxRequestWorkers 200" in conf and "KeepAlive On" in conf
    assert "Require ip 127.0.0.1" in conf


@pytest.mark.parametrize("name, mpm", [("apache-worker", "worker"), ("apache-event", "event")])
def test_threaded_mpms_use_fpm(name, mpm):
    (r,) = render(name)
    conf = r.files["apache2.conf"]
    assert f"mod_mpm_{mpm}.so" in conf and "proxy_fcgi" in conf and "libphp" not in conf
    assert "pm.max_children = 5" in r.files["php-fpm.conf"]


def test_nginx_and_proxy_render():
    (r,) = render("nginx", st.parse_overrides(["nginx.worker_connections=4096", "fpm.max_children=20"]))
    assert "worker_connections 4096;" in r.files["nginx.conf"]
    assert "listen 127.0.0.1:8080" in r.files["nginx.conf"]
    assert "stub_status" in r.files["nginx.conf"]
    assert "pm.max_children = 20" in r.files["php-fpm.conf"]
    backend, front = render("nginx-apache")
    assert backend.role.name == "backend" and front.role.name == "web"
    assert f"server 127.0.0.1:{backend.port};" in front.files["nginx.conf"]
    assert "Listen 127.0.0.1:" in backend.files["apache2.conf"]


@pytest.mark.parametrize(
    "items, needle",
    [
        (["prefork.MaxRequestWorker=5"], "unknown setting"),
        (["nope"], "KEY=VALUE"),
        (["prefork.MaxRequestWorkers=lots"], "whole number"),
        (["fpm.pm=sometimes"], "one of"),
        (["apache.KeepAlive=maybe"], "on/off"),
        (["prefork.MaxRequestWorkers=0"], "outside"),
    ],
)
def test_bad_overrides(items, needle):
    with pytest.raises(ConfigError) as e:
        st.parse_overrides(items)
    assert needle in str(e.value)


def test_inconsistent_settings_are_refused():
    stack = st.get_stack("apache-prefork")
    with pytest.raises(ConfigError) as e:
        st.effective_settings(stack, st.parse_overrides(["prefork.MaxRequestWorkers=1000"]))
    assert "ServerLimit" in str(e.value)
    stack = st.get_stack("apache-event")
    with pytest.raises(ConfigError):
        st.effective_settings(stack, st.parse_overrides(["event.MaxRequestWorkers=1000"]))


def test_every_tunable_is_documented_and_changes_a_config():
    names = {k.split(".")[0] for k in st.tunables()}
    assert names == {"apache", "prefork", "worker", "event", "nginx", "fpm", "php", "proxy"}
    for key, t in st.tunables().items():
        assert t.doc, key
        stack = next(s for s in st.STACKS.values() if t.section in s.sections)
        base = render(stack.name)
        d = t.default
        if isinstance(d, bool):
            candidates = [not d]
        elif isinstance(d, int):
            candidates = [c for c in (d * 2, d + 25, d + 1, 1) if c != d]
        elif t.choices:
            candidates = [c for c in t.choices if c != d]
        else:
            candidates = ["2"] if key == "nginx.worker_processes" else ["256M"]
        for c in candidates:
            try:
                changed = render(stack.name, {key: t.parse(c)})
            except ConfigError:
                continue
            assert [r.files for r in changed] != [r.files for r in base], key
            break
        else:
            pytest.fail(f"no valid other value for {key}")


# --- schedules -------------------------------------------------------------------------


def test_schedule_splits_keep_totals():
    assert sum(c.clients for c in Closed(15000).split(3)) == 15000
    parts = Ramp(5000, 50, 5).split(2)
    assert sum(p.users for p in parts) == 5000
    assert parts[1].start_offset(0) == pytest.approx(25.0)
    r = Rate(1000, 100).split(4)
    assert sum(p.rate for p in r) == pytest.approx(1000)
    assert sorted(p.due(0) for p in r) == pytest.approx([0, 0.001, 0.002, 0.003])
    assert Rate(10, 5).count_before(1.0) == 10 and Rate(10, 5).count_before(1.05) == 11


def test_schedule_refusals():
    with pytest.raises(UsageError):
        make_schedule("closed", 10, rate=5)
    with pytest.raises(UsageError):
        make_schedule("rate", 10)
    with pytest.raises(UsageError):
        make_schedule("ramp", 10, pace=0)
    assert Ramp(5000, 50, 5).peak_rate() == 1000


# --- recorder ---------------------------------------------------------------------------


def test_histogram_percentiles_within_one_percent():
    rng = np.random.default_rng(1)
    values = rng.lognormal(mean=-5, sigma=1.2, size=200_000)
    h = Histogram.of(values)
    for q in (50, 90, 99, 99.9):
        exact = float(np.percentile(values, q, method="inverted_cdf"))
        assert abs(h.percentile(q) - exact) / exact < 0.01, q
    assert h.max_s == values.max() and h.count == len(values)


def test_histogram_merge_is_exact():
    rng = np.random.default_rng(2)
    a, b = rng.exponential(0.01, 5000), rng.exponential(0.05, 7000)
    merged = Histogram.of(a).merge(Histogram.of(b))
    whole = Histogram.of(np.concatenate([a, b]))
    assert merged.idx.tolist() == whole.idx.tolist() and merged.cnt.tolist() == whole.cnt.tolist()
    assert merged.total_s == pytest.approx(whole.total_s)
    assert Histogram.from_dict(json.loads(json.dumps(merged.to_dict()))).percentile(99) == merged.percentile(99)


def simulate(seed: int, t0: float = 100.0, duration: float = 5.0) -> Result:
    rnd = random.Random(seed)
    rec = Recorder(t0, duration)
    inflight = []
    t = t0 - 1.0
    while t < t0 + duration:
        t += rnd.random() * 0.01
        if rec.start(t):
            inflight.append(t)
        if inflight and rnd.random() < 0.9:
            s = inflight.pop(0)
            rec.done(rnd.randrange(len(KINDS)), s, s, t, 100)
        rec.tick(t)
    return rec.close()


def test_recorder_invariant_and_merge_arithmetic():
    parts = [simulate(1), simulate(2)]
    for p in parts:
        assert check_invariant(result_doc(p))
    merged = Result.merge(parts)
    doc = result_doc(merged)
    assert check_invariant(doc)
    assert doc["started"] == sum(p.started for p in parts)
    assert doc["unfinished"] == sum(p.unfinished for p in parts)
    for k in KINDS:
        assert merged.counts()[k] == sum(p.counts()[k] for p in parts)
    assert merged.latency().count == sum(p.latency().count for p in parts)


def test_recorder_ignores_outside_window_and_after_close():
    rec = Recorder(10.0, 2.0)
    assert not rec.start(9.0) and not rec.start(12.0)
    assert rec.start(10.5)
    rec.done(OK, 10.5, 10.5, 10.7, 10)
    assert rec.start(11.0)
    res = rec.close()
    rec.done(TIMEOUT, 11.0, 11.0, 11.5, 0)  # after close: ignored
    assert res.counts()["ok"] == 1 and res.unfinished == 1 and res.started == 2


# --- spec and experiment files -------------------------------------------------------------


def test_experiment_errors_listed_at_once_with_lines(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\nservers = ["nginx", "iis"]\nclients = "many"\ntime = "30s"\ncolor = "red"\n'
                 '[set]\n"prefork.Bogus" = 3\n')
    with pytest.raises(ConfigError) as e:
        load_experiment(f)
    errs = e.value.errors
    assert len(errs) == 4, errs
    joined = "\n".join(errs)
    assert "bad.toml:5" in joined and "color" in joined
    assert "bad.toml:3" in joined and "bad.toml:2" in joined and "iis" in joined
    assert "bad.toml:6" in joined and "prefork.Bogus" in joined


def test_shipped_experiments_are_valid():
    from loadcmp.stacks import configs_dir

    files = sorted((configs_dir() / "experiments").glob("*.toml"))
    assert {f.stem for f in files} >= {"paper-2013", "pphc-2022", "static", "smoke"}
    for f in files:
        fields, _ = load_experiment(f)
        validate(RunSpec(**fields))


def test_cli_run_reports_every_problem_exit_2(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('servers = 3\nwarp = 9\n')
    res = CliRunner().invoke(cli, ["run", str(f)])
    assert res.exit_code == 2
    assert "bad.toml:1" in res.output and "bad.toml:2" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    "args, needle",
    [
        (["up", "--server", "iis"], "unknown server"),
        (["up", "--server", "nginx", "--set", "nginx.bogus=1"], "unknown setting"),
        (["up", "--server", "nginx", "--server-memory", "lots"], "bad size"),
        (["up", "--server", "nginx", "--server-memory", "900g"], "more than this machine has"),
        (["run", "--server", "nginx", "-c", "0"], "clients"),
        (["run", "--server", "nginx", "--server-cpus", "7"], "CPU"),
    ],
)
def test_cli_usage_errors(args, needle):
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


def test_servers_json():
    res = CliRunner().invoke(cli, ["servers", "--json"])
    doc = json.loads(res.stdout)
    assert [s["name"] for s in doc["servers"]] == st.stack_names()
    assert all(s["description"] for s in doc["servers"])


# --- store ---------------------------------------------------------------------------------


def test_store_roundtrip_and_old_format(tmp_path):
    w = RunWriter.create(tmp_path, "t", {"kind": "run", "name": "t"})
    res = simulate(3)
    doc = result_doc(res)
    w.add_trial({"server": "a", "level": 5, "trial": 1, "status": "ok", "result": doc},
                [{"server": "a", "level": 5, "trial": 1, "second": 0, "ok": 1}], [])
    w.finish("complete")
    r = load_results(w.path)
    assert r.status == "complete" and r.summary.iloc[0].ok == doc["ok"] and len(r.timeline) == 1
    assert not list(w.path.glob(".*")), "no temp files left behind"
    run = json.loads((w.path / "run.json").read_text())
    run["format"] = 0
    (w.path / "run.json").write_text(json.dumps(run))
    with pytest.raises(StoreError) as e:
        load_results(w.path)
    assert "format" in str(e.value)
    with pytest.raises(StoreError):
        load_results(tmp_path / "nothing")


def test_ci95_of_estimates():
    from loadcmp.report.tables import Estimate

    e = Estimate.of([10.0, 12.0, 11.0])
    assert e.mean == pytest.approx(11.0)
    assert e.low == pytest.approx(11.0 - 4.303 * 1.0 / math.sqrt(3))
    assert Estimate.of([5.0]).low is None


def test_capacity_notes_name_the_knob():
    nginx = st.get_stack("nginx")
    notes = st.capacity_notes(nginx, st.effective_settings(nginx, {}), 5000, 1, php=True)
    assert any("worker_connections 768" in n for n in notes)
    assert any("fpm.max_children" in n for n in notes)
    assert st.capacity_notes(nginx, st.effective_settings(nginx, {}), 4, 1, php=True) == []
    prefork = st.get_stack("apache-prefork")
    notes = st.capacity_notes(prefork, st.effective_settings(prefork, {}), 1000, 1, php=True)
    assert len(notes) == 1 and "MaxRequestWorkers" in notes[0]
    proxy = st.get_stack("nginx-apache")
    notes = st.capacity_notes(proxy, st.effective_settings(proxy, {}), 500, 1, php=False)
    assert any("two" in n for n in notes)
