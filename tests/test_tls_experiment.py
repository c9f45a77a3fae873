"""configs/experiments/tls.toml: it parses and validates with the TLS keys (`tls`, `tls_resume`, a variant's
`tls.*` settings), runs the seven stacks four ways each (Caddy two: it cannot turn its tickets off), and
its findings name TLS metrics judged with intervals (3 trials)."""

from __future__ import annotations

from loadcmp.experiment.spec import RunSpec, load_experiment, validate
from loadcmp.lab.stacks import configs_dir
from loadcmp.verdicts.findings import parse_findings

SEVEN = {"nginx", "apache-event", "apache-worker", "apache-prefork", "nginx-apache", "caddy", "lighttpd"}


def test_the_tls_experiment_is_valid():
    fields, _ = load_experiment(configs_dir() / "experiments" / "tls.toml")
    spec = validate(RunSpec(**fields))
    assert spec.tls is True and spec.tls_resume == 1.0  # type: ignore[attr-defined]
    assert spec.trials >= 3 and spec.keepalive == (False,)
    assert set(spec.stacks.values()) == SEVEN and len(spec.servers) == 4 * len(SEVEN) - 2
    for s in SEVEN:
        assert spec.settings_for(f"{s}-rsa")["tls.key"] == "rsa-2048" and "tls.key" not in spec.settings_for(s)
        if s == "caddy":  # Go's tickets cannot be turned off: no server-side full handshakes
            assert f"{s}-full" not in spec.servers and f"{s}-rsa-full" not in spec.servers
            continue
        full = spec.settings_for(f"{s}-rsa-full")
        assert full["tls.key"] == "rsa-2048" and full["tls.session_cache"] in ("off", False)
        assert full["tls.tickets"] in ("off", False) and "tls.key" not in spec.settings_for(f"{s}-full")
    findings = parse_findings(list(spec.findings))
    metrics = {f.check.left.metric for f in findings}
    assert {"handshakes", "resumed_share"} <= metrics
    assert {f.check.left.label for f in findings if f.check.left.metric == "resumed_share"} == SEVEN
