"""An app's own roles without Docker (a database beside the web stack): `[roles.NAME]` and its tunables,
causes and status read and checked whole, laid over a stack, rendered with its port, `--set` on its
tunables, its status read by a command and parsed, its samples kept apart from the server's, its log
lines counted by cause."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from docker.models.containers import ExecResult

from loadcmp.errors import ConfigError
from loadcmp.experiment.spec import RunSpec, validate
from loadcmp.experiment.variants import parse_sets
from loadcmp.lab import apps, images, render, stacks
from loadcmp.observe import evidence, kernel, metrics, statuspages
from loadcmp.report.causes import note

WORDPRESS = stacks.configs_dir() / "apps" / "wordpress"

STATUS = """Aborted_connects\t3
Aborted_connects_preauth\t9
Connection_errors_max_connections\t17
Max_used_connections\t12
Questions\t4500
Slow_queries\t0
Threads_connected\t11
Threads_running\t2
"""
"""What `SHOW GLOBAL STATUS` prints in batch mode, cut short."""


def _copy(tmp_path: Path) -> Path:
    home = tmp_path / "blog"
    shutil.copytree(WORDPRESS, home)
    return home


def test_the_wordpress_database_is_a_role_of_the_app():
    app = apps.get_app("wordpress")
    (db,) = app.roles
    assert db.name == "db" and db.apart and db.image.key == "app-wordpress-db" and db.image.parent is None
    assert db.image.dockerfile == WORDPRESS / "db" / "Dockerfile.db" and "{port}" in (db.ready or "")
    assert dict(db.files) == {"my.cnf": "my.cnf.j2", "init.sql": "init.sql.j2",
                              "loadcmp-trace-mariadb.sh": "trace-mariadb.sh.j2"}  # --trace: MariaDB's own times
    assert app.tunables["db.max_connections"].default == 151  # Debian's
    assert app.tunables["db.innodb_buffer_pool_size"].default == "128M"
    (page,) = app.status
    assert page.role == "db" and "SHOW GLOBAL STATUS" in (page.command or "") and page.path == ""
    assert {c.key for c in app.causes} >= {"db.max_connections", "db.aborted_connection"}
    assert dict(app.files) == {"app/wp-config.php": "wp-config.php.j2"} and app.build


def test_over_a_stack_the_database_starts_first_and_every_web_role_is_told_its_port():
    app = apps.get_app("wordpress")
    stack = apps.on_stack(app, stacks.get_stack("nginx-apache"))
    assert [r.name for r in stack.roles][0] == "db" and stack.front.name == "web"
    assert "db.max_connections" in stack.tunables and "fpm.max_children" not in stack.tunables
    assert [c.key for c in stack.causes][-len(app.causes):] == [c.key for c in app.causes]
    ports = {r.name: 20000 + i for i, r in enumerate(stack.roles)}
    plan = render.render_plan(stack, {"db.max_connections": 9}, ports, nofile=1024, app=app)
    files = plan.config_files()
    assert "port = 20000" in files["db/my.cnf"] and "max_connections = 9" in files["db/my.cnf"]
    assert "innodb_buffer_pool_size = 128M" in files["db/my.cnf"]
    web_roles = [r.name for r in stack.roles if r.name != "db"]
    assert web_roles and all("define('DB_HOST', '127.0.0.1:20000');" in files[f"{r}/app/wp-config.php"]
                             for r in web_roles)
    assert plan.settings["db.max_connections"] == 9
    assert {i.key for i in stack.images} == {"app-wordpress-db", "app-wordpress-nginx", "app-wordpress-apache"}


def test_the_database_image_is_built_from_the_app_folder_and_tagged_by_it(tmp_path):
    home = _copy(tmp_path)
    (db,) = apps.load_app(home).roles
    tag = images.image_tag(db.image, "base1")
    assert tag.startswith("loadcmp/app-blog-db:")
    (home / "app.toml").write_text((home / "app.toml").read_text().replace("500 posts", "five hundred posts"))
    assert images.image_tag(apps.load_app(home).roles[0].image, "base1") == tag  # app.toml is not in it
    (home / "db" / "start").write_text("#!/bin/sh\nexit 1\n")
    assert images.image_tag(apps.load_app(home).roles[0].image, "base1") != tag


def test_set_takes_the_database_tunables_with_their_bounds_and_only_with_the_app():
    common, own = parse_sets(["db.max_connections=5", "web:db.innodb_buffer_pool_size=1G"], stacks.catalog())
    assert common == {"db.max_connections": 5} and own == {"web": {"db.innodb_buffer_pool_size": "1G"}}
    with pytest.raises(ConfigError, match="db.max_connections: 0 is outside 1..100000"):
        parse_sets(["db.max_connections=0"], stacks.catalog())
    with pytest.raises(ConfigError, match="not a valid value"):
        parse_sets(["db.innodb_buffer_pool_size=lots"], stacks.catalog())
    spec = validate(RunSpec(servers=("nginx",), app="wordpress", page="/", settings={"db.max_connections": 5}))
    assert spec.settings == {"db.max_connections": 5}
    with pytest.raises(ConfigError, match=r"none of the chosen servers has \[db\] settings"):
        validate(RunSpec(servers=("nginx",), page="/info.php", settings={"db.max_connections": 5}))


def test_servers_tunables_lists_the_database_tunables_by_their_app():
    import json

    from click.testing import CliRunner

    from loadcmp.cli import cli

    res = CliRunner().invoke(cli, ["servers", "--tunables", "--json"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.stdout)["tunables"]
    assert found["db.max_connections"]["apps"] == ["wordpress"] and found["db.max_connections"]["default"] == 151
    assert found["fpm.max_children"]["apps"] == []
    table = CliRunner().invoke(cli, ["servers", "--tunables"]).output
    row = next(line for line in table.splitlines() if "db.max_connections" in line)
    assert row.rstrip(" │").endswith("--app wordpress")


def test_every_problem_of_an_apps_roles_is_listed_at_once(tmp_path):
    home = _copy(tmp_path)
    text = (home / "app.toml").read_text()
    text = text.replace('dockerfile = "db/Dockerfile.db"', 'dockerfile = "db/Dockerfile.nope"')
    text = text.replace('ready = "mariadb-admin', 'readiness = "mariadb-admin')
    text = text.replace('[status.db]\nrole = "db"', '[status.db]\nrole = "database"')
    text = text.replace('setting = "db.max_connections"', 'setting = "db.max_conns"')
    text = text.replace('[tunables.db.table_open_cache]', '[tunables.fpm.table_open_cache]')
    text = text.replace('[roles.db.files]', '[roles.cache]\nimage = "nginx"\ncommand = ["x"]\nready = "true"\n'
                                            '[roles.db.files]')
    (home / "app.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        apps.load_app(home)
    joined = "\n".join(e.value.messages)
    assert "dockerfile 'db/Dockerfile.nope' is not a file inside" in joined
    assert "unknown key(s) readiness" in joined and "role 'db': ready is missing" in joined
    assert "role 'cache': its name is its table's; its image comes from its dockerfile" in joined
    assert "tunables.fpm: a stack's section" in joined
    assert "status.db: role must be one of the app's roles" in joined
    assert "its setting 'db.max_conns' is no tunable" in joined
    assert all("app.toml:" in x for x in e.value.messages), joined


def test_a_status_by_command_needs_its_role_and_no_path_and_a_template_that_breaks_is_found(tmp_path):
    home = _copy(tmp_path)
    text = (home / "app.toml").read_text().replace('[status.db]\nrole = "db"', '[status.db]\npath = "/x"')
    (home / "app.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        apps.load_app(home)
    assert any("status.db: a status read by a command gives role (whose container runs it) and command, and no path"
               in x for x in e.value.messages), e.value.messages
    home = _copy(tmp_path / "again")
    (home / "my.cnf.j2").write_text("port = {{ db.max_conections }}\n")
    with pytest.raises(ConfigError, match="my.cnf.j2"):
        apps.load_app(home)


def test_an_app_role_may_not_take_the_name_of_a_stack_role(tmp_path):
    home = _copy(tmp_path)
    text = (home / "app.toml").read_text().replace("[roles.db", "[roles.web").replace('role = "db"', 'role = "web"')
    (home / "app.toml").write_text(text.replace("ports.db", "ports.web"))
    (home / "wp-config.php.j2").write_text("<?php // {{ ports.web }}\n")
    app = apps.load_app(home)
    with pytest.raises(ConfigError, match="its role 'web' has the name of a role of the stack nginx"):
        apps.on_stack(app, stacks.get_stack("nginx"))


@dataclass
class FakeContainer:
    answer: tuple[int, bytes]
    calls: list[Any] = field(default_factory=list)

    def exec_run(self, cmd: Any) -> ExecResult:
        self.calls.append(cmd)
        return ExecResult(*self.answer)


def _dep(container: FakeContainer) -> Any:
    app = apps.get_app("wordpress")
    stack = apps.on_stack(app, stacks.get_stack("nginx"))
    ports = {r.name: 20000 + i for i, r in enumerate(stack.roles)}
    plan = render.render_plan(stack, {}, ports, nofile=1024, app=app)
    dep = SimpleNamespace(plan=plan, stack=stack, containers=[container, SimpleNamespace(id="web")],
                          status_pages={p.kind: p for p in plan.status})
    dep.container_of = lambda role: dep.containers[[r.role.name for r in plan.rendered].index(role)]
    return dep


def test_the_database_status_is_read_by_its_command_in_its_own_container():
    db = FakeContainer((0, STATUS.encode()))
    dep = _dep(db)
    got = metrics.status_page(dep, "db")
    assert got == {"db_connections": 11, "db_connections_peak": 12, "db_running": 2, "db_slow_queries": 0,
                   "db_aborted_connects": 3, "db_refused": 17, "db_queries": 4500}
    assert db.calls == [["sh", "-c", dep.status_pages["db"].command]]
    with pytest.raises(ValueError, match="exited with 1: ERROR 2002"):
        statuspages.command_status(_dep(FakeContainer((1, b"ERROR 2002 (HY000): Can't connect"))),
                                   dep.status_pages["db"])


def test_a_role_measured_apart_has_its_own_columns_not_the_servers(monkeypatch):
    dep = _dep(FakeContainer((0, STATUS.encode())))

    class Cg:
        cid = "c0ffee"

        def __init__(self, cpu: int, mem: int) -> None:
            self.cpu, self.mem = cpu, mem

        def available(self) -> bool:
            return True

        def read(self) -> metrics.CgroupSample:
            self.cpu += 10**9 // 2
            return {"cpu_ns": self.cpu, "mem_bytes": self.mem}

    monkeypatch.setattr(metrics.Sampler, "sources", lambda self: [Cg(0, 500), Cg(0, 70)])
    monkeypatch.setattr(metrics.Sampler, "tcp_states", lambda self: {})
    sampler = metrics.Sampler(dep, t0=metrics.now())
    sampler.cgroups = sampler.sources()
    sampler.apart = {0: "db_"}
    sampler.kernel = kernel.Counters(None)  # (as start() sets them)
    prev = sampler._read_cgroups()
    assert prev == {"db_cpu_ns": 10**9 // 2, "db_mem_bytes": 500, "cpu_ns": 10**9 // 2, "mem_bytes": 70}
    sampler._sample(0, prev, metrics.now() - 1.0, 0, 0)
    (row,) = sampler.rows
    assert row["mem_bytes"] == 70 and row["db_mem_bytes"] == 500
    assert 30 < row["cpu_pct"] < 60 and 30 < row["db_cpu_pct"] < 60
    assert row["db_connections"] == 11 and row["db_refused"] == 17


def test_the_database_refusing_is_a_named_cause_with_its_tunable():
    app = apps.get_app("wordpress")
    stack = apps.on_stack(app, stacks.get_stack("nginx"))
    log = ("2026-01-01T10:00:01.000000000Z 2026/01/01 10:00:01 [error] 20#20: *5 FastCGI sent in stderr: "
           '"PHP message: loadcmp wordpress: the database refused: Too many connections" while reading\n'
           "2026-01-01T10:00:01.500000000Z 2026-01-01 10:00:01 7 [Warning] Aborted connection 7 to db: 'wordpress' "
           "user: 'wordpress' host: '127.0.0.1' (Got an error reading communication packets)\n"
           "2026-01-01T10:00:01.600000000Z 2026-01-01 10:00:01 0 [Warning] Aborted connection 0 to db: "
           "'unconnected' user: 'unauthenticated' host: '127.0.0.1' (Too many connections)\n"  # the same refusal
           "2026-01-01T10:00:02.000000000Z loadcmp wordpress: the database refused: Connection refused\n")
    t = evidence.tally(log, causes=stack.causes)
    assert t.counts == {"db.max_connections": 1, "db.aborted_connection": 1, "db.unreachable": 1}
    seen = evidence.Seen(t, {"http_5xx": 40}, evidence.status_peaks(
        [{"db_refused": 0.0}, {"db_refused": 39.0}], stack.causes))
    notes = [note(c, {"http_5xx": 40})
             for c in evidence.trial_causes(stack, {**stack.effective({}), "db.max_connections": 1}, seen)]
    said = next(n for n in notes if n.startswith("MariaDB refused"))
    assert "(db.max_connections 1)" in said and "'the database refused: Too many connections' logged once" in said
    assert "MariaDB counted 39 times a connection refused at max_connections" in said
    assert said.endswith("the failures were 40 http_5xx")


def test_a_trial_sums_up_a_role_apart_with_the_limit_its_peak_is_measured_against():
    rows = [{"second": 0, "cpu_pct": 90.0, "mem_bytes": 9, "db_cpu_pct": 10.0, "db_mem_bytes": 100,
             "db_connections_peak": 3.0, "db_queries": 50.0},
            {"second": 1, "cpu_pct": 80.0, "mem_bytes": 9, "db_cpu_pct": 30.0, "db_mem_bytes": 300,
             "db_connections_peak": 7.0, "db_queries": float("nan")}]
    got = metrics.summarize(rows, ["db"], {"db_connections_peak": ["db.max_connections", 151]})
    assert got["cpu_pct"] == 85.0 and got["mem_peak_bytes"] == 9  # the server's, without the database
    assert got["apart"] == {"db": {"cpu_pct": 20.0, "cpu_pct_max": 30.0, "mem_peak_bytes": 300,
                                   "peaks": {"db_connections_peak": 7.0, "db_queries": 50.0}}}
    assert got["limits"] == {"db_connections_peak": ["db.max_connections", 151]}
    assert "apart" not in metrics.summarize(rows)
