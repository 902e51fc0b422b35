"""graindem: discrete element simulation of granular matter, faithful to contact mechanics."""

__version__ = "0.1.0"
