"""The quick form of benchmarks/impact_suite.py (Chung & Ooi tests 1-4, impacts driven by spin,
Maw et al.'s oblique impact for the four tangential laws, a rolling and a spinning sphere braked by
rolling/twisting resistance): every case's error against its independent reference within its
stated tolerance, and the JSON contract."""

import importlib.util
import json
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "benchmarks" / "impact_suite.py"


def _suite():
    spec = importlib.util.spec_from_file_location("impact_suite", SUITE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quick_impact_suite_within_tolerances(tmp_path):
    out = tmp_path / "impact.json"
    mod = _suite()
    status = mod.main(["--json", str(out), "--quick"])
    cases = json.loads(out.read_text())["cases"]
    expected = ["co1_two_spheres_glass_duration", "co1_two_spheres_limestone_peak_force",
                "co2_sphere_plane_aluminium_alloy_peak_overlap", "co2_sphere_plane_magnesium_alloy_duration",
                "co3_restitution_alumina", "co3_restitution_cast_iron",
                "co4_oblique_alumina_tangential_restitution", "co4_oblique_alumina_spin",
                "co4_oblique_aluminium_alloy_rebound_angle", "co4_oblique_alumina_gross_sliding",
                "spin_sphere_plane", "spin_two_spheres", "spin_counter_rotating",
                "maw_sphere_plane_linear", "maw_sphere_plane_mindlin", "maw_sphere_plane_md_incremental",
                "maw_sphere_plane_jaeger", "maw_jaeger_dt_convergence",
                *(f"{kind}_decay_{law}" for kind in ("rolling", "twisting")
                  for law in ("linear", "mindlin", "md_incremental", "jaeger"))]
    for name in expected:
        assert name in cases, name
    for name, c in cases.items():
        assert set(c) >= {"error", "tolerance", "reference"}, name
        assert c["error"] <= c["tolerance"], (name, c["error"], c["tolerance"])
    assert status == 0
