"""`graindem modes extract` end to end on the cheap cantilever geometry."""

import numpy as np
import pytest

from graindem.cli import main
from graindem.fem import read_mode_file


def test_modes_extract_cantilever(tmp_path, capsys):
    cfg = tmp_path / "beam.toml"
    cfg.write_text('geometry = "cantilever"\nlength = 160.0\nwidth = 4.0\nheight = 4.0\nE = 1e4\n'
                   'elements_along = 20\nelements_across = 1\n')
    out = tmp_path / "beam.h5"
    assert main(["modes", "extract", str(cfg), "--out", str(out)]) == 0
    modes = read_mode_file(out)
    assert modes.mode_names == ["bending"] and modes.surface is not None
    assert (tmp_path / "beam_mode.png").stat().st_size > 0
    # Modal mass of the static cantilever shape w(ξ) = (3ξ² − ξ³)/2 (Euler–Bernoulli, tip = 1):
    # M = ρ A L ∫0^1 w² dξ = ρ A L · 33/140; the FEM mode includes small shear/Poisson parts (< 1 %).
    assert modes.mass[0, 0] == pytest.approx(160 * 16 * 33 / 140, rel=0.01)
    # The loaded end moves by 1 on average along −z: evaluate the mode at the end-face centre.
    tip = modes.evaluate(np.array([[80.0, 0.0, 0.0]]), modes=0)[0]
    assert tip[2] == pytest.approx(-1.0, rel=0.01)


def test_modes_extract_rejects_unknown_geometry(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('geometry = "torus"\n')
    assert main(["modes", "extract", str(cfg), "--out", str(tmp_path / "x.h5")]) == 2
    err = capsys.readouterr().err
    assert "geometry must be one of" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
