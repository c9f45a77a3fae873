"""--config LABEL:ROLE=FILE: a role runs the user's own file; loadcmp finds its port and status pages or is told,
and names what it cannot measure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.experiment.spec import RunSpec, load_experiment, validate
from loadcmp.lab import ownconfig, render
from loadcmp.lab import stacks as st
from loadcmp.observe.statuspages import unanswered, unmeasured

NGINX_CONF = """\
user www-data;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    error_log stderr;
    server {
        listen 443 ssl;
        listen 127.0.0.1:{port} default_server;
        root /srv/www;
        index index.html index.php;
        location = /basic_status { stub_status; }
        location ~ \\.php$ {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_pass unix:/run/php/loadcmp-fpm.sock;
        }
    }
}
"""


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_a_config_flag_is_read_with_its_port_and_status_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    own = ownconfig.parse_item("prod:web=conf/nginx.conf,port=8080,status.nginx=/st,status.fpm=none")
    assert own == ownconfig.OwnConfig("prod", "web", str(tmp_path / "conf" / "nginx.conf"), 8080,
                                      {"nginx": "/st", "fpm": None})
    assert own.doc()["status"] == {"nginx": "/st", "fpm": "none"} and ownconfig.from_doc(own.doc()) == own


@pytest.mark.parametrize("item, says", [
    ("nginx.conf", "expected LABEL:ROLE=FILE"),
    ("prod=nginx.conf", "expected LABEL:ROLE=FILE"),
    ("prod:web=", "expected LABEL:ROLE=FILE"),
    ("prod:web=a.conf,port=http", "is not a port"),
    ("prod:web=a.conf,port=70000", "is not a port"),
    ("prod:web=a.conf,status.nginx=status", "starting with /"),
    ("prod:web=a.conf,colour=blue", "unknown option 'colour'"),
    ("prod:web=a.conf,port", "expected port=N"),
])
def test_a_bad_config_flag_is_one_line(item: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        ownconfig.parse_item(item)


@pytest.mark.parametrize("stack, text, port", [
    ("nginx", NGINX_CONF.replace("{port}", "8181"), 8181),
    ("nginx", "server { listen 8282; }", 8282),
    ("apache-event", "ServerRoot /etc/apache2\nListen 443 https\nListen 127.0.0.1:8383\n", 8383),
    ("caddy", "{\n\tadmin off\n}\n\nlocalhost:8484 {\n\tphp_fastcgi unix//run/php/x.sock\n}\n", 8484),
    ("caddy", "{\n\thttp_port 8585\n}\nexample.org {\n}\n", 8585),
    ("lighttpd", 'server.document-root = "/srv/www"\nserver.port = 8686\n', 8686),
])
def test_the_port_is_read_from_the_users_file_by_the_stacks_patterns(stack: str, text: str, port: int) -> None:
    assert ownconfig.find_port(st.get_stack(stack), text) == port


def test_status_pages_are_found_in_the_users_files_given_or_left_out(tmp_path: Path) -> None:
    nginx = st.get_stack("nginx")
    conf = write(tmp_path, "nginx.conf", NGINX_CONF.replace("{port}", "8181"))
    fpm = write(tmp_path, "php-fpm.conf", "[www]\npm.status_path = /php-status\n")
    pages, skipped = ownconfig.status_pages(nginx, [ownconfig.OwnConfig("p", "web", str(conf)),
                                                    ownconfig.OwnConfig("p", "web", str(fpm))])
    assert {p.kind: p.path for p in pages} == {"nginx": "/basic_status", "fpm": "/php-status?json"}
    assert skipped == {}
    pages, skipped = ownconfig.status_pages(nginx, [ownconfig.OwnConfig("p", "web", str(conf), None,
                                                                        {"nginx": "/x", "fpm": None})])
    assert [(p.kind, p.path) for p in pages] == [("nginx", "/x")] and list(skipped) == ["fpm"]


def test_a_plan_runs_the_users_file_and_leaves_its_settings_out(tmp_path: Path) -> None:
    nginx = st.get_stack("nginx")
    conf = write(tmp_path, "prod.conf", NGINX_CONF.replace("{port}", "8181"))
    own = [ownconfig.OwnConfig("prod", "web", str(conf))]
    plan = render.render_plan(nginx, {"fpm.max_children": 9}, {"web": 8181}, own=own)
    files = plan.config_files()
    assert files["web/nginx.conf"] == conf.read_text()  # not a name of ours: the role's main config
    assert "pm.max_children = 9" in files["web/php-fpm.conf"]  # the rest is still rendered
    assert plan.own == {"web/nginx.conf": str(conf)}
    assert not any(k.startswith("nginx.") for k in plan.settings) and plan.settings["fpm.max_children"] == 9
    assert render.owned_sections(st.get_stack("nginx-apache"), [ownconfig.OwnConfig("p", "web", str(conf))]) == {
        "nginx", "proxy", "tls", "h2"}  # h2: its HTTP/2 lines are in nginx.conf
    fpm = write(tmp_path, "php-fpm.conf", "[www]\n")
    same_name = ownconfig.OwnConfig("prod", "web", str(fpm))
    assert ownconfig.target(nginx.front, same_name) == "php-fpm.conf"
    assert ownconfig.front_port(nginx, [same_name]) is None  # not the main config: loadcmp still picks the port


def spec_with(tmp_path: Path, configs: list[str], servers: tuple[str, ...] = ("prod",),
              stacks: dict[str, str] | None = None, sets: dict[str, dict[str, object]] | None = None) -> RunSpec:
    return RunSpec(servers=servers, stacks={"prod": "nginx"} if stacks is None else stacks,
                   configs=tuple(ownconfig.parse_item(c).doc() for c in configs), variant_settings=sets or {})


def test_every_config_mistake_is_listed_before_anything_starts(tmp_path: Path) -> None:
    good = write(tmp_path, "nginx.conf", NGINX_CONF.replace("{port}", "8181"))
    portless = write(tmp_path, "portless.conf", "events {}\nhttp { server { root /srv/www; } }\n")
    binary = tmp_path / "binary.conf"
    binary.write_bytes(b"\xff\xfe\x00")
    spec = spec_with(tmp_path, [f"other:web={good}", f"prod:db={good}", f"prod:web={tmp_path}/none.conf",
                                f"prod:web={binary}", f"prod:web={good},status.apache=/s"])
    with pytest.raises(Exception) as e:
        validate(spec)
    errors = e.value.messages
    assert len(errors) == 5, errors
    assert "'other' is not a chosen server" in errors[0]
    assert "has no role 'db' (its roles: web)" in errors[1]
    assert "none.conf: no such file" in errors[2] and "is not UTF-8 text" in errors[3]
    assert "has no status page 'apache'" in errors[4]
    with pytest.raises(Exception, match="no port found in .*portless.conf.*port=N"):
        validate(spec_with(tmp_path, [f"prod:web={portless}"]))
    validate(spec_with(tmp_path, [f"prod:web={portless},port=8181"]))
    with pytest.raises(Exception, match="prod runs your own file for its nginx settings"):
        validate(spec_with(tmp_path, [f"prod:web={good}"], sets={"prod": {"nginx.worker_connections": 2000}}))
    validate(spec_with(tmp_path, [f"prod:web={good}"], sets={"prod": {"fpm.max_children": 20}}))


def test_the_cli_says_a_config_mistake_in_one_line_with_exit_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--config", f"nginx:web={tmp_path}/none.conf",
                                   "-c", "1", "-t", "1s", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "none.conf: no such file" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "r").exists()
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--config", "nginx.conf", "-c", "1"])
    assert res.exit_code == 2 and "expected LABEL:ROLE=FILE" in res.output


def test_an_experiment_files_configs_are_relative_to_it(tmp_path: Path) -> None:
    write(tmp_path, "prod.conf", NGINX_CONF.replace("{port}", "8181"))
    exp = write(tmp_path, "exp.toml", 'servers = ["prod"]\n[variants.prod]\nstack = "nginx"\n'
                '[[configs]]\nserver = "prod"\nrole = "web"\nfile = "prod.conf"\nstatus = { fpm = "none" }\n')
    fields, _ = load_experiment(exp)
    assert fields["configs"] == ({"server": "prod", "role": "web", "file": str(tmp_path / "prod.conf"),
                                  "status": {"fpm": "none"}},)
    spec = validate(RunSpec(**fields))
    assert spec.own_for("prod")[0].status == {"fpm": None}
    bad = write(tmp_path, "bad.toml", 'servers = ["nginx"]\n[[configs]]\nserver = "nginx"\nrole = "web"\n')
    with pytest.raises(Exception, match="file is missing"):
        load_experiment(bad)


def test_pages_that_do_not_answer_are_named_with_what_they_would_have_measured() -> None:
    nginx = st.get_stack("nginx")
    answers = {"/nginx_status": (200, b"Active connections: 3 \nReading: 0 Writing: 1 Waiting: 2 \n"),
               "/fpm-status?json": (404, b"not found")}
    missing = unanswered(nginx.status, lambda path: answers[path])
    assert missing == {"fpm": "/fpm-status?json answered HTTP 404"}
    assert unanswered(nginx.status[:1], lambda path: (200, b"<html>welcome</html>")) == {
        "nginx": "/nginx_status answered without its figures"}
    said = unmeasured(nginx, missing)
    assert said[0].startswith("the fpm status page (/fpm-status?json answered HTTP 404), so its figures (fpm_active")
    assert "busy workers (none of the pages that count them answers)" in said
    assert any("fpm.max_children" in s for s in said)


# --- with Docker: the user's nginx.conf runs, on the port it names, and the report says what is not measured -----


@pytest.mark.docker
def test_a_users_nginx_conf_runs_on_its_own_port_and_the_missing_page_is_named(
        tmp_path: Path, images: dict[str, str], docker_client: object) -> None:
    from loadcmp.lab import cleanup
    from loadcmp.lab.planning import free_port
    from loadcmp.report.setup import setup_rows, warnings
    from loadcmp.store.reader import load_results

    port = free_port()
    conf = write(tmp_path, "prod-nginx.conf", NGINX_CONF.replace("{port}", str(port)).replace("listen 443 ssl;", ""))
    res = CliRunner().invoke(cli, ["run", "--server", "prod=nginx", "--config", f"prod:web={conf}",
                                   "-c", "4", "-t", "1s", "--warmup", "0", "--out", str(tmp_path / "results"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    (result,) = json.loads(res.stdout)["results"]
    assert result["ok"] > 0 and result["failed"] == 0
    folder = next((tmp_path / "results").glob("*/"))
    run = json.loads((folder / "run.json").read_text())
    server = run["servers"]["prod"]
    assert server["own_configs"] == {"web/nginx.conf": str(conf)}
    assert server["configs"]["web/nginx.conf"] == conf.read_text()
    assert run["trials"][0]["result"]["url"] == f"http://127.0.0.1:{port}/info.php"
    assert any(m.startswith("the fpm status page (/fpm-status?json answered HTTP 404)") for m in server["unmeasured"])
    import pandas as pd

    samples = pd.read_parquet(folder / "server.parquet")
    assert samples["nginx_active"].notna().any() and "fpm_active" not in samples.columns
    data = load_results(folder)
    assert any("prod ran your own config; not measured: the fpm status page" in w for w in warnings(data))
    assert ("prod", f"runs your own web/nginx.conf ({conf}); its settings there are yours, not loadcmp's") in \
        setup_rows(data)
    assert cleanup.labelled(docker_client) == []
