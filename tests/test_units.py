"""The one grammar of durations, sizes, rates, percentages, levels and CPU sets (loadcmp.units)."""

from __future__ import annotations

import pytest

from loadcmp.errors import UsageError
from loadcmp import units
from loadcmp.units import parse_duration, parse_levels, parse_size


@pytest.mark.parametrize("text, secs", [("30", 30), ("30s", 30), ("2m", 120), ("500ms", 0.5), ("1h", 3600), (5, 5)])
def test_durations(text, secs):
    assert parse_duration(text) == secs


@pytest.mark.parametrize("bad", ["-1", "abc", "3x", ""])
def test_bad_durations(bad):
    with pytest.raises(UsageError):
        parse_duration(bad)


def test_sizes_and_levels():
    assert parse_size("3g") == 3 * 2**30
    assert parse_size("512m") == 512 * 2**20
    assert parse_size("256MiB") == 256 * 2**20
    assert parse_levels("50,100, 500") == [50, 100, 500]
    with pytest.raises(UsageError):
        parse_size("lots")
    with pytest.raises(UsageError):
        parse_levels("0")


# --- the one grammar (issue 14 item 7) ------------------------------------------------------


@pytest.mark.parametrize("text, secs", [("250us", 250e-6), ("1.5s", 1.5), ("2 m", 120), ("0.5h", 1800), ("10MS", 0.01),
                                        (".5s", 0.5), (1.5, 1.5)])
def test_every_duration_unit_everywhere(text, secs):
    assert parse_duration(text) == pytest.approx(secs)


@pytest.mark.parametrize("bad", ["2d", "1e3", "5 ms s", float("nan"), float("inf"), True])
def test_more_bad_durations(bad):
    with pytest.raises(UsageError) as e:
        parse_duration(bad, "--warmup")
    assert "--warmup" in str(e.value) and "\n" not in str(e.value)


def test_zero_duration_refused_where_it_must_be_positive():
    assert parse_duration("0s") == 0
    with pytest.raises(UsageError, match="positive"):
        parse_duration("0", "-t/--time", allow_zero=False)


@pytest.mark.parametrize(
    "text, size",
    [
        ("256MB", 256_000_000), ("256mb", 256_000_000), ("1KB", 1000), ("2GB", 2 * 10**9), ("1TB", 10**12),
        ("256MiB", 256 * 2**20), ("256m", 256 * 2**20), ("256M", 256 * 2**20), ("1k", 1024), ("1KiB", 1024),
        ("1.5g", int(1.5 * 2**30)), ("3GiB", 3 * 2**30), ("100", 100), ("100b", 100), ("100 B", 100), (4096, 4096),
    ],
)
def test_sizes_kb_is_1000_kib_and_docker_letters_are_1024(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("bad", ["lots", "12 parsecs", "-5m", "5mm", "", True, -1])
def test_bad_sizes(bad):
    with pytest.raises(UsageError, match="size"):
        parse_size(bad)


@pytest.mark.parametrize("text, rate", [("1000", 1000.0), ("2.5e3", 2500.0), ("1000/s", 1000.0), (7, 7.0), (0.5, 0.5)])
def test_rates(text, rate):
    assert units.parse_rate(text) == rate


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", float("nan"), float("inf"), "0", 0, "-3", "fast", "", True])
def test_bad_rates_are_one_line(bad):
    with pytest.raises(UsageError) as e:
        units.parse_rate(bad, "--rate")
    assert str(e.value).startswith("bad --rate") and "\n" not in str(e.value)


def test_percent():
    assert units.parse_percent("20%") == pytest.approx(0.2)
    assert units.parse_percent(" 2.5 ") == pytest.approx(0.025)
    with pytest.raises(UsageError):
        units.parse_percent("twenty")


def test_cpu_sets():
    assert units.parse_cpus(None) is None
    assert units.parse_cpus(" 0 ") == "0"
    assert units.cpu_list("0,2-3") == [0, 2, 3]


@pytest.mark.parametrize("bad, needle", [("5-2", "backwards"), ("", "empty"), ("  ", "empty"), ("0,", "bad CPU set"),
                                         ("a-b", "bad CPU set"), ("99999", "this machine has")])
def test_bad_cpu_sets_are_one_line_usage_errors(bad, needle):
    with pytest.raises(UsageError) as e:
        units.parse_cpus(bad)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_checks_and_flags_agree_on_units():
    """`mem_peak<256MB` and `--server-memory 256MB` are the same number of bytes; checks take every duration unit."""
    from loadcmp.verdicts.smoke import parse_check

    assert parse_check("mem_peak<256MB").value == parse_size("256MB") == 256_000_000
    assert parse_check("mem_peak<256m").value == parse_size("256m") == 256 * 2**20
    assert parse_check("p(99)<250us").value == pytest.approx(parse_duration("250us") * 1000)
    assert parse_check("max<2m").value == pytest.approx(parse_duration("2m") * 1000)
    with pytest.raises(UsageError, match="unit"):
        parse_check("p(99)<500")  # a bare number is ambiguous for a time: a unit is required
    with pytest.raises(UsageError, match="not a unit"):
        parse_check("mem_peak<5ms")
