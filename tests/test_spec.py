"""Experiment files and run specs (loadcmp.experiment.spec)."""

from __future__ import annotations

import pytest

from loadcmp.errors import ConfigError
from loadcmp.experiment.spec import RunSpec, load_experiment, validate


def test_experiment_errors_listed_at_once_with_lines(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\nservers = ["nginx", "iis"]\nclients = "many"\ntime = "30s"\ncolor = "red"\n'
                 '[set]\n"prefork.Bogus" = 3\n')
    with pytest.raises(ConfigError) as e:
        load_experiment(f)
    errs = e.value.messages
    assert len(errs) == 4, errs
    joined = "\n".join(errs)
    assert "bad.toml:5" in joined and "color" in joined
    assert "bad.toml:3" in joined and "bad.toml:2" in joined and "iis" in joined
    assert "bad.toml:6" in joined and "prefork.Bogus" in joined


def test_shipped_experiments_are_valid():
    from loadcmp.lab.stacks import configs_dir

    files = sorted((configs_dir() / "experiments").glob("*.toml"))
    assert {f.stem for f in files} >= {"paper-2013", "pphc-2022", "static", "smoke"}
    for f in files:
        fields, _ = load_experiment(f)
        validate(RunSpec.of(fields))


@pytest.mark.parametrize("line, word", [
    ("rate = nan", "rate"),
    ("rate = 0", "rate"),
    ('rate = "fast"', "rate"),
    ('time = "0s"', "positive"),
    ("timeout = 0", "positive"),
    ('pace = "0ms"', "positive"),
    ('server_memory = "1m"', "6 MiB"),
    ('server_memory = "100000g"', "more than this machine"),
])
def test_experiment_files_refuse_what_the_flags_refuse(tmp_path, line, word, monkeypatch):
    """Refused when read, or when validated: the memory a cap may not exceed is that of the
    engine's machine, which only the whole spec names (this one's here)."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    f = tmp_path / "x.toml"
    f.write_text(f'servers = ["nginx"]\n{line}\n')
    with pytest.raises(ConfigError) as e:
        validate(RunSpec(**load_experiment(f)[0]))
    assert word in "\n".join(e.value.messages)


def test_experiment_file_takes_a_rate_with_unit(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('servers = ["nginx"]\nschedule = "rate"\nrate = "500/s"\nwarmup = 0\n')
    fields, _ = load_experiment(f)
    assert fields["rate"] == 500.0 and fields["warmup"] == 0.0
