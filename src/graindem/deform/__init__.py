"""graindem.deform: deformable level-set grains with modal degrees of freedom (Henzel & Karapiperis).

- `modes`: analytic (`BeamBendingMode`, `AnalyticMode`) and numerical (`GridMode`) modes, generalized
  mass and stiffness integrated over the level set (eqs. 8 and 4).
- `response`: internal generalized forces, linear, tabulated (Appendix B) or a fitted energy (eqs. 56–58).
- `dynamics`: modal oscillator, damping, generalized forces and torques, critical time steps.
- `levelset_update`: the four strategies that keep a deformed level set current (§3.1).
- `validation`, `scenes`: the seed's two grains and three validations, run by `graindem.engine.Simulation`
  (deformable grains: `Simulation.add_deformable_grains`, kernels in `graindem.bodies.deformable`).
"""

from graindem.deform.dynamics import (ModalOscillator, damping_matrix, force_and_torque, generalized_forces,
                                      modal_critical_step, modal_frequencies, rigid_critical_step)
from graindem.deform.grid import GridField
from graindem.deform.modes import (AnalyticMode, BeamBendingMode, GridMode, Mode, generalized_mass,
                                   generalized_stiffness, tabulate_modes)
from graindem.deform.response import FittedEnergy, LinearResponse, TabulatedForce

__all__ = ["AnalyticMode", "BeamBendingMode", "FittedEnergy", "GridField", "GridMode", "LinearResponse",
           "ModalOscillator", "Mode", "TabulatedForce", "damping_matrix", "force_and_torque",
           "generalized_forces", "generalized_mass", "generalized_stiffness", "modal_critical_step",
           "modal_frequencies", "rigid_critical_step", "tabulate_modes"]
