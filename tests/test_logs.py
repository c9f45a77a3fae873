"""Access logs read into entries: each format, its detection, bad lines, and `loadcmp mix FILE`."""

from __future__ import annotations

import calendar
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.traffic.logs import MAX_BAD_SHARE, read_log

FIXTURE = Path(__file__).parent / "fixtures" / "accesslogs" / "nginx-access.log"

NGINX = ('127.0.0.1 - - [26/Nov/2026:01:24:10 +0000] "GET /info.php HTTP/1.1" 200 24191 "-" "-"')
"""A line of tests/fixtures/accesslogs/nginx-access.log, which the nginx stack wrote during a run."""
APACHE = ('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
          '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"')
"""Apache's own example of its combined format (its mod_log_config manual)."""
COMMON = '192.168.0.7 - - [10/Oct/2000:13:55:36 -0700] "HEAD /a%20b?x=1 HTTP/1.1" 304 -'
VHOST = 'www.example.org:443 10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"'


def _write(tmp_path: Path, lines: list[str], name: str = "access.log") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_real_nginx_combined_line(tmp_path):
    log = read_log(_write(tmp_path, [NGINX]))
    (e,) = log.entries
    assert log.format == "combined" and not log.subsecond
    assert (e.method, e.path, e.status, e.bytes, e.host, e.line) == ("GET", "/info.php", 200, 24191, None, 1)
    assert e.time == calendar.timegm((2026, 11, 26, 1, 24, 10))


def test_an_apache_combined_line_with_its_time_zone(tmp_path):
    (e,) = read_log(_write(tmp_path, [APACHE])).entries
    assert (e.method, e.path, e.status, e.bytes) == ("GET", "/apache_pb.gif", 200, 2326)
    assert e.time == calendar.timegm((2000, 10, 10, 20, 55, 36))  # -0700: seven hours later in UTC


def test_common_is_told_from_combined_and_a_dash_is_no_body(tmp_path):
    log = read_log(_write(tmp_path, [COMMON, COMMON]))
    assert log.format == "common"
    assert [(e.method, e.path, e.status, e.bytes) for e in log.entries] == [("HEAD", "/a%20b?x=1", 304, 0)] * 2


def test_a_combined_log_read_as_common_still_reads_and_common_as_combined_does_not(tmp_path):
    assert read_log(_write(tmp_path, [NGINX]), "common").entries[0].path == "/info.php"
    with pytest.raises(UsageError, match=r"access.log:1: not a combined log line: no \"referer\""):
        read_log(_write(tmp_path, [COMMON]), "combined")


def test_the_vhost_and_an_absolute_target_name_the_host(tmp_path):
    absolute = '10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET http://other.example/x?y=1 HTTP/1.1" 200 5 "-" "-"'
    a, b = read_log(_write(tmp_path, [VHOST, absolute])).entries
    assert (a.host, a.path) == ("www.example.org", "/")
    assert (b.host, b.path) == ("other.example", "/x?y=1")


def test_escaped_quotes_and_a_request_that_is_not_one(tmp_path):
    quoted = '1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET /q?a=\\"b\\" HTTP/1.1" 200 1 "-" "x \\"y\\""'
    scanner = '1.2.3.4 - - [10/Oct/2000:13:55:37 +0000] "\\x16\\x03\\x01" 400 157 "-" "-"'
    a, b = read_log(_write(tmp_path, [quoted, scanner])).entries
    assert a.path == '/q?a="b"'
    assert (b.method, b.status) == ("", 400)  # kept as a line of the log; the replay leaves it out


def test_json_lines_as_nginx_escape_json_writes_them(tmp_path):
    lines = [json.dumps({"msec": "1795655050.125", "request_time": "0.025", "request": "GET /x?p=1 HTTP/1.1",
                         "status": "404", "body_bytes_sent": "153", "host": "example.org"}),
             json.dumps({"time_iso8601": "2026-11-26T01:24:11+00:00", "method": "post", "uri": "/wp-login.php",
                         "args": "a=1", "status": 302, "bytes_sent": 0})]
    log = read_log(_write(tmp_path, lines))
    a, b = log.entries
    assert log.format == "json" and log.subsecond
    assert a.time == pytest.approx(1795655050.100) and (a.method, a.path, a.status, a.bytes, a.host) == (
        "GET", "/x?p=1", 404, 153, "example.org")
    assert b.time == calendar.timegm((2026, 11, 26, 1, 24, 11)) and (b.method, b.path) == ("POST", "/wp-login.php?a=1")


def test_caddys_json_request_object(tmp_path):
    line = json.dumps({"ts": 1795655050.5, "request": {"method": "GET", "uri": "/?s=hello", "host": "127.0.0.1"},
                       "status": 200, "size": 12})
    (e,) = read_log(_write(tmp_path, [line])).entries
    assert (e.time, e.method, e.path, e.host, e.bytes) == (1795655050.5, "GET", "/?s=hello", "127.0.0.1", 12)


@pytest.mark.parametrize("lines, message", [
    ([], r"access.log: the access log is empty"),
    (["", "  "], r"access.log: the access log is empty"),
    (["hello world"], r"access.log:1: not an access log line loadcmp reads .*: hello world"),
    (['{"msec": 1, "status": 200}'], r"access.log:1: no request"),
    (['{"request": "GET / HTTP/1.1", "status": 200}'], r"access.log:1: no time"),
    ([NGINX.replace("Nov", "Foo")], r"access.log:1: not an access log line"),
])
def test_a_log_that_cannot_be_replayed_is_one_line(tmp_path, lines, message):
    p = tmp_path / "access.log"
    p.write_text("\n".join(lines))
    with pytest.raises(UsageError, match=message) as e:
        read_log(p)
    assert e.value.exit_code == 2 and len(e.value.messages) == 1


