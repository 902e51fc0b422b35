"""`graindem run` of a mixture's biaxial test (scenarios.mixed_biaxial): examples/mixed_biaxial.toml
with frequent rows -- the preparation under the one stress servo reaches the confining stress
(within the preparation's 2 % tolerance, measured by the Love-Weber stress of both kinds' contacts),
the test writes its outputs, and a restart continues bit for bit (N + M steps in one run = N, then
M after a restart in a new process: identical checkpoint arrays)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from graindem.cli import main
from graindem.engine import checkpoint
from graindem.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mixed_biaxial.toml"


def quick(tmp_path):
    """The example with rows every 100 steps and a VTK frame at step 300."""
    text = EXAMPLE.read_text().replace("output_interval = 500", "output_interval = 100").replace(
        "vtk_interval = 5000", "vtk_interval = 300")
    assert "output_interval = 100" in text and "vtk_interval = 300" in text
    path = tmp_path / "quick.toml"
    path.write_text(text)
    return path


def test_example_prepares_under_the_servo_runs_and_restarts_bit_for_bit(tmp_path):
    scenario = quick(tmp_path)
    straight, first, second = tmp_path / "straight", tmp_path / "first", tmp_path / "second"
    assert main(["run", str(scenario), "--out", str(straight), "--steps", "300", "--quiet"]) == 0
    # the prepared mixture: the one servo, on the stress of every contact, reached the confining stress
    sim, extra = checkpoint.load(straight / "packing.h5")
    assert extra["settled"], "the preparation must settle within grains.preparation_steps"
    m = sim.measure()
    assert abs(m["pressure"] / 100e3 - 1.0) < 0.02, m["pressure"]
    sim.run(1)  # the contact network is a reading of the last force evaluation, which a checkpoint does not hold
    m = sim.measure()
    assert m["n_sphere_grain_contacts"] > 20 and m["n_grain_contacts"] > 5, m
    summary = json.loads((straight / "summary.json").read_text())
    assert summary["n_particles"] == 124 and summary["kinds"] == {"sphere": 100, "levelset": 24}
    assert summary["steps"] == 300 and summary["steps_per_s"] > 0
    assert summary["peak_strain"] > 0.0, "the test must have compressed the cell"
    for name in ("series.csv", "checkpoint.h5", "grains.pvd", "contacts.pvd"):
        assert (straight / name).exists(), name
    assert len(list((straight / "vtk").glob("spheres_*.vtu"))) == 1
    assert len(list((straight / "vtk").glob("grains_*.vtu"))) == 1
    # N steps, then M after a restart in a new process (from these sources); the same packing
    first.mkdir()
    shutil.copy(straight / "packing.h5", first / "packing.h5")
    assert main(["run", str(scenario), "--out", str(first), "--steps", "200", "--quiet"]) == 0
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-m", "graindem.cli", "run", "--restart", str(first / "checkpoint.h5"), "--out",
                    str(second), "--steps", "100", "--quiet"], check=True, cwd=tmp_path, env=env)
    a, _ = load_checkpoint(straight / "checkpoint.h5")
    b, _ = load_checkpoint(second / "checkpoint.h5")
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
