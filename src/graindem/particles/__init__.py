"""graindem.particles"""
