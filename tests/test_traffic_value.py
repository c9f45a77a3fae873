"""A run's traffic as one value (`traffic.source`), what goes with what decided once (`traffic.fits`), run.json's
flat keys written and read back (old results folders too), and the house holding traffic sources named in
tests to a few modules outside `loadcmp/traffic/`."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from loadcmp import protocols
from loadcmp.experiment.flags import build_spec
from loadcmp.experiment.spec import RunSpec
from loadcmp.experiment.tune import spec_from_doc
from loadcmp.traffic.fits import Beside, problems, traffic_of
from loadcmp.traffic.source import DEFAULTS, JourneyTraffic, MixTraffic, OnePage, ReplayTraffic

PKG = Path(__file__).resolve().parent.parent / "loadcmp"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# --- the value and run.json -----------------------------------------------------------------------------------


@pytest.mark.parametrize("traffic", [
    OnePage(),
    MixTraffic({"/a": 3.0, "/b": 1.0}, 7),
    ReplayTraffic("/tmp/access.log", "2x", ("GET", "POST"), "combined"),
    JourneyTraffic("reader=80,author=20", {"40": "reader=60,author=40"}, 5),
])
def test_run_json_keeps_the_flat_keys_and_reads_them_back(traffic):
    spec = RunSpec(traffic=traffic)
    doc = json.loads(json.dumps(spec.to_dict()))  # as run.json stores it
    assert "traffic" not in doc and set(DEFAULTS) <= set(doc)
    assert spec_from_doc(doc) == spec  # a study resumed from its run.json runs the same traffic
    assert traffic_of(doc) == (traffic, [])


@pytest.mark.parametrize("run", ["run-2x3x2", "run-2x2x3", "run-tls", "capacity-2x", "pphc-2022"])
def test_an_old_run_json_without_the_keys_reads_as_one_page(run):
    doc = json.loads((FIXTURES / run / "run.json").read_text())["spec"]
    assert not set(DEFAULTS) & set(doc)  # written before a run could have a mix
    assert traffic_of(doc) == (OnePage(), [])
    assert spec_from_doc(doc).traffic == OnePage()


def test_a_mix_keeps_its_seed_drawn_once():
    drawn = MixTraffic({"/a": 1.0}).drawn()
    assert isinstance(drawn, MixTraffic) and drawn.seed is not None and drawn.drawn() == drawn
    assert JourneyTraffic("reader").drawn() == JourneyTraffic("reader")  # the users' draw stays 0 unless given


# --- what goes with what ---------------------------------------------------------------------------------------


def test_every_clash_and_idle_flag_is_said_at_once():
    value, said = traffic_of({"mix": {"/a": 1.0}, "replay": "/x.log", "journey": "reader"})
    assert isinstance(value, MixTraffic)  # the first kept, so that its own problems are said too
    assert [m.split(":")[0] for m in said] == ["--replay and --mix", "--replay and --journey", "--journey and --mix"]
    _, said = traffic_of({"replay_speed": "2x", "replay_methods": ["GET", "HEAD"], "seed": 3,
                          "journey_levels": {"20": "reader"}})
    assert said == ["--replay-speed without --replay: it has nothing to act on (give --replay FILE, or drop "
                    "--replay-speed)",
                    "--seed without --mix or --journey: nothing is drawn with it (drop --seed)",
                    "[journeys.levels] gives the mix by level: give the mix at every level too ([journeys])"]


def test_journeys_fit_every_protocol(tmp_path):
    (tmp_path / "reader.toml").write_text('[[steps]]\npath = "/"\n')
    journeys = JourneyTraffic("reader")
    for proto in protocols.names():
        assert problems(journeys, Beside(protos=(proto,), shipped={"reader": tmp_path / "reader.toml"})) == []


def test_the_protocol_table_says_which_protocols_carry_a_source():
    """A made-up protocol whose row carries a mix (and not a replay): the mix runs over it, the replay is refused
    in the table's words, naming both carriers."""
    row = protocols.register(replace(protocols.H2C, name="hx", words="hx (a test's)", sources=("page", "mix")))
    try:
        assert problems(MixTraffic({"/a": 1.0}, 1), Beside(protos=("h1", "hx"))) == []
        assert problems(OnePage(), Beside(protos=("hx",))) == []
        said = problems(JourneyTraffic("reader", {"x": "reader"}), Beside(protos=("hx",), shipped={}))
        assert ("--journey runs over HTTP/1.1 (--proto h1) or h2 (HTTP/2 over TLS) (--proto h2) or h2c (cleartext "
                "HTTP/2) (--proto h2c) or h3 (HTTP/3) (--proto h3): the hx engine does not carry --journey; drop "
                "--proto hx or --journey") in said
        assert "[journeys.levels] 'x': a level is a number of clients, like 20" in said
        carriers = [p.name for p in protocols.carriers(MixTraffic.kind)]
        assert carriers == ["h1", "h2", "h2c", "h3", row.name]
    finally:
        protocols.unregister("hx")


