"""graindem.deform"""
