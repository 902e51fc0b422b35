"""Scenario keys that would otherwise fail in the middle of a run (or do nothing) are refused up
front, naming the key; any TOML a user can write is either a valid scenario or a ValueError."""

import math
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graindem.io import scenario as S


def _err(data):
    with pytest.raises(ValueError) as info:
        S.validate_scenario(data)
    return str(info.value)


def test_particles_n_too_small_for_the_periodic_cell():
    msg = _err({"particles": {"n": 7}})
    assert "particles.n = 7" in msg and "particles.n >=" in msg
    n_min = int(msg.rsplit(">=", 1)[1])
    # the bound is the closed form of the estimate, checked independently: at n_min the cell of
    # n spheres at solid fraction 0.64 shrunk by the total strain exceeds 2 (2 r_max + 0.2 r_max)
    s, strain = 0.2, 0.04
    side = lambda n: (n * 4 / 3 * math.pi * (1 + s * s) / 0.64) ** (1 / 3) * (1 - strain)  # noqa: E731
    assert side(n_min) > 4.4 * (1 + s) >= side(n_min - 1)
    S.validate_scenario({"particles": {"n": n_min}})
    _err({"particles": {"n": n_min - 1}})


def test_dt_fraction_above_one_refused_even_with_allow():
    assert "simulation.dt_fraction must be a number > 0 and <= 1" in _err(
        {"simulation": {"dt_fraction": 5.0, "allow_dt_above_critical": True}})
    assert "allow_dt_above_critical applies to an explicit simulation.dt" in _err(
        {"simulation": {"allow_dt_above_critical": True}})
    S.validate_scenario({"simulation": {"dt": 1e-7, "allow_dt_above_critical": True}})


def test_total_strain_of_one_refused():
    assert "loading.total_strain must be a number > 0 and < 1" in _err({"loading": {"total_strain": 1.0}})


def test_huge_n_refused_with_the_limit():
    msg = _err({"particles": {"n": 10**8}})
    assert "particles.n" in msg and f"<= {S.MAX_GENERATED_SPHERES}" in msg


def test_checkpoint_interval_must_be_a_multiple_of_the_output_interval():
    msg = _err({"simulation": {"output_interval": 100, "checkpoint_interval": 250}})
    assert "simulation.checkpoint_interval = 250 must be a multiple of simulation.output_interval = 100" in msg
    S.validate_scenario({"simulation": {"output_interval": 100, "checkpoint_interval": 300}})


@pytest.mark.parametrize("section,key,value", [
    ("boundary", "initial_solid_fraction", 0.4),
    ("boundary", "box", [0.01, 0.01, 0.01]),
    ("particles", "max_initial_overlap", 0.1),
    ("output", "csv", False),
])
def test_keys_the_biaxial_scenario_ignores_are_refused(section, key, value):
    config = S.validate_scenario({section: {key: value}})
    with pytest.raises(ValueError, match=f"{section}.{key} = .* has no effect in the biaxial scenario"):
        S.refuse_unused_keys(config)


def test_box_and_overlap_accepted_with_a_particle_file(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("0,0,0,1e-3\n")
    config = S.validate_scenario({"particles": {"file": str(f), "max_initial_overlap": 0.1},
                                  "boundary": {"box": [0.01, 0.01, 0.01]}})
    S.refuse_unused_keys(config)


_values = st.one_of(st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=8), st.lists(st.floats(-1e3, 1e3), max_size=4))
_known = [(sec, key) for sec, keys in S.SCHEMA.items() for key in keys]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_known + [("simulation", "stepz"), ("nosuch", "x")]), _values),
                max_size=6))
def test_fuzzed_scenarios_are_valid_or_refused_by_name(entries):
    data = {}
    for (section, key), value in entries:
        data.setdefault(section, {})[key] = value
    try:
        config = S.validate_scenario(data)
    except ValueError as exc:
        text = str(exc)
        names = [f"{sec}.{key}" for sec, table in data.items() for key in table] + list(data)
        assert any(name in text for name in names), text  # names the key (or the unknown section)
        return
    # a valid config survives the TOML round trip unchanged
    assert S.validate_scenario(tomllib.loads(S.scenario_to_toml(config))) == config


@pytest.mark.parametrize("text", ["\U00010000", "a\x7fb", "tab\tnewline\nquote\"backslash\\", "é"])
def test_strings_round_trip_through_toml(text):
    """Characters beyond the BMP and DEL (found by the fuzz above) are written as TOML accepts them."""
    config = S.validate_scenario({"particles": {"file": "/data/" + text}})
    assert S.validate_scenario(tomllib.loads(S.scenario_to_toml(config))) == config
