"""A user's own config that logs to a file of its own loses no cause: where each server's syntax sends its error
log, the lines of the window by their own timestamps, and (with Docker) the resets of a small nginx named from
its own log."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab.ownconfig import ErrorLog, error_logs
from loadcmp.lab.stacks import get_stack
from loadcmp.observe.ownlogs import in_window, line_time


STACK = {"nginx.conf": "nginx", "apache2.conf": "apache-event", "lighttpd.conf": "lighttpd", "Caddyfile": "caddy",
         "php-fpm.conf": "nginx", "site.conf": "nginx"}


def logs(name: str, text: str, role: str = "web") -> list[ErrorLog]:
    return error_logs(get_stack(STACK[name]), {f"{role}/{name}": f"/home/me/{name}"}, {f"{role}/{name}": text})


def where(found: list[ErrorLog]) -> list[tuple[str, str | None, bool]]:
    return [(g.path, g.why, g.optional) for g in found]


def test_nginx_error_log_is_read_from_its_directive_and_its_default_beside() -> None:
    text = ("user www-data;\nerror_log /var/log/nginx/small.log warn;\n# error_log /commented.log;\n"
            "http {\n    error_log stderr;\n    server {\n        error_log logs/site.log;\n    }\n}\n")
    assert where(logs("nginx.conf", text)) == [
        ("/var/log/nginx/small.log", None, False), ("/usr/share/nginx/logs/site.log", None, False),
        ("/var/log/nginx/error.log", None, True)]  # the core's errors go there unless the main context says not
    (g,) = [g for g in logs("nginx.conf", "error_log syslog:server=10.0.0.1;\n") if not g.optional]
    assert g.why == "sent to syslog" and g.source == "named in nginx.conf" and g.program == "nginx"
    assert "nginx's error log syslog:server=10.0.0.1 (named in nginx.conf): sent to syslog" in g.words()
    assert where(logs("nginx.conf", "events {}\n")) == [("/var/log/nginx/error.log", None, False)]
    assert where(logs("nginx.conf", "error_log memory:32m;\n"))[0][1] == "kept in memory"


def test_apache_lighttpd_caddy_and_php_fpm_each_by_their_own_syntax() -> None:
    apache = 'ServerRoot "/etc/apache2"\nErrorLog ${APACHE_LOG_DIR}/error.log\n<VirtualHost *:80>\n' \
             '  errorlog "|/usr/bin/rotatelogs /var/log/x 86400"\n</VirtualHost>\n'
    assert where(logs("apache2.conf", apache)) == [
        ("${APACHE_LOG_DIR}/error.log", None, False), ("|/usr/bin/rotatelogs /var/log/x 86400", "piped to a program",
                                                       False)]
    assert where(logs("apache2.conf", "ErrorLog /proc/self/fd/2\n")) == []  # the container's log: read anyway
    assert where(logs("apache2.conf", "Listen 80\n")) == [("/etc/apache2/logs/error_log", None, False)]
    assert where(logs("lighttpd.conf", 'server.port = 80\nserver.errorlog = "/var/log/lighttpd/error.log"\n')) == [
        ("/var/log/lighttpd/error.log", None, False)]
    assert where(logs("lighttpd.conf", 'server.errorlog = "error.log"\n')) == [
        ("error.log", "a relative path (write it absolute)", False)]
    assert where(logs("lighttpd.conf", "server.port = 80\n")) == []  # lighttpd -D logs to its stderr
    caddy = "{\n\tlog {\n\t\toutput file /var/log/caddy/errors.log {\n\t\t\troll_size 10mb\n\t\t}\n" \
            "\t\tlevel WARN\n\t}\n}\n:8080 {\n\tlog access {\n\t\toutput stderr\n\t}\n}\n"
    assert where(logs("Caddyfile", caddy)) == [("/var/log/caddy/errors.log", None, False)]
    assert where(logs("Caddyfile", ":8080 {\n\tfile_server\n}\n")) == []
    assert where(logs("php-fpm.conf", "[global]\nerror_log = /var/log/fpm.log\n[www]\nlisten = /x.sock\n")) == [
        ("/var/log/fpm.log", None, False)]
    # a file of another name (the user's stack) has no syntax loadcmp knows: nothing is guessed
    assert logs("site.conf", "error_log /var/log/x.log;\n") == []


def test_a_log_line_is_read_in_the_window_by_its_own_timestamp() -> None:
    def epoch(s: str) -> float:
        return datetime.fromisoformat(s).timestamp()

    assert line_time("2026/11/25 16:20:01 [alert] 30#30: 50 worker_connections are not enough") == \
        epoch("2026-11-25T16:20:01+00:00")
    assert line_time("[Wed Nov 25 16:20:01.123456 2026] [mpm_prefork:error] [pid 1] AH00161: server reached") == \
        epoch("2026-11-25T16:20:01+00:00")
    assert line_time("2026-11-25 16:20:01: (server.c.1234) [note] sockets disabled") == \
        epoch("2026-11-25T16:20:01+00:00")
    assert line_time("[25-Nov-2026 16:20:01] WARNING: [pool www] server reached pm.max_children") == \
        epoch("2026-11-25T16:20:01+00:00")
    assert line_time('{"level":"error","ts":1764087601.5,"msg":"dial"}') == 1764087601.5
    assert line_time("a line with no time") is None
    lines = ["2026/11/25 16:20:00 [alert] before", "2026/11/25 16:20:01 [alert] in its first second",
             "2026/11/25 16:20:03 [alert] in", "a continuation", "2026/11/25 16:20:05 [alert] after"]
    since, until = epoch("2026-11-25T16:20:01.600+00:00"), epoch("2026-11-25T16:20:04+00:00")
    assert list(in_window(lines, since, until)) == lines[1:4]


# --- with Docker: the small nginx, whose error_log goes to a file of its own ----------------------

SMALL_NGINX = """\
user www-data;
worker_processes 1;
error_log /var/log/nginx/small-error.log warn;
events { worker_connections 16; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    server {
        listen 127.0.0.1:{port};
        root /srv/site;
        location ~ \\.php$ {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_pass unix:/run/php/loadcmp-fpm.sock;
        }
    }
}
"""


@pytest.mark.docker
def test_a_small_nginx_logging_to_its_own_file_names_the_cause_of_its_resets(
        tmp_path: Path, images: dict[str, str], docker_client: object) -> None:
    from loadcmp.lab import cleanup
    from loadcmp.lab.planning import free_port
    from loadcmp.report.causes import note

    site = tmp_path / "site"
    site.mkdir()
    (site / "sleep.php").write_text("<?php usleep(50000); echo 'slept';\n")
    conf = tmp_path / "nginx-small.conf"
    conf.write_text(SMALL_NGINX.replace("{port}", str(free_port())))
    # 100 clients on a page that holds each 50 ms, through the php-fpm socket docs/stacks.md gives
    res = CliRunner().invoke(cli, ["run", "--www", str(site), "--page", "/sleep.php", "--server", "small=nginx",
                                   "--config", f"small:web={conf}", "-c", "100", "-t", "2s", "--warmup", "0",
                                   "--out", str(tmp_path / "results"), "--json"])
    assert res.exit_code == 0, res.output
    folder = json.loads(res.stdout)["results_dir"]
    run = json.loads((Path(folder) / "run.json").read_text())
    (trial,) = run["trials"]
    assert trial["result"]["ok"] > 0 and trial["result"]["failures"].get("reset", 0) > 0, trial["result"]
    assert trial["log_evidence"].get("nginx.worker_connections", 0) > 0, trial.get("log_evidence")
    rec = next(c for c in trial["causes"] if c["cause"] == "nginx.worker_connections")
    said = note(rec, trial["result"]["failures"])
    assert said.startswith("nginx had no free connection and closed new ones unanswered — '16 worker_connections "
                           "are not enough' logged"), said
    assert "reset" in said and "(nginx.worker_connections" not in said  # the setting is the user's, not loadcmp's
    assert not any("error log" in m for m in run["servers"]["small"].get("unmeasured", []))
    assert cleanup.labelled(docker_client) == []


@pytest.mark.docker
def test_a_log_sent_where_loadcmp_cannot_read_it_is_named_not_measured(
        tmp_path: Path, images: dict[str, str], docker_client: object) -> None:
    from loadcmp.lab import cleanup
    from loadcmp.lab.planning import free_port

    conf = tmp_path / "nginx-syslog.conf"
    conf.write_text(SMALL_NGINX.replace("{port}", str(free_port()))
                    .replace("error_log /var/log/nginx/small-error.log warn;",
                             "error_log syslog:server=127.0.0.1:9 warn;")
                    .replace("root /srv/site;", "root /srv/www;"))
    res = CliRunner().invoke(cli, ["run", "--page", "/index.html", "--server", "small=nginx", "--config",
                                   f"small:web={conf}", "-c", "2", "-t", "1s", "--warmup", "0",
                                   "--out", str(tmp_path / "results"), "--json"])
    assert res.exit_code == 0, res.output
    folder = json.loads(res.stdout)["results_dir"]
    unmeasured = json.loads((Path(folder) / "run.json").read_text())["servers"]["small"]["unmeasured"]
    assert any(m.startswith("nginx's error log syslog:server=127.0.0.1:9 (named in nginx-syslog.conf): sent to "
                            "syslog") for m in unmeasured), unmeasured
    assert cleanup.labelled(docker_client) == []


def test_a_stacks_error_log_table_is_data_checked_with_its_line(tmp_path: Path) -> None:
    """A user's stack names how its program's config names the error log; its mistakes are listed with their line."""
    import shutil

    from loadcmp.errors import ConfigError
    from loadcmp.lab import stacks as st

    mine = tmp_path / "my-lighttpd"
    shutil.copytree(st.configs_dir() / "stacks" / "lighttpd", mine)
    text = (mine / "stack.toml").read_text()
    text = text.replace("find = '^[ \\t]*server\\.errorlog", "fnd = '^[ \\t]*server\\.errorlog")
    (mine / "stack.toml").write_text(text.replace('files = ["lighttpd.conf"]', 'files = "lighttpd.conf"'))
    with pytest.raises(ConfigError) as e:
        st.catalog([str(tmp_path)])
    line = (mine / "stack.toml").read_text().splitlines().index("[error_log]") + 1
    assert sorted(e.value.messages) == sorted(f"{(mine / 'stack.toml').resolve()}:{line}: error_log: {m}" for m in (
        "unknown key(s) fnd (known: always, default, files, find, program, root)",
        "it needs program, files and find", "files must be a list of file names")), e.value.messages
    assert [g.program for g in get_stack("lighttpd").error_logs] == ["php-fpm", "lighttpd"]
    assert [g.program for g in get_stack("nginx-apache").error_logs] == ["nginx", "Apache"]
