"""graindem.engine: the sphere DEM engine.

    from graindem.engine import Simulation
    sim = Simulation(law="jaeger", E=66.7e9, nu=0.15, mu=0.5, density=2650.0, local_damping=0.1)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(positions, radii)
    sim.control_axis(2, strain_rate=-1.0)            # or stress=..., gain=..., max_rate=...
    sim.run(1000, callback=f, every=100)
    sim.measure()                                     # stress, strains, void ratio, contacts, energies ...

Modules: `simulation` (the Simulation class and its checks), `kernels` (numba: neighbour list,
contact forces, walls, servo, integration, the time loop), `prepare` (dense packings by isotropic
compression), `damping` (restitution -> viscous coefficient), `checkpoint` (HDF5 save/load),
`cli` (`graindem run`). Contact frames live in `graindem.contact.frames`.
"""

from .simulation import Diverged, Simulation

__all__ = ["Simulation", "Diverged"]