def test_a_mix_from_the_flags_is_the_run_s_traffic_and_its_pages():
    spec = build_spec(None, {"servers": ("nginx",), "mix": {"/info.php": 3.0, "/index.html": 1.0}, "seed": 4})
    assert spec.traffic == MixTraffic({"/info.php": 3.0, "/index.html": 1.0}, 4) and spec.page == "/info.php"
    assert spec.traffic.primed(spec.page) == (("/info.php", "/index.html"), True)
    assert build_spec(None, {"servers": ("nginx",)}).traffic == OnePage()


# --- the house ------------------------------------------------------------------------------------------------

SOURCE = re.compile(r"^-*(mix|mixes|replay|replays|replayed|journey|journeys)(_\w+)?$|^(OnePage|MixTraffic|"
                    r"ReplayTraffic|JourneyTraffic)$")
"""A name (attribute, variable, key, flag or class) that names a traffic source."""
NAMING_MODULES = 6
"""Modules outside loadcmp/traffic/ that may test a traffic source by name (47 tests in 15 before the value; today
the stored results' sections: a load's journeys tally, the report's mix and journeys tables, a replay's figures)."""


def _names_a_source(node: ast.AST) -> bool:
    for n in ast.walk(node):
        name = (n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else
                n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None)
        if name is not None and SOURCE.match(name):
            return True
    return False


def _tests(tree: ast.AST):
    """Every test: of an if, elif, while, conditional expression or comprehension, and every comparison."""
    for n in ast.walk(tree):
        if isinstance(n, ast.If | ast.IfExp | ast.While):
            yield n.test
        elif isinstance(n, ast.comprehension):
            yield from n.ifs
        elif isinstance(n, ast.Compare):
            yield n
        elif isinstance(n, ast.match_case):
            yield n.pattern


def _found(tree: ast.AST) -> set[tuple[int, int]]:
    """Where the tests that name a traffic source are (one test reached twice, as an if's comparison, once)."""
    return {(t.lineno, t.col_offset) for t in _tests(tree) if _names_a_source(t)}


def source_tests() -> dict[str, int]:
    """Modules outside loadcmp/traffic/ and the tests in each that name a traffic source."""
    out: dict[str, int] = {}
    for f in sorted(PKG.rglob("*.py")):
        if f.parent != PKG / "traffic" and (found := _found(ast.parse(f.read_text()))):
            out[str(f.relative_to(PKG.parent))] = len(found)
    return out


def test_the_counter_sees_a_source_named_in_a_test():
    tree = ast.parse("if spec.mix:\n    pass\nx = 1 if 'replay' in r else 2\nok = isinstance(t, JourneyTraffic)\n"
                     "y = [p for p in pages if p.page]\nif isinstance(t, JourneyTraffic):\n    pass\n"
                     "z = [k for k in d if k == '--journey']\n")
    assert sorted(line for line, _ in _found(tree)) == [1, 3, 6, 8]  # not a bare isinstance, nor `p.page`


def test_traffic_sources_are_named_in_tests_in_few_modules():
    found = source_tests()
    assert len(found) <= NAMING_MODULES, f"traffic sources tested by name outside loadcmp/traffic/: {found}"
