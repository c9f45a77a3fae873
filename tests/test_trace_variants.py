"""`trace` and `trace_sample` in `[variants.LABEL]` (docs/tracing.md#sampling): one label traced and another not, or
at its own share, in one run; bad values said with their line; a traced label's stack writes its trace logs, an
untraced one's does not; a user's config is asked for the trace log only where its label is traced."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from loadcmp.errors import ConfigError
from loadcmp.experiment.spec import RunSpec, load_experiment, validate
from loadcmp.experiment.tracing import traced
from loadcmp.experiment.variants import trace_config_errors
from loadcmp.lab import ownconfig, render
from loadcmp.sweep.tracing import trace_override

FILE = """\
trace = true
trace_sample = 0.5

[variants.plain]
stack = "nginx"
trace = false

[variants.sampled]
stack = "nginx"
trace_sample = 0.1

[variants.run]
stack = "caddy"

[variants.whole]
stack = "lighttpd"
trace = true
trace_sample = 1
"""


def spec_of(tmp_path: Path, text: str = FILE) -> RunSpec:
    f = tmp_path / "exp.toml"
    f.write_text(text)
    return validate(RunSpec(**load_experiment(f)[0]))


def test_each_label_traces_its_own_share(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, FILE.replace("[variants.run]", "[variants.run]"))
    shares = {label: spec.trace_share_for(label) for label in spec.servers}
    assert shares == {"plain": 0.0, "sampled": 0.1, "run": 0.5, "whole": 1.0}
    assert trace_override(spec, "plain") == {} and trace_override(spec, "sampled") == {render.TRACE: True}
    assert not traced(spec, "plain") and traced(spec, "run")
    kept = RunSpec.of(dict(spec.to_dict()))  # run.json's spec read back (tune --resume, a report)
    assert kept.variant_trace == {"plain": {"trace": False}, "sampled": {"trace_sample": 0.1},
                                  "whole": {"trace": True, "trace_sample": 1.0}}
    assert kept.trace_share_for("sampled") == 0.1 and kept.trace_share_for("plain") == 0.0


def test_a_variant_traces_in_a_run_that_does_not(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, FILE.replace("trace = true\ntrace_sample = 0.5\n", ""))
    assert {label: spec.trace_share_for(label) for label in spec.servers} == {
        "plain": 0.0, "sampled": 0.1, "run": 0.0, "whole": 1.0}
    assert spec.trace is False and traced(spec, "sampled") and not traced(spec, "run")


@pytest.mark.parametrize(("line", "said"), [
    ('trace = "yes"', "[variants.bad].trace must be true or false"),
    ("trace_sample = 2", "[variants.bad].trace_sample: expected a share of the requests, above 0 and at most 1"),
    ("trace_sample = 0", "[variants.bad].trace_sample: expected a share of the requests"),
    ("trace_sample = true", "[variants.bad].trace_sample: expected a share of the requests"),
])
def test_a_bad_value_is_said_at_its_table(tmp_path: Path, line: str, said: str) -> None:
    f = tmp_path / "exp.toml"
    f.write_text(f'servers = ["bad"]\n\n[variants.bad]\nstack = "nginx"\n{line}\n')
    with pytest.raises(ConfigError) as e:
        load_experiment(f)
    assert f"exp.toml:3: {said}" in str(e.value), str(e.value)


def test_only_a_traced_labels_own_config_must_write_the_trace_log(tmp_path: Path) -> None:
    (tmp_path / "plain.conf").write_text("events {}\nhttp { access_log off; server { listen 8080; } }\n")
    base = spec_of(tmp_path)
    for label, refused in (("plain", False), ("sampled", True)):
        own = ownconfig.OwnConfig(label, "web", str(tmp_path / "plain.conf"))
        said = trace_config_errors(replace(base, configs=(own.doc(),)))
        assert bool(said) == refused, (label, said)
        assert all(f"({label}:web)" in x for x in said)