def test_a_few_bad_lines_are_counted_and_many_refuse_the_log(tmp_path):
    good = [NGINX] * 200
    few = read_log(_write(tmp_path, [*good[:100], NGINX[:40], *good[100:]]))
    assert len(few.entries) == 200 and few.lines == 201
    assert few.bad == (f"{tmp_path / 'access.log'}:101: not a combined log line: {NGINX[:40]}",)
    many = good[:20] + [NGINX[:40]] * 5 + good[:20]
    with pytest.raises(UsageError, match=rf"access.log:21: not a combined log line: .* \(5 of 45 lines are not "
                                         rf"combined log lines; at most {MAX_BAD_SHARE:.0%} may be\)"):
        read_log(_write(tmp_path, many))


def test_a_missing_log_and_a_bad_format_name(tmp_path):
    with pytest.raises(UsageError, match="cannot read the access log .*nope.log"):
        read_log(tmp_path / "nope.log")
    with pytest.raises(UsageError, match="bad --log-format 'w3c'"):
        read_log(_write(tmp_path, [NGINX]), "w3c")  # type: ignore[arg-type]


def test_the_stack_written_fixture_reads_whole():
    log = read_log(FIXTURE)
    assert log.format == "combined" and not log.bad and log.lines == len(log.entries) > 1000
    assert {e.status for e in log.entries} >= {200, 404}
    assert {e.method for e in log.entries} == {"GET", "HEAD"}


def test_mix_prints_a_table_to_paste(tmp_path):
    gone = NGINX.replace("/info.php", "/gone").replace(" 200 ", " 404 ")
    p = _write(tmp_path, [NGINX, NGINX, APACHE.replace("-0700", "+0000"), COMMON.replace('" 304 -', '" 304 - "-" "-"'),
                          gone])
    out = CliRunner().invoke(cli, ["mix", str(p), "--top", "2"])
    assert out.exit_code == 0, out.output
    head, table, first, second = out.output.splitlines()
    assert head == (f"# loadcmp mix {p}: the top 2 of 3 pages, 3 of the 4 answered GET/HEAD requests (75.0 %); "
                    "combined log, 5 lines; 1 the log says failed (>= 400) left out: a mix's pages must answer")
    assert table == "[mix]"
    assert first.split("#")[0].split() == ['"/info.php"', "=", "2"] and first.endswith("# 50.0 %")
    assert second.startswith('"/a%20b?x=1"') or second.startswith('"/apache_pb.gif"')
    import tomllib

    assert tomllib.loads(out.output)["mix"]["/info.php"] == 2  # pastes into an experiment file as it is


@pytest.mark.parametrize("args, message", [
    (["--top", "0"], "bad --top 0"),
    (["--methods", "GET,H3AD"], "bad --methods"),
])
def test_mix_bad_input_is_one_line(tmp_path, args, message):
    out = CliRunner().invoke(cli, ["mix", str(_write(tmp_path, [NGINX])), *args])
    assert out.exit_code == 2 and message in out.output and len(out.output.strip().splitlines()) == 1


def test_mix_says_its_own_words_and_flag(tmp_path):
    posts = _write(tmp_path, [NGINX.replace("GET", "POST")] * 3)
    out = CliRunner().invoke(cli, ["mix", str(posts)])
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1, out.output
    assert (f"{posts}: nothing to make a mix of: all 3 requests are left out (3 method); --methods allows more "
            "methods") in out.output and "replay" not in out.output
    empty = CliRunner().invoke(cli, ["mix", str(_write(tmp_path, [], "empty.log"))])
    assert empty.exit_code == 2 and "the access log is empty: nothing to make a mix of" in empty.output
    bad = CliRunner().invoke(cli, ["mix", str(posts), "--methods", "GET,PSOT"])
    assert bad.exit_code == 2 and "bad --methods 'GET,PSOT': PSOT is not an HTTP method" in bad.output


def test_mix_says_the_unreadable_lines_it_left_out(tmp_path):
    p = _write(tmp_path, [*[NGINX] * 150, NGINX[:40], *[NGINX] * 50])
    out = CliRunner().invoke(cli, ["mix", str(p)])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].endswith("combined log, 201 lines; 1 unreadable line left out")


def test_a_garbage_logs_bytes_are_never_printed(tmp_path):
    junk = b"\x1b]0;owned\x07\x1b[2J\x00\x16\x03\x01" + bytes(c for c in range(1, 32) if c not in (10, 13)) * 20
    p = tmp_path / "access.log"
    p.write_bytes(junk + b"\n")
    first = CliRunner().invoke(cli, ["mix", str(p)])
    many = tmp_path / "many.log"
    many.write_bytes((NGINX + "\n").encode() * 20 + (NGINX[:30].encode() + junk + b"\n") * 5)
    with pytest.raises(UsageError) as e:
        read_log(many)
    for said in (first.output, str(e.value)):
        assert "\\x1b]0;owned\\x07" in said and not any(ord(c) < 32 and c != "\n" for c in said), said
    assert first.exit_code == 2 and len(first.output.strip().splitlines()) == 1
    assert first.output.rstrip().endswith("...") and len(first.output.split(": ")[-1]) <= 81
