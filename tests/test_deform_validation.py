"""Reduced versions of the seed's validations (the full ones: benchmarks/deformable_validation.py).

References: the bending mode's generalized stiffness (Table 1: F = K_g δ at the indenter, since the
mode is normalized to the mid-span deflection and the supports sit where the mode vanishes); the seed's
Appendix B table (one-wall reaction vs ε = δ/R); the energy argument of Appendix C (eq. 59) for a
cubic packing, here with 2×2×2 spheres: F_w(u_w) = 4 F_int(u_w/2).
"""

import numpy as np
import pytest

from graindem.deform.scenes import compaction_sphere
from graindem.deform.validation import (assembly27, relative_error, single_sphere_compaction,
                                        three_point_bending)


@pytest.fixture(scope="module")
def sphere_template():
    return compaction_sphere(n_nodes=400)


def test_three_point_bending_slope():
    r = three_point_bending(rate=0.02, n_records=100)
    # contact compliance (penalty 1e6 per unit area) and the viscous lag c·δ̇/k = 0.04 shift the curve
    # by < 1 %; the slope of F^ against d^ must be 1 within the 2 %
    assert r["slope"] == pytest.approx(1.0, abs=0.02)
    assert r["secant_slope"] == pytest.approx(1.0, abs=0.02)
    # modal balance at the end: K ε = F (the indenter carries the whole generalized force)
    assert r["force"][-1] == pytest.approx(r["K_g"] * r["eps"][-1], rel=0.01)


def test_single_sphere_compaction_follows_table(sphere_template):
    r = single_sphere_compaction(rate=0.0004, template=sphere_template, n_records=60)
    err = relative_error(r["force"], r["reference"])
    # without the FEM mode the analytic stand-in does not flatten exactly: contact nodes off the pole
    # have Φ·n < R, so each wall carries more than U'/(6R); with 400 nodes (spacing ~1.8 voxels) the
    # measured excess is ~4 % at small ε, 2 % at the end. 5 % bounds that; the end point must be tight.
    assert err.max() < 0.05
    assert err[-1] < 0.025
    # quasi-static rigid equilibrium: opposite walls push equally (the six walls need not: the surface
    # nodes are not symmetric under the cube's rotations, so the sphere shifts until the pairs balance)
    late = r["force"] > 0.2 * r["force"].max()
    for a in range(3):
        diff = np.abs(r["per_wall"][late, 2 * a] - r["per_wall"][late, 2 * a + 1]) / r["force"][late]
        assert diff.max() < 0.02


def test_cubic_packing_energy_relation(sphere_template):
    r = assembly27(rate=0.0016, template=sphere_template, n_side=2, n_records=60)
    err = relative_error(r["F_w"], r["reference"], floor_fraction=0.2)
    assert np.median(err) < 0.05
    # every sphere is compacted by about u_w/(2R) (eq. 70 for two spheres per row)
    assert np.allclose(r["eps"][-1], r["u_w"][-1] / 20.0, rtol=0.08)
