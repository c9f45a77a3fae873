"""Variants: one stack under several labels, each with its own settings (loadcmp.experiment.variants)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.experiment.flags import build_spec, server_fields
from loadcmp.errors import ConfigError, UsageError
from loadcmp.sweep.runner import plan_sweep
from loadcmp.sweep.trial import Planned, plan_trial
from loadcmp.experiment.spec import load_experiment
from loadcmp.experiment.variants import parse_server_items, parse_sets
from loadcmp.lab.stacks import catalog


def spec_of(servers: tuple[str, ...], sets: tuple[str, ...] = (), experiment: str | None = None):
    return build_spec(experiment, server_fields(servers, sets))


def test_labels_and_their_own_settings():
    spec = spec_of(("nginx", "tuned=nginx", "apache"),
                   ("tuned:nginx.worker_connections=20000", "fpm.max_children=7"))
    assert spec.servers == ("nginx", "tuned", "apache-prefork")
    assert spec.stacks == {"nginx": "nginx", "tuned": "nginx", "apache-prefork": "apache-prefork"}
    assert spec.settings_for("nginx") == {"fpm.max_children": 7}
    assert spec.settings_for("tuned") == {"fpm.max_children": 7, "nginx.worker_connections": 20000}


def test_each_label_renders_its_own_config():
    spec = spec_of(("nginx", "tuned=nginx"), ("tuned:nginx.worker_connections=20000",))
    plans = {p.server: plan_trial(spec, p) for p in plan_sweep(spec)}
    assert set(plans) == {"nginx", "tuned"}

    def conf(label: str) -> str:
        return next(text for name, text in plans[label].config_files().items() if name.endswith("nginx.conf"))

    assert "worker_connections 20000;" in conf("tuned")
    assert "worker_connections 20000;" not in conf("nginx") and "worker_connections 768;" in conf("nginx")
    assert {p.label for p in plan_sweep(spec)} == {"nginx", "tuned"}


@pytest.mark.parametrize("servers, sets, needle", [
    (("nginx",), ("prefork.MaxRequestWorkers=500",), "none of the chosen servers has [prefork] settings"),
    (("nginx",), ("x:nginx.worker_connections=5",), "no server is labelled 'x'"),
    (("tuned=nginx",), ("tuned:prefork.MaxRequestWorkers=5",), "tuned has no [prefork] settings"),
    (("nginx=apache-prefork",), (), "is a stack's name"),
    (("a b=nginx",), (), "bad server label"),
    (("all=nginx",), (), "bad server label"),
    (("t=nginx", "t=apache-event"), (), "given twice"),
    (("t=iis",), (), "unknown server 'iis'"),
    (("tuned=nginx",), ("tuned:nginx.worker_connections=lots",), "expected a whole number"),
])
def test_settings_no_server_can_take_are_refused(servers, sets, needle):
    with pytest.raises(UsageError) as e:
        spec_of(servers, sets)
    assert needle in "\n".join(e.value.messages)


def test_cli_refuses_an_unusable_set_before_anything_starts():
    for args in (["run", "--server", "nginx", "--set", "prefork.MaxRequestWorkers=500"],
                 ["up", "--server", "nginx", "--set", "prefork.MaxRequestWorkers=500"]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, res.output
        assert "[prefork]" in res.output and "Traceback" not in res.output


def test_experiment_file_variants(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('servers = ["debian", "tuned", "apache"]\n'
                 'set = { "fpm.max_children" = 9 }\n'
                 '[variants.debian]\nstack = "nginx"\n'
                 '[variants.tuned]\nstack = "nginx"\nset = { "fpm.pm" = "static", "fpm.max_children" = 50 }\n')
    spec = build_spec(str(f), {})
    assert spec.servers == ("debian", "tuned", "apache-prefork")
    assert spec.settings_for("debian") == {"fpm.max_children": 9}
    assert spec.settings_for("tuned") == {"fpm.max_children": 50, "fpm.pm": "static"}
    # flags lay over the file: a label's settings merge, a new label joins
    spec = build_spec(str(f), server_fields(("tuned", "x=apache-event"), ("tuned:fpm.max_children=60",)))
    assert spec.servers == ("tuned", "x")
    assert spec.settings_for("tuned") == {"fpm.max_children": 60, "fpm.pm": "static"}


def test_experiment_file_variants_without_a_servers_list_run_them_all(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[variants.a]\nstack = "nginx"\n[variants.b]\nstack = "apache-event"\n')
    assert build_spec(str(f), {}).servers == ("a", "b")


def test_bad_variant_tables_are_listed_with_their_lines(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('servers = ["debian", "nope"]\n[variants.debian]\nstack = "nginz"\n'
                 '[variants.tuned]\nstack = "nginx"\ncolour = 1\n')
    with pytest.raises(ConfigError) as e:
        load_experiment(f)
    errs = e.value.messages
    assert len(errs) == 3, errs
    assert errs[0].startswith("x.toml:2: [variants.debian]") and "nginz" in errs[0]
    assert errs[1].startswith("x.toml:4: [variants.tuned]") and "colour" in errs[1]
    assert "x.toml:1" in errs[2] and "'nope'" in errs[2]


def test_parsers_keep_order_and_split_per_label():
    labels, chosen = parse_server_items(["nginx,tuned=nginx", "nginx"], catalog())
    assert labels == ["nginx", "tuned"] and chosen == {"tuned": "nginx"}
    common, own = parse_sets(["fpm.max_children=3", "tuned:nginx.worker_connections=100"], catalog())
    assert common == {"fpm.max_children": 3} and own == {"tuned": {"nginx.worker_connections": 100}}


def test_planned_trials_carry_the_label():
    spec = spec_of(("nginx", "tuned=nginx"))
    assert [p.server for p in plan_sweep(spec)] == ["nginx", "tuned"]
    assert isinstance(plan_sweep(spec)[0], Planned)


def test_table1_in_the_terminal_has_a_row_per_server_when_there_are_more_than_two(tmp_path, capsys):
    import json
    import shutil
    from pathlib import Path

    from loadcmp.cli.run import print_table1

    dst = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "fixtures" / "run-2x3x2", dst)
    run = json.loads((dst / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "nginx" and t["trial"] == 2:
            t["server"] = "tuned"
    (dst / "run.json").write_text(json.dumps(run))
    print_table1(str(dst))
    lines = capsys.readouterr().out.splitlines()
    rows = [ln for ln in lines if ln.startswith("│")]
    assert len(rows) == 3 * 3  # levels x servers
    assert any("tuned" in r and "200" in r for r in rows)


def test_unquoted_dotted_keys_in_a_set_table_are_the_same_settings(tmp_path):
    from loadcmp.experiment.flags import build_spec

    f = tmp_path / "v.toml"
    f.write_text('servers = ["tuned"]\n[variants.tuned]\nstack = "nginx"\n'
                 'set = { nginx.worker_connections = 2000, "fpm.max_children" = 50 }\n')
    spec = build_spec(str(f), {})
    assert spec.settings_for("tuned") == {"nginx.worker_connections": 2000, "fpm.max_children": 50}
