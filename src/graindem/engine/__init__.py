"""graindem.engine: the sphere DEM engine.

    from graindem.engine import Simulation
    sim = Simulation(law="jaeger", E=66.7e9, nu=0.15, mu=0.5, density=2650.0, local_damping=0.1)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(positions, radii)
    sim.control_axis(2, strain_rate=-1.0)            # or stress=..., gain=..., max_rate=...
    sim.run(1000, callback=f, every=100)
    sim.measure()                                     # stress, strains, void ratio, contacts, energies ...

Modules: `simulation` (the Simulation class and its checks), the numba kernels by job: `neighbours`
(Verlet list with skin), `pair_pass` (sphere-sphere forces), `integration` (kick, drift, rotation),
`history` (upkeep of the history store), `loop` (the time loop); `prepare` (dense packings by
isotropic compression), `damping` (restitution -> viscous coefficient), `checkpoint` (HDF5
save/load), `cli` (`graindem run`). Shared pieces: `graindem.core` (array layouts, cell geometry,
rotations, trilinear grid), `graindem.boundaries` (walls, servo), `graindem.contact.rows` (one
contact row's parameters, frame and law step). docs/architecture.md describes the design.
"""

from .simulation import Diverged, Simulation

__all__ = ["Simulation", "Diverged"]
