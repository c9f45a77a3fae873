"""--trace-export: the joined requests reach an OTLP/gRPC receiver as spans (client -> server -> PHP), decoded here
with opentelemetry-proto's own types; a target that does not parse is one line."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from loadcmp.errors import UsageError
from loadcmp.trace import join, otlp

from test_trace_join import lines_of, requests_frame


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP trace receiver that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list = []

    def Export(self, request, context):  # the service's name for it
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                self.spans += list(ss.spans)
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def receiver():
    got = Receiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(got, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield got, port
    server.stop(0)


def test_each_request_arrives_as_client_server_and_php_spans(receiver, tmp_path: Path) -> None:
    got, port = receiver
    req = requests_frame("nginx", tmp_path).head(30)
    parts = join.join(req, lines_of("nginx"), (0, 1e12)).parts
    made, taken = otlp.export(parts, otlp.parse_target(f"otlp://127.0.0.1:{port}"))
    assert made == taken == 90 and len(got.spans) == 90
    by_trace: dict[str, list] = {}
    for s in got.spans:
        by_trace.setdefault(s.trace_id.hex(), []).append(s)
    assert set(by_trace) == set(parts["trace_id"])
    for tid, spans in by_trace.items():
        client = next(s for s in spans if s.kind == s.SPAN_KIND_CLIENT)
        server = next(s for s in spans if s.kind == s.SPAN_KIND_SERVER)
        php = next(s for s in spans if s.name == "fpm")
        own = tid[16:] if int(tid[16:], 16) else "8000000000000000"  # sequence 0: W3C forbids a zero parent id
        assert client.span_id.hex() == own and not client.parent_span_id  # the traceparent's parent id
        assert server.parent_span_id == client.span_id and php.parent_span_id == server.span_id
        assert client.start_time_unix_nano <= server.start_time_unix_nano <= php.start_time_unix_nano
        assert php.end_time_unix_nano <= server.end_time_unix_nano
        row = parts[parts["trace_id"] == tid].iloc[0]
        lat = (client.end_time_unix_nano - client.start_time_unix_nano) / 1e6
        assert lat == pytest.approx(float(row["latency_ms"]), abs=1e-3)
        php_ms = (php.end_time_unix_nano - php.start_time_unix_nano) / 1e6
        assert php_ms == pytest.approx(float(row["upstream_ms"]), abs=1e-3)


def test_a_request_whose_database_logged_it_has_a_database_span_and_no_time_lost(receiver, tmp_path: Path) -> None:
    got, port = receiver
    req = requests_frame("wordpress-nginx", tmp_path).head(20)
    parts = join.join(req, lines_of("wordpress-nginx"), (0, 1e12)).parts
    known = parts["database_ms"].notna()
    assert known.sum() >= 10
    made, taken = otlp.export(parts, otlp.parse_target(f"otlp://127.0.0.1:{port}"))
    assert made == taken == 3 * len(parts) + int(known.sum())
    by_id = {s.span_id: s for s in got.spans}
    dbs = [s for s in got.spans if s.name == "mariadb"]
    assert len(dbs) == known.sum()
    for db in dbs:
        php = by_id[db.parent_span_id]
        server = by_id[php.parent_span_id]
        assert php.name == "fpm" and server.kind == server.SPAN_KIND_SERVER
        assert php.start_time_unix_nano <= db.start_time_unix_nano <= db.end_time_unix_nano <= php.end_time_unix_nano
        row = parts[parts["trace_id"] == db.trace_id.hex()].iloc[0]
        attrs = {a.key: a.value for a in db.attributes}
        assert attrs["loadcmp.db.queries"].int_value == int(row["db_queries"]) >= 10
        # PHP's span holds its own time and the database's; the server's every server part
        php_ms = (php.end_time_unix_nano - php.start_time_unix_nano) / 1e6
        assert php_ms == pytest.approx(float(row["upstream_ms"] + row["database_ms"]), abs=1e-3)
        db_ms = (db.end_time_unix_nano - db.start_time_unix_nano) / 1e6
        assert db_ms == pytest.approx(float(row["database_ms"]), abs=1e-3)
        server_ms = (server.end_time_unix_nano - server.start_time_unix_nano) / 1e6
        want = sum(float(row[f"{p}_ms"]) for p in ("server", "upstream_wait", "upstream", "database"))
        assert server_ms == pytest.approx(want, abs=1e-3)


@pytest.mark.parametrize("url", ["http://127.0.0.1:4317", "otlp://127.0.0.1", "otlp://127.0.0.1:99999",
                                 "otlp://:4317", "otlp://a b:1"])
def test_a_target_that_does_not_parse_is_refused_in_one_line(url: str) -> None:
    with pytest.raises(UsageError) as e:
        otlp.parse_target(url)
    assert "\n" not in str(e.value) and "otlp://HOST:PORT" in str(e.value)


def test_a_target_parses() -> None:
    assert otlp.parse_target("otlp://collector.local:4317").endpoint == "collector.local:4317"
    assert otlp.parse_target("otlp://[::1]:4317").port == 4317


def test_a_receiver_that_is_not_there_takes_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    parts = join.join(requests_frame("nginx", tmp_path).head(2), lines_of("nginx"), (0, 1e12)).parts
    assert otlp.export(parts, otlp.parse_target(f"otlp://127.0.0.1:{port}"), timeout=1.0) == (6, 0)


def test_an_export_with_no_label_traced_is_refused_before_anything_starts(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from loadcmp.cli import cli

    f = tmp_path / "exp.toml"
    f.write_text('[variants.plain]\nstack = "nginx"\ntrace = false\n\n[variants.other]\nstack = "caddy"\n')
    for args in (["--server", "nginx"], [str(f)], [str(f), "--server", "plain"]):
        res = CliRunner().invoke(cli, ["run", *args, "--trace-export", "otlp://127.0.0.1:4317", "-t", "1s"])
        assert res.exit_code == 2, res.output
        assert "--trace-export otlp://127.0.0.1:4317: no label of this run is traced; add --trace" in res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    f.write_text(f.read_text().replace('stack = "caddy"\n', 'stack = "caddy"\ntrace = true\n'))
    from loadcmp.cli.run import check_export_traces
    from loadcmp.experiment.flags import build_spec

    check_export_traces(build_spec(str(f), {}), "otlp://127.0.0.1:4317")  # one label traced: nothing refused
