"""The primer: a wrong page stops the run; a server that does not answer loses only its trial,
and a server kept from the level before gets time to drain first."""

from __future__ import annotations

import http.server
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from loadcmp.errors import LabError, PrimerError
from loadcmp.sweep.primer import prime


def dep(port: int, www: Path | None = None, log: str = "") -> SimpleNamespace:
    return SimpleNamespace(port=port, stack=SimpleNamespace(name="nginx"), host=SimpleNamespace(address="127.0.0.1"),
                           plan=SimpleNamespace(www=www, app=None, cafile=None, tls=None), logs=lambda lines=20: log)


PARSE_ERROR = ('[loadcmp-x-nginx-web-8080] 2026/11/25 16:20:01 [error] 31#31: *1 FastCGI sent in stderr: "PHP message: '
               'PHP Parse error:  syntax error, unexpected end of file in /srv/site/500 on line 3" while reading '
               'response header from upstream, client: 127.0.0.1, server: _, request: "GET /500 HTTP/1.1"')


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"<html>phpinfo()</html>")

    def log_message(self, *args: object) -> None:
        pass


def test_a_page_that_answers_passes(faulty):
    prime(dep(faulty.port), "/ok")  # type: ignore[arg-type]


def test_the_users_static_page_must_come_back_byte_for_byte(faulty, tmp_path):
    (tmp_path / "ok").write_bytes(b"not what the server sends")
    with pytest.raises(PrimerError, match="byte for byte"):
        prime(dep(faulty.port, tmp_path), "/ok")  # type: ignore[arg-type]
    prime(dep(faulty.port), "/ok")  # type: ignore[arg-type]  # the demo pages: no file to compare with


def test_a_wrong_page_stops_the_run(faulty):
    with pytest.raises(PrimerError, match="HTTP 404"):
        prime(dep(faulty.port), "/404")  # type: ignore[arg-type]


def test_a_broken_page_of_the_users_is_quoted_from_the_log_not_called_a_wrong_path(faulty, tmp_path):
    (tmp_path / "500").write_text("<?php echo 'unclosed;\n")
    with pytest.raises(PrimerError) as e:
        prime(dep(faulty.port, tmp_path, "some line before\n" + PARSE_ERROR), "/500")  # type: ignore[arg-type]
    assert str(e.value) == (f"nginx: GET /500 answered HTTP 500, not the page; the page {tmp_path / '500'} exists, "
                            "and PHP logged: syntax error, unexpected end of file in /srv/site/500 on line 3")
    assert "check --page" not in str(e.value) and "\n" not in str(e.value)
    # php-fpm's and Apache's own quotes round PHP's message are not part of it
    fpm = ('[25-Nov-2026 16:20:01] WARNING: [pool www] child 12 said into stderr: "NOTICE: PHP message: PHP Parse '
           'error:  syntax error, unexpected end of file in /srv/site/500 on line 3"')
    with pytest.raises(PrimerError, match=r"PHP logged: syntax error, unexpected end of file in /srv/site/500 on "
                                          r"line 3$"):
        prime(dep(faulty.port, tmp_path, fpm), "/500")  # type: ignore[arg-type]
    with pytest.raises(PrimerError, match=r"exists, but nothing in the server's log says why$"):
        prime(dep(faulty.port, tmp_path), "/500")  # type: ignore[arg-type]
    # no such page: still a wrong path; a page of the demo that fails says what PHP logged
    with pytest.raises(PrimerError, match=r"HTTP 404, not the page; check --page$"):
        prime(dep(faulty.port, tmp_path, PARSE_ERROR), "/404")  # type: ignore[arg-type]
    with pytest.raises(PrimerError, match=r"HTTP 500, not the page; the server logged: syntax error, unexpected"):
        prime(dep(faulty.port, None, PARSE_ERROR), "/500")  # type: ignore[arg-type]
    (tmp_path / "404").write_text("here, but not where the server looks")
    with pytest.raises(PrimerError, match=r"HTTP 404, not the page; the page .*/404 exists: is the server's root "
                                          r"/srv/site, where --www is\?$"):
        prime(dep(faulty.port, tmp_path), "/404")  # type: ignore[arg-type]


@pytest.mark.docker
def test_a_php_parse_error_in_a_users_page_is_quoted_in_one_line_and_nothing_is_left(
        tmp_path: Path, images: dict[str, str], docker_client: object) -> None:
    from click.testing import CliRunner

    from loadcmp.cli import cli
    from loadcmp.lab import cleanup

    site = tmp_path / "site"
    site.mkdir()
    (site / "bad.php").write_text('<?php\necho "unclosed;\n')
    res = CliRunner().invoke(cli, ["run", "--www", str(site), "--page", "/bad.php", "--server", "nginx", "-c", "2",
                                   "-t", "1s", "--warmup", "0", "--out", str(tmp_path / "results")])
    assert res.exit_code == 1, res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("error:")]
    assert line == (f"error: nginx: GET /bad.php answered HTTP 500, not the page; the page {site / 'bad.php'} exists, "
                    "and PHP logged: syntax error, unexpected end of file, expecting variable or \"${\" or \"{$\" in "
                    "/srv/site/bad.php on line 3"), line
    assert cleanup.labelled(docker_client) == []


def test_no_answer_is_a_lab_problem_at_once_without_patience(refused_port):
    t = time.monotonic()
    with pytest.raises(LabError, match="got no answer before the load"):
        prime(dep(refused_port), "/info.php")  # type: ignore[arg-type]
    assert time.monotonic() - t < 1.0


def test_a_kept_server_gets_time_to_answer_again(refused_port):
    """The port answers only after 1.5 s: with patience the primer waits for it."""
    server: list[http.server.HTTPServer] = []

    def later() -> None:
        time.sleep(1.5)
        s = http.server.HTTPServer(("127.0.0.1", refused_port), Page)
        server.append(s)
        s.serve_forever()

    threading.Thread(target=later, daemon=True).start()
    try:
        t = time.monotonic()
        prime(dep(refused_port), "/info.php", patience=10.0)  # type: ignore[arg-type]
        assert 1.0 < time.monotonic() - t < 8.0
    finally:
        for s in server:
            s.shutdown()


def test_patience_runs_out(refused_port):
    t = time.monotonic()
    with pytest.raises(LabError, match=r"after [12] s of tries"):
        prime(dep(refused_port), "/", patience=1.5)  # type: ignore[arg-type]
    assert time.monotonic() - t < 5.0
