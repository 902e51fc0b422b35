"""Spheres decomposed over MPI ranks (mpi4py): `mpirun -n N python script.py` runs the unchanged
Python API (Simulation, add_particles, set_box, run, measure, state_dict) with each rank stepping
the spheres of its own subdomain.

world: whether the process was started by an MPI launcher, and the buffer-based exchanges.
bisection: recursive coordinate bisection of the bodies into one box per rank.
row_transfer: contact rows and their load histories packed into flat arrays and laid out again.
subdomain: one rank's share of the run (owned spheres, ghosts, their pair rows), its time loop,
    the migration at neighbour rebuilds, and the gathering of the whole state back.

docs/parallel-mpi.md says what runs decomposed and what does not.
"""
