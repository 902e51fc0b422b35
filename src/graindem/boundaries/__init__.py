"""Boundaries every body kind meets: plane walls and the deforming periodic cell's servo."""
