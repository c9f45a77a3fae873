"""Experiment files and run specs (loadcmp.spec)."""

from __future__ import annotations

import pytest

from loadcmp.errors import ConfigError
from loadcmp.spec import RunSpec, load_experiment, validate


def test_experiment_errors_listed_at_once_with_lines(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\nservers = ["nginx", "iis"]\nclients = "many"\ntime = "30s"\ncolor = "red"\n'
                 '[set]\n"prefork.Bogus" = 3\n')
    with pytest.raises(ConfigError) as e:
        load_experiment(f)
    errs = e.value.errors
    assert len(errs) == 4, errs
    joined = "\n".join(errs)
    assert "bad.toml:5" in joined and "color" in joined
    assert "bad.toml:3" in joined and "bad.toml:2" in joined and "iis" in joined
    assert "bad.toml:6" in joined and "prefork.Bogus" in joined


def test_shipped_experiments_are_valid():
    from loadcmp.stacks import configs_dir

    files = sorted((configs_dir() / "experiments").glob("*.toml"))
    assert {f.stem for f in files} >= {"paper-2013", "pphc-2022", "static", "smoke"}
    for f in files:
        fields, _ = load_experiment(f)
        validate(RunSpec(**fields))
