"""Docker integration: every stack starts, serves and is what it claims to be."""

from __future__ import annotations

import json
import re
import socket

import pytest
from click.testing import CliRunner

from loadcmp.lab import images as img
from loadcmp.lab import cleanup, containers as lab, planning
from loadcmp.lab.fetch import http_get
from loadcmp.lab import stacks as st
from loadcmp.cli import cli
from loadcmp.errors import ServerStartError
from loadcmp.observe.statuspages import parse_page

pytestmark = pytest.mark.docker

WWW = st.configs_dir() / "www"


def get(url: str, path: str) -> tuple[int, bytes]:
    port = int(url.rsplit(":", 1)[1].strip("/"))
    return http_get(port, path, timeout=10)


@pytest.mark.parametrize("name", st.catalog().names())
def test_stack_serves_what_it_claims(name, images, docker_client):
    stack = st.get_stack(name)
    res = CliRunner().invoke(cli, ["up", "--server", name, "--json", "--server-cpus", "1", "--server-memory", "300m"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc) >= {"server", "url", "containers", "status_url"}
    assert doc["url"].startswith("http://127.0.0.1:")
    try:
        code, body = get(doc["url"], "/index.html")
        assert code == 200 and body == (WWW / "index.html").read_bytes()

        code, body = get(doc["url"], "/info.php")
        assert code == 200
        api = re.search(rb"Server API </td><td class=\"v\">([^<]+?) ?</td>", body)
        assert api and api.group(1).decode().strip() == stack.php_api

        code, body = get(doc["url"], "/image-50k.jpg")
        assert code == 200 and body == (WWW / "image-50k.jpg").read_bytes() and len(body) == 51200
        code, body = get(doc["url"], "/image-71882.png")
        assert code == 200 and len(body) == 71882

        code, body = get(doc["url"], "/sleep.php?ms=20")
        assert code == 200 and body.startswith(b"loadcmp-sleep-ok 20 ms")
        code, body = get(doc["url"], "/cpu.php")
        assert code == 200 and body.startswith(b"loadcmp-cpu-ok")
        if stack.front.image.key != "apache":  # answered by the front itself, also in front of Apache
            assert get(doc["url"], "/plaintext")[0] == 200
            assert get(doc["url"], "/plaintext")[1].strip() == b"Hello, World!"

        if stack.workers:
            code, body = get(doc["url"], "/server-status?auto")
            assert code == 200
            assert f"ServerMPM: {stack.workers}" in body.decode(), body[:300]
            containers = [docker_client.containers.get(n) for n in doc["containers"]]
            apache = next(c for c in containers if c.labels["loadcmp.role"] in ("web", "backend")
                          and "apache" in c.image.tags[0])
            out = apache.exec_run(["apache2", "-V", "-f", "/etc/loadcmp/apache2.conf"]).output.decode()
            assert re.search(rf"Server MPM:\s+{stack.workers}", out), out
        assert doc["status_urls"] and len(doc["status_urls"]) == len(stack.status)
        for page in stack.status:
            code, body = get(doc["url"], page.path)
            assert code == 200, page.path
            parsed = parse_page(page, body.decode())
            assert parsed and set(parsed) <= {c for c, _ in page.fields}, (page.kind, body[:300])

        for cname in doc["containers"]:
            attrs = docker_client.api.inspect_container(cname)
            assert attrs["HostConfig"]["Memory"] == 300 * 2**20
            assert attrs["HostConfig"]["CpusetCpus"] == "1"
            assert attrs["HostConfig"]["NetworkMode"] == "host"
            assert attrs["Config"]["Labels"]["loadcmp"] == "1"
    finally:
        res = CliRunner().invoke(cli, ["down"])
        assert res.exit_code == 0
    assert cleanup.labelled(docker_client) == []


def test_port_in_use_is_a_usage_error(images):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--port", str(port)])
    assert res.exit_code == 2 and f"port {port} is already in use" in res.output


def test_container_exiting_at_start_reports_its_log(images, docker_client):
    from dataclasses import replace

    nginx = st.get_stack("nginx")
    broken = replace(nginx, name="broken", roles=(replace(nginx.front, command=("no-such-mode",)),))
    with pytest.raises(ServerStartError) as e:
        lab.up(planning.plan_deployment(broken), client=docker_client, images=images)
    assert "exited while starting" in str(e.value) and "unknown role" in str(e.value)
    assert cleanup.labelled(docker_client) == []


def test_images_are_tagged_by_their_inputs(docker_client, images):
    base = docker_client.images.get(img.ensure_base(docker_client)).id
    apache = st.get_stack("apache-prefork").front.image
    assert images["apache"] == img.image_tag(apache, base)
    assert images["apache"] != img.image_tag(apache, base + "x")
    again = img.build_images(docker_client, [i for s in st.catalog() for i in s.images])
    assert again == images


def test_a_server_that_died_is_named_with_its_signal_and_its_last_whole_log_line(images, docker_client):
    """What a trial says when a server is gone: the exit code, the signal it means, and the last
    log line from its start (not a tail cut mid-line)."""
    dep = lab.up(planning.plan_deployment(st.get_stack("nginx")), client=docker_client, images=images)
    try:
        web = dep.containers[0]
        web.exec_run(["sh", "-c", "echo 'a line before the end, long enough to be cut by a tail of 300 chars' >&2; "
                                  "echo 'the last words of the server' > /proc/1/fd/2"])
        web.kill(signal="SIGKILL")
        web.wait(timeout=10)
        notes = dep.exit_notes(dep.state())
        assert len(notes) == 1, notes
        assert notes[0].startswith(f"{web.name} exited with code 137 (SIGKILL)"), notes
        assert notes[0].endswith("its last log line: the last words of the server"), notes
    finally:
        cleanup.down(docker_client, dep.run_id)
    assert lab.last_line("x\n" + "word " * 100) == ("word " * 100)[:239].rsplit(" ", 1)[0] + " …"
    assert lab.last_line("(no log output)") == ""
