"""Helpers every body kind and every pass shares: rotations, the trilinear grid, the periodic cell."""
