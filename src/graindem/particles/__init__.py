"""graindem.particles: grain shape templates (level-set grains for LS-DEM)."""

from .levelset import LevelSetGrain

__all__ = ["LevelSetGrain"]
