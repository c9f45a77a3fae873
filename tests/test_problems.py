"""One way to report many problems: `errors.Problems`, `raise_if_any`, an error's `messages`, and the CLI's list."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadcmp.cli.app import exit_code_of
from loadcmp.errors import ConfigError, LabError, LoadcmpError, Problems, UsageError, line_of

TOML = 'name = "x"\nservers = ["nginx"]\n\n[variants.tuned]\nstack = "nginx"\n\n[[roles]]\nname = "web"\n'


def test_a_problem_is_said_where_it_is():
    p = Problems()
    p.add("no such part", Path("/s/stack.toml"), 3)
    p.add("cannot read it", "/s/part.toml")
    p.add("no server given")
    assert p.messages == ["/s/stack.toml:3: no such part", "/s/part.toml: cannot read it", "no server given"]


def test_its_line_is_found_from_the_key_the_table_or_the_name():
    assert line_of(TOML, "servers") == 2
    assert line_of(TOML, "variants.tuned") == 4
    assert line_of(TOML, "web") == 8  # a role by its name
    assert line_of(TOML, "nowhere") is None
    p = Problems()
    p.at("x.toml", TOML, "tuned", "[variants.tuned]: bad")
    p.at("x.toml", TOML, "nowhere", "said without a line")
    p.at("x.toml", None, "servers", "no text: no line")
    assert p.messages == ["x.toml:4: [variants.tuned]: bad", "x.toml: said without a line", "x.toml: no text: no line"]


def test_nothing_found_raises_nothing():
    p = Problems()
    p.raise_if_any()
    assert not p and len(p) == 0 and list(p) == []


def test_one_problem_is_the_message_itself():
    p = Problems()
    p.add("unknown setting 'x'")
    with pytest.raises(ConfigError) as e:
        p.raise_if_any(summary="{n} bad settings")
    assert str(e.value) == "unknown setting 'x'" and e.value.messages == ["unknown setting 'x'"]


def test_several_are_summed_up_and_carried_all_in_order_each_once():
    p = Problems()
    for m in ("a is wrong", "b is wrong", "a is wrong", "c is wrong"):
        p.add(m)
    with pytest.raises(UsageError) as e:
        p.raise_if_any(UsageError, summary="{n} bad --stacks")
    assert type(e.value) is UsageError and e.value.exit_code == 2
    assert str(e.value) == "3 bad --stacks" and e.value.messages == ["a is wrong", "b is wrong", "c is wrong"]


def test_an_errors_problems_are_taken_with_a_prefix():
    p = Problems()
    p.take(ConfigError("2 problems", ["one", "two"]), "tuned: ")
    p.take(UsageError("plain"), "x.toml:3: ")
    assert p.messages == ["tuned: one", "tuned: two", "x.toml:3: plain"]


def test_attempt_gives_the_value_or_notes_the_usage_error_and_lets_others_through():
    p = Problems()
    assert p.attempt(lambda: 42) == 42

    def bad() -> int:
        raise ConfigError("2 problems", ["first", "second"])

    assert p.attempt(bad, "file: ") is None
    assert p.messages == ["file: first", "file: second"]

    def broken() -> int:
        raise LabError("docker went away")

    with pytest.raises(LabError):
        p.attempt(broken)


def test_an_error_without_a_list_has_its_own_message_as_its_one_problem():
    assert LoadcmpError("it failed").messages == ["it failed"]
    assert ConfigError("only").messages == ["only"]


def test_the_cli_lists_several_problems_and_says_one_in_a_line(capsys):
    assert exit_code_of(ConfigError("2 problems", ["x.toml:2: bad", "x.toml:5: worse"])) == 2
    assert capsys.readouterr().err.splitlines() == ["error: 2 problems:", "  - x.toml:2: bad", "  - x.toml:5: worse"]
    assert exit_code_of(LabError("the engine went away")) == 1
    assert capsys.readouterr().err.splitlines() == ["error: the engine went away"]
