"""The error hierarchy: exit codes, Interrupted's results folder, and a docstring drawing that stays true."""

from __future__ import annotations

import inspect
from pathlib import Path

from loadcmp import errors


def test_exit_codes():
    assert errors.LoadcmpError.exit_code == 1
    assert errors.UsageError.exit_code == errors.ConfigError.exit_code == 2
    assert errors.ThresholdFailed.exit_code == 3
    assert errors.Interrupted.exit_code == 130
    assert issubclass(errors.Interrupted, errors.LoadcmpError)


def test_interrupted_carries_the_results_folder():
    assert errors.Interrupted().results is None and str(errors.Interrupted()) == "interrupted"
    e = errors.Interrupted(results=Path("results/run-1"))
    assert e.results == Path("results/run-1") and "results/run-1" in str(e) and "\n" not in str(e)


def test_the_drawing_names_every_error_under_its_parent():
    drawing = (errors.__doc__ or "").splitlines()
    classes = {n: c for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, errors.LoadcmpError)}
    depth = {}
    for line in drawing:
        words = line.replace("├──", " ").replace("└──", " ").replace("│", " ").split()
        if words and words[0] in classes:
            depth[words[0]] = len(line) - len(line.lstrip(" │├└─"))  # indentation = place in the tree
    assert set(depth) == set(classes), set(classes) ^ set(depth)
    for name, cls in classes.items():
        parent = cls.__mro__[1].__name__
        if parent != "Exception":
            assert depth[name] > depth[parent], name
