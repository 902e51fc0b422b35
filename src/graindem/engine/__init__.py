"""graindem.engine"""
